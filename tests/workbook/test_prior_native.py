"""The job-keyed prior's native pieces (addin/functions/prior_native.py) recalculated by LibreOffice
and by Gnumeric equal calc_prior.job_prior (1e-9) at 60 random jobs: every catalog hardware, an
unknown hardware, MoE and dense, 1 to 16,384 devices; the planner's devices for a deadline
equal inverse.devices_for with utilization "prior:job"; and the basis line (its decades, dense or
MoE, the extrapolation note) is calc's text exactly."""

from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import openpyxl
import pytest
from openpyxl.workbook.defined_name import DefinedName

from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.functions import prior_native
from trainbudget.calc.planning import inverse
from trainbudget.calc.prior import utilization as prior

N = 60
UNKNOWN = "Custom ASIC X1"   # hardware no family prefix matches: calc's family unknown
COLS = ("hardware", "active", "devices", "tokens", "moe", "long", "position", "effect", "expected", "low", "high",
        "hours1", "days", "deadline_devices", "family", "usd", "budget_tokens", "basis_runs", "basis_scale",
        "out_params", "out_devices", "out_tokens", "beyond", "basis")


def _jobs(seed: int = 20261201) -> list[dict]:
    rng = np.random.default_rng(seed)
    table = calc.catalog()
    sixteen = [d for d in table if d.precision in ("bf16", "fp16") and d.kind != "measured"]
    jobs = []
    for i in range(N):
        d = sixteen[i % len(sixteen)] if i < N - 4 else None
        jobs.append({"device": d.name if d else float(rng.uniform(100, 2000)), "hardware": d.hardware if d else UNKNOWN,
                     "active": float(10 ** rng.uniform(8.5, 12)), "devices": float(rng.integers(1, 16385)),
                     "tokens": float(10 ** rng.uniform(10, 13.3)), "moe": bool(rng.random() < 0.3),
                     "days": float(rng.uniform(5, 200)), "usd": float(10 ** rng.uniform(4, 8))})
    return jobs


def _workbook(path, jobs: list[dict]) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "P"
    coef = prior_native.coefficient_rows() + prior_native.span_rows()
    for i, (name, value, note) in enumerate(coef, start=1):
        ws[f"A{i}"], ws[f"B{i}"], ws[f"C{i}"] = name, value, note
        wb.defined_names[name] = DefinedName(name, attr_text=f"'P'!$B${i}")
    pfx = prior_native.prefix_rows()
    for k, row in enumerate(pfx, start=1):
        for col, value in zip("EFG", row, strict=True):
            ws[f"{col}{k}"] = value
    for col, name in (("E", prior_native.PREFIXES), ("F", prior_native.PREFIX_EFFECTS),
                      ("G", prior_native.PREFIX_FAMILIES)):
        wb.defined_names[name] = DefinedName(name, attr_text=f"'P'!${col}$1:${col}${len(pfx)}")
    decades = prior_native.decade_rows()
    for k, row in enumerate(decades, start=1):
        for col, value in zip("IJK", row, strict=True):
            ws[f"{col}{k}"] = value
    for col, name in (("J", prior_native.DECADES_PARAMS), ("K", prior_native.DECADES_COUNTS)):
        wb.defined_names[name] = DefinedName(name, attr_text=f"'P'!${col}$1:${col}${len(decades)}")
    ws2 = wb.create_sheet("J")
    for r, job in enumerate(jobs, start=2):
        ref = {c: f"{chr(65 + k)}{r}" for k, c in enumerate(COLS)}
        ws2[ref["hardware"]] = job["hardware"]
        ws2[ref["active"]], ws2[ref["devices"]], ws2[ref["tokens"]] = job["active"], job["devices"], job["tokens"]
        ws2[ref["moe"]] = int(job["moe"])
        ws2[ref["days"]] = job["days"]
        ws2[ref["hours1"]] = job["hours1"]
        ws2[ref["long"]] = "=" + prior_native.prefix_position_long(ref["hardware"])
        ws2[ref["position"]] = "=" + prior_native.prefix_position(ref["hardware"], ref["long"])
        ws2[ref["effect"]] = "=" + prior_native.family_effect(ref["position"])
        ws2[ref["family"]] = "=" + prior_native.family_label(ref["position"], '"it"')
        ws2[ref["expected"]] = "=" + prior_native.expected(ref["effect"], ref["active"], ref["devices"], ref["tokens"],
                                                           ref["moe"])
        ws2[ref["low"]] = "=" + prior_native.edge(ref["expected"], ref["position"], "low")
        ws2[ref["high"]] = "=" + prior_native.edge(ref["expected"], ref["position"], "high")
        args = (ref["active"], ref["devices"], ref["tokens"])
        ws2[ref["basis_runs"]] = "=" + prior_native.basis_runs(ref["family"], ref["active"], ref["moe"])
        ws2[ref["basis_scale"]] = "=" + prior_native.basis_scale(*args)
        outs = [ref[f"out_{key.split('/')[0]}"] for key, _ in prior_native.SPAN_KEYS]
        for key, _ in prior_native.SPAN_KEYS:
            ws2[ref[f"out_{key.split('/')[0]}"]] = "=" + prior_native.outside(key, *args)
        ws2[ref["beyond"]] = "=" + prior_native.beyond(outs)
        ws2[ref["basis"]] = "=" + prior_native.basis(ref["basis_runs"], ref["basis_scale"], ref["beyond"])
        ws2[ref["usd"]] = job["usd"]
        at_100 = f"2.5*{ref['hours1']}/{prior.GOODPUT!r}"  # 2.5 USD per device-hour, at 100% of peak
        ws2[ref["budget_tokens"]] = "=" + prior_native.tokens_for_budget(ref["usd"], at_100, ref["expected"],
                                                                         ref["tokens"])
        ws2[ref["deadline_devices"]] = "=" + prior_native.devices_for_days(
            f"{ref['hours1']}/({prior.GOODPUT!r}*24*{ref['days']})", ref["expected"], ref["devices"])
    wb.save(path)


