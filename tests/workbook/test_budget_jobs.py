"""The Budget and Scenarios sheets recalculated by LibreOffice at 50 random jobs equal calc (1e-9).

Each job is one copy of the template with its Budget inputs set (device, ZeRO stage, method,
optimizer, price mode: typed / provider / the device row's / none, currency, layout) and ten random
plans on Scenarios; all 50 copies are recalculated in ONE LibreOffice run. Three jobs are fixed:
10.3B and 70.6B with ZeRO-3 on an H100 (devices needed 2 and 14: GiB capacity, no GB subtracted
from GiB), and a typed $9.99 beside a Devices-row price of $2.20 (one price on the whole page).
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import openpyxl
import pytest

from tests.sheet_cases import set_named
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.functions import native, pieces
from trainbudget.addin.template import budget_sheet, model_block, prices_sheet, ranges_block, scenarios
from trainbudget.calc.model import shapes as calc_models
from trainbudget.calc.money import prices
from trainbudget.calc.physics import flops as calc_flops
from trainbudget.calc.planning import scenarios as plans

N_JOBS = 50
H100 = "H100 SXM, BF16 tensor core, dense"
PRICE_COL = list(native.HEADERS).index("usd_per_device_hour") + 1
CURRENCIES = (("USD", 1.0), ("EUR", 0.94), ("JPY", 151.3), ("GBP", 0.79))
FIXED = (  # (overrides, why)
    ({"params": 10.3e9, "zero_stage": 3, "method": "full", "optimizer": "adamw", "activations": 0.0,
      "device": H100}, "10.3B ZeRO-3 on H100: 3 devices"),
    ({"params": 70.6e9, "zero_stage": 3, "method": "full", "optimizer": "adamw", "activations": 0.0,
      "device": H100}, "70.6B ZeRO-3 on H100: 14 devices"),
    ({"device": H100, "usd_per_device_hour": 9.99, "row_price": 2.20, "provider": "", "currency": ("USD", 1.0)},
     "typed 9.99 beside a row price of 2.20"),
    ({"params": 46.7e9, "active_params": 12.9e9, "tokens": 1e12, "device": H100, "devices": 64},
     "Mixtral 8x7B-like MoE: 46.7B total, 12.9B active"),
)
MOE_SHARE = 0.3  # of the random jobs, a mixture of experts (active 2-50% of the total)


def _job(rng: np.random.Generator, table: calc.DeviceTable) -> dict:
    names = table.names
    device = str(rng.choice(names))
    mode = str(rng.choice(["typed", "provider", "row", "none"]))
    tp, pp = int(rng.choice([1, 2, 4, 8])), int(rng.choice([1, 2, 4]))
    job = {"params": float(10 ** rng.uniform(8.5, 11.5)), "tokens": float(10 ** rng.uniform(9, 13)),
           "device": device, "utilization": float(rng.uniform(0.1, 0.9)),
           "devices": tp * pp * int(rng.integers(1, 65)), "pue": float(rng.uniform(1.0, 1.6)),
           "method": str(rng.choice(calc.METHODS)), "optimizer": str(rng.choice(calc.OPTIMIZERS)),
           "zero_stage": int(rng.integers(0, 4)), "trainable": float(rng.uniform(0.001, 0.05)),
           "activations": float(rng.choice([0.0, 10 ** rng.uniform(-1, 1.5)])),
           "active_params": None, "usd_per_device_hour": None, "provider": "", "plan": "on_demand", "row_price": None,
           "currency": CURRENCIES[int(rng.integers(len(CURRENCIES)))],
           "layout": (tp, pp, 1), "mode": mode}
    if rng.random() < MOE_SHARE:
        job["active_params"] = job["params"] * float(rng.uniform(0.02, 0.5))
    if mode == "typed":
        job["usd_per_device_hour"] = float(rng.uniform(0.5, 12))
    elif mode == "row":
        job["row_price"] = float(rng.uniform(0.5, 12))
    elif mode == "provider":
        rows = prices.find(device)
        provider = rows[int(rng.integers(len(rows)))].provider if rows and rng.random() < 0.8 else "aws"
        job["provider"], job["plan"] = provider, str(rng.choice(["on_demand", "1yr", "spot"]))
    return job


def _jobs(seed: int = 20261201) -> tuple[list[dict], list[list[tuple]]]:
    rng = np.random.default_rng(seed)
    table = calc.catalog()
    jobs = [_job(rng, table) for _ in range(N_JOBS)]
    for k, (overrides, _) in enumerate(FIXED):
        jobs[k].update(overrides)
    jobs[len(FIXED)]["clear_date"] = True  # the Budget's date cleared: price ages blank, never -46,335
    plan_sets = [[_plan(rng, table, k) for k in range(len(scenarios.COLUMNS))] for _ in range(N_JOBS)]
    return jobs, plan_sets


def _plan(rng: np.random.Generator, table: calc.DeviceTable, k: int) -> tuple:
    device = str(rng.choice(table.names))
    util = "prior" if rng.random() < 0.5 else float(rng.uniform(0.1, 0.9))
    rows = prices.find(device)
    pick = rng.random()
    if rows and pick < 0.5:
        row = rows[int(rng.integers(len(rows)))]
        price = f"{row.provider}:{rng.choice(sorted(row.usd))}"
    elif pick < 0.85:
        price = float(rng.uniform(0.5, 12))
    else:
        price = None  # no price: no cost
    return (f"plan {k + 1}", float(10 ** rng.uniform(8, 11.5)), None, float(10 ** rng.uniform(10, 13)), device,
            int(rng.integers(1, 2049)), util, price, float(rng.uniform(1.0, 1.5)))


def table_of(job: dict) -> calc.DeviceTable:
    """The catalog with the job's Devices-row price on its device, as the copy's Devices sheet holds."""
    rows = list(calc.catalog())
    if job["row_price"] is not None:
        rows = [dataclasses.replace(d, usd_per_device_hour=job["row_price"]) if d.name == job["device"] else d
                for d in rows]
    return calc.DeviceTable(rows)


def _write(template, path, job: dict, plan_rows: list[tuple]) -> None:
    wb = openpyxl.load_workbook(template, keep_vba=True)
    for name, key in budget_sheet.NAMES.items():
        set_named(wb, key, job[name])  # a blank typed price: None
    set_named(wb, "Provider", job["provider"] or None)
    set_named(wb, "Plan", job["plan"])
    set_named(wb, "Currency", job["currency"][0])
    set_named(wb, "USD_rate", job["currency"][1])
    for (name, *_), value in zip(model_block.LAYOUT_INPUTS, job["layout"], strict=True):
        set_named(wb, name, value)
    if job.get("clear_date"):
        set_named(wb, "Rate_date", None)
    if job["row_price"] is not None:
        devices = wb["Devices"]
        row = next(r for r in range(2, devices.max_row + 1) if devices.cell(r, 1).value == job["device"])
        devices.cell(row, PRICE_COL, job["row_price"])
    ws = wb["Scenarios"]
    for c, plan in zip(scenarios.COLUMNS, plan_rows, strict=True):
        for (name, *_), value in zip(scenarios.INPUTS, plan, strict=True):
            ws[f"{c}{scenarios.ROW[name]}"] = value
    wb.save(path)


@pytest.fixture(scope="module")
def recalculated(soffice, built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("jobs")
    jobs, plan_sets = _jobs()
    paths = []
    for i, (job, plan_rows) in enumerate(zip(jobs, plan_sets, strict=True)):
        paths.append(tmp / f"job{i:02d}.xlsm")
        _write(built.path, paths[-1], job, plan_rows)
    outs = engine.convert(paths, "xlsx", tmp / "out")  # one LibreOffice run for all 50
    return jobs, plan_sets, [openpyxl.load_workbook(p, data_only=True) for p in outs]


def _same(got, want) -> bool:
    if want is None:
        return got in (None, "", pieces.NO_PRICE)
    if isinstance(want, str):
        return got == want
    if isinstance(want, float) and math.isinf(want):
        return got == native.DOES_NOT_FIT
    return isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9)


def _try(f, *args, **kwargs):
    try:
        return float(f(*args, **kwargs))
    except calc.TrainingBudgetError:
        return "#N/A"  # a row without the figure (no watts: no energy)


def calc_job(job: dict, **changes) -> calc.Budget | None:
    """calc.budget of the job as the sheet holds it (None: the provider has no price for it)."""
    price = f"{job['provider']}:{job['plan']}" if job["provider"] else job["usd_per_device_hour"]
    j = calc.job(params=job["params"], active_params=job["active_params"], tokens=job["tokens"], device=job["device"],
                 devices=job["devices"],
                 method=job["method"], optimizer=job["optimizer"], zero_stage=job["zero_stage"],
                 trainable=job["trainable"], activations=job["activations"] * 1e9, utilization=job["utilization"],
                 price=price, pue=job["pue"], table=table_of(job)).with_(**changes)
    try:
        return calc.budget(j)
    except calc.TrainingBudgetError:
        return None


def refusal(job: dict) -> str | None:
    """calc's refusal of the job's price as the sheet words it (without the providers calc lists
    after it: tests/workbook/test_sheet_prices.py), or None where calc prices it."""
    try:
        calc_job(job) or calc.budget(calc.job(params=job["params"], tokens=job["tokens"], device=job["device"],
                                              price=f"{job['provider']}:{job['plan']}", table=table_of(job)))
    except calc.TrainingBudgetError as e:
        return "#VALUE! " + re.sub(r" \(providers with prices for it: [^)]*\)", "", str(e))
    return None


def expected_budget(job: dict) -> dict[str, object]:
    """calc's figures for the Budget's result rows, by label: calc.budget's, and the memory parts
    and devices needed from calc.memory / calc.schedule."""
    t = table_of(job)
    p, tok, dev = job["params"], job["tokens"], job["device"]
    mem = {"method": job["method"], "optimizer": job["optimizer"], "trainable": job["trainable"]}
    per = calc.train_memory(p, zero_stage=job["zero_stage"], devices=job["devices"],
                            activations=job["activations"] * 1e9, **mem)
    b = calc_job(job)
    no_price = b is None
    b = b or calc_job(job, price=0.0)
    assert math.isclose(b.memory.total, per.total, rel_tol=1e-12)  # memory on the total, MoE or not
    cur = job["currency"]

    def cost(x):
        return None if no_price or x is None else x * cur[1]

    want: dict[str, object] = {
        # a training step's 6·N·D, inference's forward pass 2·N·D (calc_flops.flops_per_param_token)
        "Training compute (FLOPs)": calc.train_flops(p, tok, active_params=job["active_params"]) * _step(job),
        "Active parameters used (blank: all)": job["active_params"] or p,
        "Model states, whole job": calc.train_bytes(p, **mem) / 1e9,
        **{f"{part.capitalize()} per device": getattr(per, part) / 1e9 for part in native.PARTS},
        "Total per device": per.total / 1e9,
        "Devices needed to fit": _try(calc.devices_needed, p, dev, zero_stage=job["zero_stage"],
                                      activations=job["activations"] * 1e9, table=t, **mem),
        "Wall-clock hours": b.hours, "Days": b.days, "Device-hours": b.device_hours,
        f"{budget_sheet.TYPED_COST} ({cur[0]})": cost(b.cost_usd),
        "Energy (kWh)": pieces.NO_WATTS if b.energy_kwh is None else b.energy_kwh,  # the command line's word
    }
    assert math.isclose(b.hours, calc.train_hours(p, tok, dev, utilization=job["utilization"], devices=job["devices"],
                                                  table=t, active_params=job["active_params"]) * _step(job),
                        rel_tol=1e-12)
    r = calc_job(job, utilization="prior", **({"price": 0.0} if no_price else {}))
    for j, case in enumerate(("low", "expected", "high")):
        want[f"Hours, {case}"] = r.hours.as_tuple()[j]
        want[f"Device-hours, {case}"] = r.device_hours.as_tuple()[j]
        spent = None if r.cost_usd is None else r.cost_usd.as_tuple()[j]
        want[f"{ranges_block.cost_label(case)} ({cur[0]})"] = cost(spent)
        want[f"Energy, {case}"] = pieces.NO_WATTS if r.energy_kwh is None else r.energy_kwh.as_tuple()[j]
    # the basis line, as the command line prints it (an inference job's: fitted on training runs)
    want["Basis: which runs the prior describes"] = r.utilization_basis.removeprefix("prior: ")
    want["Mixture of experts (1: yes)"] = float(
        job["active_params"] is not None and job["active_params"] < p)
    want.update(_layout(job))
    return want


def _step(job: dict) -> float:
    """The job's FLOPs per parameter-token over a training step's (calc.flops): 1, or 1/3 for inference."""
    return calc_flops.flops_per_param_token(job["method"]) / calc_flops.TRAIN_FLOPS_PER_PARAM_TOKEN


def _layout(job: dict) -> dict[str, float]:
    shape = dict(calc_models.model_preset(model_block.PRESET).shape)
    arch = calc_models.model_params(**{f: shape[f] for _, _, f, _ in model_block.ARCH_INPUTS},
                                    head_dim=shape["d_model"] // shape["n_heads"])
    tp, pp, ep = job["layout"]
    m = calc.train_memory(arch.total, devices=job["devices"], expert_params=arch.experts,
                          stage_params=shape["vocab"] * shape["d_model"], optimizer=job["optimizer"],
                          zero_stage=job["zero_stage"], activations=job["activations"] * 1e9,
                          tensor_parallel=tp, pipeline_parallel=pp, expert_parallel=ep)
    return {"Weights per device (GB)": m.weights / 1e9, "Gradients per device (GB)": m.gradients / 1e9,
            "Optimizer per device (GB)": m.optimizer / 1e9, "Master copy per device (GB)": m.master / 1e9,
            "Total per device on this layout (GB)": m.total / 1e9}


def _labels(ws) -> dict[str, object]:
    return {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value}


def test_budget_results_equal_calc_at_50_jobs(recalculated):
    jobs, _, books = recalculated
    checked, modes = 0, set()
    for i, (job, wb) in enumerate(zip(jobs, books, strict=True)):
        got = _labels(wb["Budget"])
        if calc_job(job) is None:  # calc refuses the provider's price for this device: so do the results
            said = refusal(job)
            typed = got[f"{budget_sheet.TYPED_COST} ({job['currency'][0]})"]
            assert said and got["Wall-clock hours"] == typed == said, (i, job)
            modes.add(job["mode"])
            continue
        for label, want in expected_budget(job).items():
            assert label in got, (i, label)
            assert _same(got[label], want), (i, job, label, got[label], want)
            checked += 1
        modes.add(job["mode"])
    assert modes == {"typed", "provider", "row", "none"}
    assert checked >= N_JOBS * 25
    assert sum(job["active_params"] is not None for job in jobs) >= 10  # MoE jobs among them


def test_every_device_row_equals_calc_and_the_results(recalculated):
    jobs, _, books = recalculated
    name_col, _, hours_col, _, cost_col, _, whose_col = budget_sheet.COMPARE_COLS
    for i, (job, wb) in enumerate(zip(jobs, books, strict=True)):
        ws, t = wb["Budget"], table_of(job)
        results = _labels(ws)[f"{budget_sheet.TYPED_COST} ({job['currency'][0]})"]
        rows = {ws[f"{name_col}{r}"].value: r for r in range(5, 200) if ws[f"{name_col}{r}"].value}
        if calc_job(job) is None:  # a refused price: the comparison stays blank, as for any refused input
            assert not set(rows) & set(t.names), (i, job)
            continue
        for d in t:
            r = rows[d.name]
            hours = float(calc.train_hours(job["params"], job["tokens"], d.name, utilization=job["utilization"],
                                           devices=job["devices"], table=t, active_params=job["active_params"]))
            hours *= _step(job)
            assert _same(ws[f"{hours_col}{r}"].value, hours), (i, d.name)
            if d.name == job["device"]:  # one price on the page: the chosen device's row is the results'
                got = ws[f"{cost_col}{r}"].value  # (hours x devices x price against device-hours x price: to an ulp)
                assert _same(got, results), (i, job, got, results)
            elif d.usd_per_device_hour is None:  # owned and measured rows: no price, never the typed one
                assert ws[f"{cost_col}{r}"].value == pieces.NO_PRICE == ws[f"{whose_col}{r}"].value


def test_scenarios_equal_calc_at_500_plans(recalculated):
    jobs, plan_sets, books = recalculated
    checked = 0
    for job, plan_rows, wb in zip(jobs, plan_sets, books, strict=True):
        ws, rate = wb["Scenarios"], job["currency"][1]
        for c, plan in zip(scenarios.COLUMNS, plan_rows, strict=True):
            _, params, _, tokens, device, devices, util, price, pue = plan  # dense: active blank
            # the copy's Devices table: a blank price is the chosen row's own (the job's row price)
            row = plans.plan_row(params, tokens, device, devices=devices, utilization=util, price=price, pue=pue,
                                 table=table_of(job))
            ranged = isinstance(util, str)
            for fig in ("hours", "device_hours", "usd", "kwh"):
                for case in ("low", "expected", "high"):
                    want = row.get(f"{fig}_{case}" if ranged else fig) if ranged or case == "expected" else None
                    if want is not None and fig == "usd":
                        want *= rate
                    got = ws[f"{c}{scenarios.ROW[f'{fig}_{case}']}"].value
                    assert _same(got, want), (c, plan, fig, case, got, want)
                    checked += want is not None
    assert checked >= N_JOBS * len(scenarios.COLUMNS) * 3


def test_devices_needed_counts_gib(recalculated):
    jobs, _, books = recalculated
    # usable memory (calc/capacity.py): 80 GiB less 5% = 76 GiB = 81.6e9 B per H100; 16 B/param sharded:
    # 10.3B -> 164.8e9 / 81.6e9 = 2.02 -> 3; 70.6B -> 1129.6e9 / 81.6e9 = 13.84 -> 14
    for k, want in ((0, 3), (1, 14)):
        job = jobs[k]
        assert _labels(books[k]["Budget"])["Devices needed to fit"] == want
        assert calc.devices_needed(job["params"], H100, zero_stage=3) == want


def test_typed_price_beside_a_row_price_is_one_price(recalculated):
    jobs, _, books = recalculated
    job, ws = jobs[2], books[2]["Budget"]
    assert job["usd_per_device_hour"] == 9.99 and job["row_price"] == 2.20
    got = _labels(ws)
    dh = got["Device-hours"]
    assert math.isclose(got["Cost at typed utilization (USD)"], dh * 9.99, rel_tol=1e-12)
    assert got["The device row's price (USD per device-hour)"] == 2.2
    assert got["Price from"] == pieces.TYPED
    name_col, _, _, _, cost_col, price_col, whose_col = budget_sheet.COMPARE_COLS
    r = next(r for r in range(5, 60) if ws[f"{name_col}{r}"].value == H100)
    assert ws[f"{cost_col}{r}"].value == got["Cost at typed utilization (USD)"] and ws[f"{price_col}{r}"].value == 9.99
    assert ws[f"{whose_col}{r}"].value == pieces.TYPED
    for other in ("M3 Ultra, MLX fp32 matmul (measured)", "RTX 4090, BF16 tensor core, dense"):
        r = next(r for r in range(5, 60) if ws[f"{name_col}{r}"].value == other)
        assert ws[f"{cost_col}{r}"].value == pieces.NO_PRICE, other


def test_price_ages_count_to_the_date_shown(recalculated, built):
    jobs, _, books = recalculated
    first = prices_sheet.FIRST_ROW + 1
    last = first + len(prices.load_prices())
    shown = books[len(FIXED) + 1]["Prices"]  # a job with the date kept
    when = shown["B3"].value  # the date the ages count to, shown on the Prices sheet
    assert when.date() == prices_sheet.budget_date()
    for r in range(first, last):
        assert shown[f"{prices_sheet.AGE_COL}{r}"].value == (when - shown[f"{prices_sheet.AS_OF_COL}{r}"].value).days
    cleared = books[len(FIXED)]["Prices"]
    assert jobs[len(FIXED)]["clear_date"] and cleared["B3"].value in (None, "", 0)
    assert all(cleared[f"{prices_sheet.AGE_COL}{r}"].value in (None, "") for r in range(first, last))
