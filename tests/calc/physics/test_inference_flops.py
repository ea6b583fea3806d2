"""Method "inference" is a forward pass: 2 FLOPs per parameter per token, not a training step's 6
(Kaplan et al. 2020, arXiv:2001.08361, §2.1 Table 1; calc_flops.flops_per_param_token).

An inference job's FLOPs, hours, device-hours, cost and energy are a third of the same full job's in
every door: calc (scalars and arrays), the command line (estimate and --scenarios), TRAIN_BUDGET
(the UDF and the Lite runtime), and the workbook's Budget sheet and a Scenarios column recalculated
by LibreOffice (one run). LoRA and QLoRA are a step through frozen weights (4: tests/calc/physics/test_lora_flops.py).
The utilization prior is fitted on training runs, and an inference job's basis says so. Functions
without a method stay training."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest

from tests.conftest import invoke
from tests.sheet_cases import named_value, recalculated_copies, set_named
from trainbudget import calc
from trainbudget.addin.functions import docs
from trainbudget.addin.functions.registry import BY_NAME
from trainbudget.addin.lite import runtime, spec as lite_spec
from trainbudget.addin.template import budget_sheet, deadline_block, ranges_block, scenarios
from trainbudget.addin.udf import udfs
from trainbudget.addin.verify import inputs as verify_inputs
from trainbudget.calc.physics import flops as calc_flops
from trainbudget.calc.planning import inverse

H100 = "H100 SXM, BF16 tensor core, dense"
KAPLAN_FORWARD, KAPLAN_TRAIN = 2.0, 6.0  # Kaplan et al. 2020, §2.1 Table 1: C_forward ≈ 2N, C ≈ 6N
THIRD = KAPLAN_FORWARD / KAPLAN_TRAIN
FIGURES = ("hours", "days", "device_hours", "cost_usd", "energy_kwh")


def _close(a, b, rel: float = 1e-12) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel)


def _job(**changes) -> calc.Job:
    base = {"params": 7e9, "tokens": 1e12, "device": H100, "devices": 64, "utilization": 0.4, "price": 2.5}
    return calc.job(**{**base, **changes})


# --- calc ----------------------------------------------------------------------------------------

def test_flops_per_param_token_by_method():
    assert calc_flops.flops_per_param_token("inference") == KAPLAN_FORWARD
    assert calc_flops.flops_per_param_token("full") == KAPLAN_TRAIN
    assert calc_flops.flops_per_param_token("Inference") == KAPLAN_FORWARD  # as calc.memory reads it
    assert set(calc_flops.FLOPS_PER_PARAM_TOKEN) == set(calc.METHODS)
    with pytest.raises(calc.TrainingBudgetError, match=r"method must be one of .*'forward'"):
        calc_flops.flops_per_param_token("forward")


@pytest.mark.parametrize("utilization", [0.4, "prior"])
def test_an_inference_job_is_a_third_of_the_full_job(utilization):
    full = calc.budget(_job(utilization=utilization))
    inference = calc.budget(_job(utilization=utilization, method="inference"))
    assert float(inference.flops) == KAPLAN_FORWARD * 7e9 * 1e12 and _close(inference.flops, float(full.flops) * THIRD)
    for name in FIGURES:
        a, b = getattr(inference, name), getattr(full, name)
        for x, y in zip(a if isinstance(a, calc.Span) else (a,), b if isinstance(b, calc.Span) else (b,),
                        strict=True):
            assert _close(x, y * THIRD), (name, x, y)
    assert inference.memory.total < full.memory.total  # and memory stays weights only (calc.memory)


def test_the_general_path_and_a_model_follow_the_method():
    # a method spelled otherwise leaves the scalar fast path; a preset model takes the general path
    assert float(calc.budget(_job(method="Inference")).hours) == float(calc.budget(_job(method="inference")).hours)
    full = calc.budget(calc.job(model="Llama 3.1 8B", tokens=1e12, device=H100, devices=8, utilization=0.4))
    inference = calc.budget(full.job.with_(method="inference"))
    assert _close(inference.flops, float(full.flops) * THIRD) and _close(inference.hours, float(full.hours) * THIRD)


def test_arrays_of_inference_jobs_equal_each_scalar():
    params = np.array([7e9, 70e9, 405e9])
    active = np.array([7e9, 12e9, 405e9])
    for utilization in (0.4, "prior"):
        b = calc.budget(_job(params=params, active_params=active, method="inference", utilization=utilization))
        for i in range(3):
            one = calc.budget(_job(params=float(params[i]), active_params=float(active[i]), method="inference",
                                   utilization=utilization))
            assert float(np.asarray(b.flops)[i]) == float(one.flops) == KAPLAN_FORWARD * active[i] * 1e12
            got, want = b.hours, one.hours
            if isinstance(got, calc.Span):
                got, want = got.expected, want.expected
            assert _close(np.asarray(got)[i], want), (utilization, i)


def test_an_inference_range_says_its_prior_is_fitted_on_training_runs():
    inference = calc.budget(_job(utilization="prior", method="inference"))
    full = calc.budget(_job(utilization="prior"))
    assert "fitted on training runs" in inference.utilization_basis
    assert "fitted on training runs" not in full.utilization_basis
    assert inference.utilization_basis.startswith(full.utilization_basis)
    assert calc.budget(_job(method="inference")).utilization_basis == "given"  # a given utilization: no prior


def test_deadline_and_money_questions_follow_the_method():
    job = _job(method="inference", devices=1)
    assert inverse.devices_for(job, 30.0) < inverse.devices_for(job.with_(method="full"), 30.0)
    tokens = inverse.tokens_for_budget(7e9, H100, 1e6, usd_per_device_hour=2.5, utilization=0.4, method="inference")
    train = inverse.tokens_for_budget(7e9, H100, 1e6, usd_per_device_hour=2.5, utilization=0.4)
    assert abs(tokens - 3 * train) <= 3  # whole tokens: three times as many, within the rounding


# --- the command line ----------------------------------------------------------------------------

def _estimate(method: str, *extra: str) -> dict:
    proc = invoke("estimate", "--params", "7e9", "--tokens", "1e12", "--device", H100, "--devices", "64",
                  "--price", "2.5", "--method", method, "--json", *extra, check=True)
    return json.loads(proc.stdout)["rows"][0]


@pytest.mark.parametrize("extra", [("--utilization", "0.4"), ("--range",)])
def test_cli_estimate_inference_is_a_third(extra):
    full, inference = _estimate("full", *extra), _estimate("inference", *extra)
    assert inference["flops"] == KAPLAN_FORWARD * 7e9 * 1e12
    keys = [k for k in full if k.split("_")[0] in ("hours", "days", "device", "cost", "energy")
            and isinstance(full[k], float)]
    assert len(keys) >= (5 if extra[0] == "--utilization" else 15), keys
    for k in keys:
        assert _close(inference[k], full[k] * THIRD), k
    want = calc.budget(_job(method="inference", utilization="prior" if extra == ("--range",) else 0.4))
    assert inference["utilization_basis"] == want.utilization_basis


def test_cli_csv_inference_is_a_third():
    rows = {}
    for method in ("full", "inference"):
        proc = invoke("estimate", "--params", "7e9", "--tokens", "1e12", "--device", H100, "--devices", "64",
                      "--price", "2.5", "--utilization", "0.4", "--method", method, "--csv", check=True)
        rows[method] = next(csv.DictReader(io.StringIO(proc.stdout)))
    assert float(rows["inference"]["flops"]) == KAPLAN_FORWARD * 7e9 * 1e12
    for k in ("hours", "days", "device_hours", "cost_usd", "energy_kwh"):
        assert _close(float(rows["inference"][k]), float(rows["full"][k]) * THIRD), k


def test_cli_text_says_forward_only_and_the_priors_basis():
    proc = invoke("estimate", "--params", "7e9", "--tokens", "1e12", "--device", H100, "--devices", "64",
                  "--method", "inference", "--range", check=True)
    assert "1T tokens, forward only: 14 ZFLOP" in proc.stdout
    assert "fitted on training runs" in proc.stdout
    head = proc.stdout.splitlines()[0]  # weights only: no gradients or optimizer state held
    assert "GiB) of weights per device before activations (ZeRO 0," in head and "optimizer" not in head
    full = invoke("estimate", "--params", "7e9", "--tokens", "1e12", "--device", H100, "--devices", "64",
                  "--range", check=True)
    assert "1T training tokens: 42 ZFLOP" in full.stdout and "fitted on training runs" not in full.stdout


def test_cli_scenarios_follow_the_method(tmp_path):
    path = tmp_path / "plans.csv"
    path.write_text("name,params,tokens,device,devices,utilization,price\n"
                    f'a,7B,1T,"{H100}",64,40%,2.5\nb,70B,1.4T,"{H100}",512,prior,2.5\n', "utf-8")
    rows = {}
    for method in ("full", "inference"):
        proc = invoke("estimate", "--scenarios", str(path), "--method", method, "--json", check=True)
        rows[method] = json.loads(proc.stdout)["rows"]
    for full, inference in zip(rows["full"], rows["inference"], strict=True):
        assert _close(inference["flops"], full["flops"] * THIRD)
        for k in ("hours", "cost_usd", "energy_kwh", "hours_expected", "cost_usd_high"):
            if isinstance(full.get(k), float):
                assert _close(inference[k], full[k] * THIRD), (full["name"], k)


# --- TRAIN_BUDGET: the UDF and the Lite runtime ----------------------------------------------------

LABELS = ("FLOPs", "Hours", "Days", "Device-hours", "Cost (USD)", "Energy (kWh)")


def test_train_budget_udf_inference_is_a_third():
    full = dict(udfs.TRAIN_BUDGET(7e9, 1e12, H100, 0.4, 64, 2.5, 1.0, "full"))
    inference = dict(udfs.TRAIN_BUDGET(7e9, 1e12, H100, 0.4, 64, 2.5, 1.0, "inference"))
    b = calc.budget(_job(method="inference", pue=1.0))
    for label in LABELS:
        assert _close(inference[label], full[label] * THIRD), label
    assert inference["Hours"] == float(b.hours) and inference["FLOPs"] == float(b.flops)


def test_train_budget_lite_inference_is_a_third():
    spec = lite_spec.build()
    fn = next(f for f in spec["functions"] if f["name"] == "TRAIN_BUDGET")
    args = {"params": 7e9, "tokens": 1e12, "device": H100, "utilization": 0.4, "devices": 64,
            "usd_per_device_hour": 2.5}
    full = dict(map(tuple, runtime.call(fn, {**args, "method": "full"}, spec)))
    inference = dict(map(tuple, runtime.call(fn, {**args, "method": "inference"}, spec)))
    for label in LABELS:
        assert _close(inference[label], full[label] * THIRD), label


# --- the registry's words --------------------------------------------------------------------------

def test_functions_without_a_method_say_training_and_fold_six():
    for name in ("TRAIN_HOURS", "TRAIN_GPU_HOURS", "TRAIN_COST", "TRAIN_ENERGY_KWH"):
        spec = BY_NAME[name]
        assert "6*params*tokens" in spec.summary, name
        assert "method" not in {a.name for a in spec.args}, name
        formula = spec.native_formula(spec.example_exprs)
        assert formula.startswith("6*7E9*") or "*6*7E9*" in formula, (name, formula)
    method = next(a for a in BY_NAME["TRAIN_BUDGET"].args if a.name == "method")
    assert "inference" in method.help and "(2)" in method.help
    assert "forward pass" in docs.function_reference()


# --- the workbook, recalculated by LibreOffice -----------------------------------------------------

FIRST_PLANS = {"B": "inference", "C": "inference", "D": "lora"}  # a "prior" plan, a 40% plan, LoRA


def _rows(ws) -> dict[str, object]:
    return {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, ws.max_row + 1)
            if isinstance(ws[f"A{r}"].value, str)}


@pytest.fixture(scope="module")
def books(soffice, built, tmp_path_factory):
    def budget_inference(wb) -> None:
        set_named(wb, "Method", "inference")

    def plans_inference(wb) -> None:
        for c, method in FIRST_PLANS.items():
            wb["Scenarios"][f"{c}{scenarios.ROW['method']}"] = method
    return recalculated_copies(built.path, tmp_path_factory.mktemp("inference"), [budget_inference, plans_inference])


def _sheet_job() -> dict:
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    v["method"] = "inference"
    return v


def test_budget_sheet_inference_equals_calc(books):
    ws = books[0]["Budget"]
    got, v, table = _rows(ws), _sheet_job(), calc.catalog()
    b = ranges_block.budget(v, table)
    full = ranges_block.budget({**v, "method": "full"}, table)
    assert named_value(books[0], "FLOPs_per_token") == KAPLAN_FORWARD
    cost = next(label for label in got if label.startswith(f"{budget_sheet.TYPED_COST} (") and label.endswith(")"))
    want = {"Training compute (FLOPs)": b.flops, "Wall-clock hours": b.hours, "Days": b.days,
            "Device-hours": b.device_hours, cost: b.cost_usd, "Energy (kWh)": b.energy_kwh}
    for label, value in want.items():
        assert _close(got[label], value, 1e-9), (label, got[label], value)
        assert _close(got[label], getattr(full, _attr(label)) * THIRD, 1e-9), label
    ranged = ranges_block.budget(v, table, utilization="prior")
    for case in ("low", "expected", "high"):
        assert _close(got[f"Hours, {case}"], getattr(ranged.hours, case), 1e-9), case
        assert _close(got[f"Energy, {case}"], getattr(ranged.energy_kwh, case), 1e-9), case
    assert str(named_value(books[0], "Prior_basis")).endswith(ranged.utilization_basis[-40:])
    assert "fitted on training runs" in str(named_value(books[0], "Prior_basis"))
    job, days = ranges_block.job(v, table), deadline_block.DAYS_DEFAULT
    assert got["Devices for the deadline"] == inverse.devices_for(job, days)
    three = inverse.devices_for(job.with_(utilization="prior"), days, case=None)
    assert [got[f"Devices for the deadline, {c}"] for c in ("low", "expected", "high")] == list(three)
    tokens = inverse.tokens_for_budget(v["params"], v["device"], deadline_block.USD_DEFAULT,
                                    usd_per_device_hour=v["usd_per_device_hour"], utilization=v["utilization"],
                                    devices=v["devices"], table=table, method="inference")
    assert got["Tokens for the budget"] == tokens
    # the comparison's row of the chosen device: the results' hours
    hours_col = budget_sheet.COMPARE_COLS[2]
    row = next(r for r in range(1, ws.max_row + 1) if ws[f"{budget_sheet.COMPARE_COLS[0]}{r}"].value == v["device"])
    assert _close(ws[f"{hours_col}{row}"].value, b.hours, 1e-9)


def _attr(label: str) -> str:
    return {"Training compute (FLOPs)": "flops", "Wall-clock hours": "hours", "Days": "days",
            "Device-hours": "device_hours", "Energy (kWh)": "energy_kwh"}.get(label, "cost_usd")


def test_scenarios_columns_follow_their_method(books):
    ws, table = books[1]["Scenarios"], calc.catalog()
    for k, (c, method) in enumerate(FIRST_PLANS.items()):
        _, params, active, tokens, device, devices, util, price, pue = scenarios.PLANS[k]
        b = calc.budget(calc.job(params=params, active_params=active, tokens=tokens, device=device, devices=devices,
                                 utilization=util, price=price, pue=pue, table=table, method=method))
        full = calc.budget(b.job.with_(method="full"))
        assert ws[f"{c}{scenarios.ROW['flops_per_token']}"].value == calc_flops.flops_per_param_token(method)
        for fig, key in (("hours", "hours"), ("device_hours", "device_hours"), ("usd", "cost_usd"),
                         ("kwh", "energy_kwh")):
            value, train = getattr(b, key), getattr(full, key)
            for case in ("low", "expected", "high"):
                cell = ws[f"{c}{scenarios.ROW[f'{fig}_{case}']}"].value
                if isinstance(value, calc.Span):
                    want, whole = getattr(value, case), getattr(train, case)
                elif case == "expected":
                    want, whole = value, train
                else:
                    assert cell in (None, ""), (c, fig, case)
                    continue
                assert _close(cell, want, 1e-9), (c, fig, case, cell, want)
                ratio = calc_flops.flops_per_param_token(method) / KAPLAN_TRAIN  # inference 1/3, LoRA 2/3
                assert _close(cell, whole * ratio, 1e-9), (c, fig, case)


def test_verify_refuses_a_plan_method_the_sheet_would_cost_as_training(built):
    import openpyxl

    wb = openpyxl.load_workbook(built.path)
    ws = wb["Scenarios"]
    ws[f"B{scenarios.ROW['method']}"] = "forward"
    ws[f"C{scenarios.ROW['method']}"] = "Inference"
    problems = verify_inputs.plans(wb)
    where = [p.where for p in problems]
    assert f"Scenarios!B{scenarios.ROW['method']}" in where
    assert f"Scenarios!C{scenarios.ROW['method']}" not in where