def _want(job: dict) -> dict:
    p = prior.job_prior(job["device"], active_params=job["active"], devices=job["devices"], moe=job["moe"],
                        tokens=job["tokens"])
    j = calc.job(params=job["active"] * (3 if job["moe"] else 1), active_params=job["active"] if job["moe"] else None,
                 tokens=job["tokens"], device=job["device"], utilization="prior:job")
    fam = prior.device_families(job["device"], None)
    return {"expected": p.expected, "low": p.low, "high": p.high,
            "deadline_devices": inverse.devices_for(j, job["days"], memory=False),
            "family": (p.basis.split(" dense runs")[0].split(" MoE runs")[0] if fam
                       else "Published (family of it unknown)"),
            "budget_tokens": inverse.tokens_for(j.with_(devices=job["devices"], price=2.5), job["usd"],
                                                case="expected"),
            # the basis line as the command line prints it (the sheet names an unknown device "it")
            "basis": p.basis.replace("family of the device unknown", "family of it unknown")}


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    jobs = _jobs()
    for job in jobs:  # hours on one device at 100% of the device's rate (calc), an input of the sheet
        rate = job["device"] if isinstance(job["device"], float) else calc.catalog().get(job["device"]).tflops
        job["hours1"] = float(calc.train_hours(job["active"], job["tokens"], rate, utilization=1.0))
    tmp = tmp_path_factory.mktemp("prior")
    path = tmp / "prior.xlsx"
    _workbook(path, jobs)
    return jobs, path, tmp


def _read(path) -> list[dict]:
    ws = openpyxl.load_workbook(path, data_only=True)["J"]
    return [{c: ws.cell(r, k + 1).value for k, c in enumerate(COLS)} for r in range(2, ws.max_row + 1)]


def _check(jobs: list[dict], got: list[dict]) -> int:
    same = 0
    for job, row in zip(jobs, got, strict=True):
        want = _want(job)
        ok = all(isinstance(row[k], (int, float)) and math.isclose(row[k], want[k], rel_tol=1e-9)
                 for k in ("expected", "low", "high"))
        ok = ok and row["deadline_devices"] == want["deadline_devices"] and row["family"] == want["family"]
        ok = ok and math.isclose(row["budget_tokens"], want["budget_tokens"], rel_tol=1e-9)
        ok = ok and row["basis"] == want["basis"]
        assert ok, (job, row, want)
        same += ok
    return same


def test_native_prior_equals_calc_in_libreoffice(soffice, cases):
    jobs, path, tmp = cases
    out = engine.convert([path], "xlsx", tmp / "lo")[0]
    assert _check(jobs, _read(out)) == N
    assert {prior.family(j["device"]) for j in jobs if isinstance(j["device"], str)} >= {"ampere", "hopper",
                                                                                          "blackwell"}
    bases = [_want(j)["basis"] for j in jobs]  # the basis lines checked: every kind of job among them
    assert {b.split(" runs of ")[0].rsplit(" ", 1)[1] for b in bases} == {"dense", "MoE"}
    assert any("(extrapolated:" in b for b in bases) and any("(extrapolated:" not in b for b in bases)
    assert len({b.split(" dense runs")[0].split(" MoE runs")[0] for b in bases}) >= 8  # families, unknown too


def test_native_prior_equals_calc_in_gnumeric(cases):
    assert shutil.which("ssconvert"), "Gnumeric is not installed: run the README's test command (tests/run-all.sh)"
    jobs, path, tmp = cases
    out = tmp / "prior-gnumeric.xlsx"
    subprocess.run(["ssconvert", "--recalc", str(path), str(out)], capture_output=True, check=True, timeout=300)
    assert _check(jobs, _read(out)) == N


def test_longest_prefix_first_is_calcs_first_match():
    """The sheets match prefixes longest first; calc_prior.family takes the first of FAMILIES that
    matches: the same family for every catalog hardware, every prefix and every prefix extended."""
    names = ({d.hardware for d in calc.catalog()} | {p for p, _ in prior.FAMILIES}
             | {p + "X 1" for p, _ in prior.FAMILIES})
    for name in names:
        _, pos = prior_native.positions(name)
        want = next((f for p, f in prior.FAMILIES if name.upper().startswith(p.upper())), None)
        assert (prior.FAMILIES[pos - 1][1] if pos else None) == want, name


def test_coefficient_rows_are_the_calc_coefficients():
    c = prior.coefficients()
    rows = {name: value for name, value, _ in prior_native.coefficient_rows()}
    assert rows["Prior_intercept"] == c.intercept and rows["Prior_devices"] == c.devices
    assert rows["Prior_fx_hopper"] == c.effect("hopper") and rows["Prior_fx_blackwell"] == c.effect("hopper")
    assert rows["Prior_fx_unknown"] == c.unknown_family
    assert all(note for _, _, note in prior_native.coefficient_rows())


def test_native_prior_equals_calc_in_the_formulas_engine(cases):
    from tests.workbook.test_portable import formulas_engine

    jobs, path, tmp = cases
    got = formulas_engine(path, tmp)
    rows = [{c: got.get(("J", f"{chr(65 + k)}{r}")) for k, c in enumerate(COLS)} for r in range(2, N + 2)]
    assert _check(jobs, rows) == N
