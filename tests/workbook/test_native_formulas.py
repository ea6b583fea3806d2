"""Native formulas recalculated by LibreOffice, a real spreadsheet engine, against calc.

(a) the template as built; (b) 50 random scenarios in one recalculation, a user-added measured
device among them; (c) the template's cached values equal the recalculated ones.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openpyxl
import pytest

from tests.sheet_cases import recalculated_copies, set_named
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.functions import native
from trainbudget.addin.functions.registry import BY_NAME
from trainbudget.addin.template import budget_sheet, ranges_block, scenarios
from trainbudget.calc.planning import scenarios as calc_plans
from trainbudget.calc.prior import runs

LAB = calc.Device("Lab box (measured)", 123.4, memory_gib=96.0, watts=500.0, source="bench run 2026-11-28",
                  as_of="2026-11-28")
TABLE = calc.DeviceTable([*calc.catalog(), LAB])
INPUT_COLS = ("params", "tokens", "device", "utilization", "devices", "usd_per_device_hour", "pue", "method",
              "optimizer", "zero_stage", "trainable", "activations")
CHECKED = ("TRAIN_FLOPS", "TRAIN_BYTES", "TRAIN_HOURS", "TRAIN_GPU_HOURS", "TRAIN_COST", "TRAIN_ENERGY_KWH",
           "TRAIN_DEVICES_NEEDED", "DEVICE_TFLOPS", "CHINCHILLA_TOKENS")
N_SCENARIOS = 50


def _scenarios(seed: int = 20261129) -> list[dict]:
    rng = np.random.default_rng(seed)
    names = [*calc.catalog().names, LAB.name]
    out = []
    for _ in range(N_SCENARIOS):
        fraction = rng.random() < 0.5
        out.append({
            "params": float(10 ** rng.uniform(8, 12)), "tokens": float(10 ** rng.uniform(9, 13)),
            "device": str(rng.choice(names)), "utilization": float(rng.uniform(0.1, 1.0)),
            "devices": int(rng.integers(1, 4097)), "usd_per_device_hour": float(rng.uniform(0.5, 10)),
            "pue": float(rng.uniform(1.0, 1.6)), "method": str(rng.choice(calc.METHODS)),
            "optimizer": str(rng.choice(calc.OPTIMIZERS)), "zero_stage": int(rng.integers(0, 4)),
            "trainable": float(rng.uniform(0.001, 0.05) if fraction else round(10 ** rng.uniform(6, 8))),
            "activations": float(10 ** rng.uniform(8, 11)),
        })
    out[0]["device"] = LAB.name  # the user's measured row is always among them
    return out


def _scenario_workbook(template: Path, path: Path, scenarios: list[dict]) -> None:
    """The template plus a measured Devices row, Budget pointed at it, and a Scenarios sheet."""
    wb = openpyxl.load_workbook(template, keep_vba=True)
    devices = wb["Devices"]
    row = devices.max_row + 1
    for col, field in enumerate(native.HEADERS, start=1):
        devices.cell(row, col, getattr(LAB, field))
    devices.tables["Devices"].ref = f"A1:L{row}"
    wb["Budget"][budget_sheet.REF["device"].replace("$", "")] = LAB.name
    ws = wb.create_sheet("Random scenarios")
    for r, s in enumerate(scenarios, start=2):
        refs = {}
        for c, name in enumerate(INPUT_COLS, start=1):
            ws.cell(r, c, s[name])
            refs[name] = ws.cell(r, c).coordinate
        for c, fname in enumerate(CHECKED, start=len(INPUT_COLS) + 2):
            spec = BY_NAME[fname]
            ws.cell(r, c, "=" + spec.native_formula({a.name: refs[a.name] for a in spec.args if a.name in refs}))
    wb.save(path)


@pytest.fixture(scope="module")
def recalculated(soffice, built, tmp_path_factory):
    """Template and scenario workbook, both recalculated in one LibreOffice run."""
    tmp = tmp_path_factory.mktemp("lo")
    scenarios = _scenarios()
    scenario_path = tmp / "scenarios.xlsm"
    _scenario_workbook(built.path, scenario_path, scenarios)
    out = engine.convert([built.path, scenario_path], "xlsx", tmp / "out")
    return {"template": openpyxl.load_workbook(out[0], data_only=True),
            "scenarios": openpyxl.load_workbook(out[1], data_only=True), "inputs": scenarios}


def _same(got, want) -> bool:
    if isinstance(want, float) and math.isinf(want):
        return got == native.DOES_NOT_FIT
    return isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9)


def test_a_budget_results_equal_calc(recalculated, built):
    ws = recalculated["template"]["Budget"]
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    job = {"utilization": v["utilization"], "devices": v["devices"]}
    mem = {"method": v["method"], "optimizer": v["optimizer"], "trainable": v["trainable"]}
    per_device = calc.train_memory(v["params"], zero_stage=v["zero_stage"], devices=v["devices"], **mem)
    hours = calc.train_hours(v["params"], v["tokens"], v["device"], **job)
    want = {
        "Training compute (FLOPs)": calc.train_flops(v["params"], v["tokens"]),
        "Model states, whole job": calc.train_bytes(v["params"], **mem) / 1e9,
        "Weights per device": per_device.weights / 1e9, "Gradients per device": per_device.gradients / 1e9,
        "Optimizer per device": per_device.optimizer / 1e9, "Master per device": per_device.master / 1e9,
        "Total per device": per_device.total / 1e9,
        "Devices needed to fit": calc.devices_needed(v["params"], v["device"], zero_stage=v["zero_stage"], **mem),
        "Wall-clock hours": hours, "Days": hours / 24,
        "Device-hours": calc.gpu_hours(v["params"], v["tokens"], v["device"], **job),
        "Cost at typed utilization (USD)": calc.train_cost(v["params"], v["tokens"], v["device"],
                                      usd_per_device_hour=v["usd_per_device_hour"], **job),
        "Energy (kWh)": calc.train_energy_kwh(v["params"], v["tokens"], v["device"], pue=v["pue"], **job),
    }
    got = {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, 60)}
    for label, value in want.items():
        assert _same(got[label], value), (label, got[label], value)


def test_b_random_scenarios_equal_calc(recalculated):
    ws = recalculated["scenarios"]["Random scenarios"]
    checked = 0
    for r, s in enumerate(recalculated["inputs"], start=2):
        for c, fname in enumerate(CHECKED, start=len(INPUT_COLS) + 2):
            spec = BY_NAME[fname]
            got = ws.cell(r, c).value
            try:
                want = spec.call({a.name: s.get(a.name) for a in spec.args}, TABLE)
            except calc.TrainingBudgetError:  # e.g. a row without watts: the native formula is #N/A
                assert got == "#N/A", (r, fname, got)
                continue
            assert _same(got, want), (r, fname, s, got, want)
            checked += 1
    assert checked >= N_SCENARIOS * len(CHECKED) * 0.8


def test_b_user_measured_row_reaches_budget(recalculated):
    ws = recalculated["scenarios"]["Budget"]
    got = {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, 60)}
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    want = calc.train_hours(v["params"], v["tokens"], LAB.name, utilization=v["utilization"],
                            devices=v["devices"], table=TABLE)
    assert _same(got["Wall-clock hours"], want)
    names = [ws[f"E{r}"].value for r in range(6, ws.max_row + 1)]
    assert LAB.name in names  # the comparison's spare rows pick the new device up


def test_c_cached_values_equal_recalculated(recalculated, built):
    fresh = recalculated["template"]
    compared = 0
    for sheet, cells in built.values.items():
        for ref, cached in cells.items():
            got = fresh[sheet][ref].value
            if isinstance(got, dt.datetime):  # a date cell reads back as a date; its cache is Excel's day serial
                got = (got - dt.datetime(1899, 12, 30)).days
            if sheet == "Functions" and ref.startswith("D"):  # add-in cells: LibreOffice has no add-in
                assert got == "needs the add-in"
                continue
            if cached == "":
                assert got in ("", None), (sheet, ref, got)
            elif isinstance(cached, str):
                assert got == cached, (sheet, ref, got, cached)
            else:
                assert _same(got, cached), (sheet, ref, got, cached)
            compared += 1
    assert compared > 250


def test_runs_sheet_equals_calc(recalculated):
    ws = recalculated["template"]["Runs"]
    for r, run in enumerate(runs.load_runs(), start=2):
        implied, predicted = runs.implied_utilization(run), runs.predicted_device_hours(run)
        assert ws[f"J{r}"].value in ("", None) if implied is None else _same(ws[f"J{r}"].value, implied)
        assert ws[f"K{r}"].value in ("", None) if predicted is None else _same(ws[f"K{r}"].value, predicted)


# --- devices needed on usable memory, as LibreOffice computes it -----------------

H100 = "H100 SXM, BF16 tensor core, dense"
# 16 B/param of states, all sharded under ZeRO-3; an H100's usable memory is 80 GiB less 5% = 76 GiB
# = 81.6e9 B: 10.3B -> 164.8e9 / 81.6e9 = 2.02 -> 3 devices (the whole 85.9e9 B said 1.92 -> 2, on
# which the job does not fit); 70.6B -> 1129.6e9 / 81.6e9 = 13.84 -> 14.
NEEDED_CASES = ((10.3e9, 3), (70.6e9, 14))


@pytest.fixture(scope="module")
def needed_books(soffice, built, tmp_path_factory):
    """The template with the Budget set to each case, recalculated in one LibreOffice run."""
    tmp = tmp_path_factory.mktemp("needed")
    def edit(params: float) -> Callable:
        def apply(wb) -> None:
            for name, value in {"params": params, "device": H100, "zero_stage": 3, "method": "full",
                                "optimizer": "adamw", "activations": 0.0}.items():
                wb["Budget"][budget_sheet.REF[name].replace("$", "")] = value
        return apply
    return recalculated_copies(built.path, tmp, [edit(params) for params, _ in NEEDED_CASES], "needed")


def test_budget_devices_needed_counts_usable_memory(needed_books):
    for (params, want), wb in zip(NEEDED_CASES, needed_books, strict=True):
        ws = wb["Budget"]
        got = {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value}
        usable = next(v for k, v in got.items() if str(k).startswith("Usable memory (GiB)"))
        assert usable == pytest.approx(calc.usable_bytes(H100) / 2**30) == pytest.approx(76.0)
        assert got["Devices needed to fit"] == want == calc.devices_needed(params, H100, zero_stage=3)
        job = calc.job(params=params, device=H100, zero_stage=3)
        assert calc.budget(job.with_(devices=float(want))).fits
        assert not calc.budget(job.with_(devices=float(want - 1))).fits


# --- a price typed only on the FP8 row the user chose prices every figure, ranges included --------

FP8 = "H100 SXM, FP8 tensor core, dense"
FP8_PRICE = 3.0


@pytest.fixture(scope="module")
def fp8_priced(soffice, built, tmp_path_factory):
    """The template with a price on the H100 FP8 Devices row only, the Budget on that row with no
    typed price, and a Scenarios plan on it at the prior with a blank price; recalculated."""
    import dataclasses

    tmp = tmp_path_factory.mktemp("fp8")
    wb = openpyxl.load_workbook(built.path, keep_vba=True)
    devices = wb["Devices"]
    col = 1 + list(native.HEADERS).index("usd_per_device_hour")
    row = next(r for r in range(2, devices.max_row + 1) if devices.cell(r, 1).value == FP8)
    devices.cell(row, col, FP8_PRICE)
    budget = wb["Budget"]
    budget[budget_sheet.REF["device"].replace("$", "")] = FP8
    budget[budget_sheet.REF["usd_per_device_hour"].replace("$", "")] = None
    set_named(wb, "Ranges_from", "published runs")  # the ranges on the published runs' prior, as below
    plans = wb["Scenarios"]
    plan = ("FP8, row price", 7e9, None, 1.4e11, FP8, 64, "prior", None, 1.0)  # dense: active blank
    for (name, *_), value in zip(scenarios.INPUTS, plan, strict=True):
        plans[f"B{scenarios.ROW[name]}"] = value
    wb.save(tmp / "fp8.xlsm")
    table = calc.DeviceTable([dataclasses.replace(d, usd_per_device_hour=FP8_PRICE) if d.name == FP8 else d
                              for d in calc.catalog()])
    out = engine.convert([tmp / "fp8.xlsm"], "xlsx", tmp / "out")
    return openpyxl.load_workbook(out[0], data_only=True), table, plan


def test_fp8_row_price_reaches_the_ranges_and_the_scenarios(fp8_priced):
    wb, table, plan = fp8_priced
    ws = wb["Budget"]
    got = {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value}
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    v.update(device=FP8, usd_per_device_hour=None)
    b = ranges_block.budget(v, table, utilization="prior")
    assert b.usd_per_device_hour == FP8_PRICE
    for case, want in zip(("low", "expected", "high"), b.cost_usd.as_tuple(), strict=True):
        assert _same(got[f"{ranges_block.cost_label(case)} (USD)"], float(want)), (case, want)
    assert _same(got["Cost at typed utilization (USD)"], float(ranges_block.budget(v, table).cost_usd))
    plans = wb["Scenarios"]
    _, params, _, tokens, device, devices, util, _, pue = plan
    row = calc_plans.plan_row(params, tokens, device, devices=devices, utilization=util, pue=pue, table=table)
    assert plans[f"B{scenarios.ROW['price_used']}"].value == FP8_PRICE == row["usd_per_device_hour"]
    for case in ("low", "expected", "high"):
        assert _same(plans[f"B{scenarios.ROW[f'usd_{case}']}"].value, row[f"usd_{case}"]), case
