"""Every door renders calc.budget: for random jobs (seeded) the figures of `estimate` as text, JSON
and CSV, with --range, --price, --own and --scenarios, and of TRAIN_BUDGET, equal budget(job)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.addin.cli import emit
from trainbudget.addin.udf import udfs
from trainbudget.calc.money import prices as calc_prices

DEVICES = ("H100 SXM, BF16 tensor core, dense", "H200 SXM, BF16 tensor core, dense", "B200, BF16 tensor core, dense",
           "H100 SXM, FP8 tensor core, dense", "MI300X, BF16 matrix, dense")
PRICES = (None, "2.75", "provider", "provider:spot", "own")
GIB = 2.0 ** 30
FIGURES = ("hours", "days", "device_hours", "cost_usd", "energy_kwh")


def _case(rng: np.random.Generator) -> tuple[list[str], calc.Job]:
    """Command-line arguments and the Job they mean."""
    device = str(rng.choice(DEVICES[:3] if rng.random() < 0.8 else DEVICES))
    devices = int(rng.choice([8, 16, 64]))
    zero, pue = int(rng.integers(0, 4)), round(float(rng.uniform(1.0, 1.5)), 2)
    method = str(rng.choice(["full", "lora"]))
    args = ["--device", device, "--devices", str(devices), "--zero-stage", str(zero), "--method", method,
            "--pue", str(pue), "--tokens", "1T"]
    job = dict(tokens=1e12, device=device, devices=devices, zero_stage=zero, method=method, pue=pue)
    if rng.random() < 0.5:
        model, tp = "Llama 3.1 8B", int(rng.choice([1, 2, 4, 8]))
        args += ["--model", model, "--tp", str(tp)]
        job.update(model=calc.model_preset(model), tp=tp)
    else:
        params = float(rng.choice([7e9, 13e9, 34e9]))
        args += ["--params", repr(params)]
        job.update(params=params)
    if rng.random() < 0.5:
        args.append("--range")
        job.update(utilization="prior")
    else:
        u = round(float(rng.uniform(0.25, 0.6)), 3)
        args += ["--utilization", str(u)]
        job.update(utilization=u)
    price = PRICES[int(rng.integers(0, len(PRICES)))]
    if price == "own":
        args += ["--own", "30000,5", "--usd-per-kwh", "0.12"]
        job.update(price=calc.Owned(30000, 5, 0.12, pue))
    elif price is not None:
        if price.startswith("provider"):  # a provider that prices this device, on demand or spot
            plan = price.partition(":")[2] or None
            offers = sorted({r.provider for r in calc_prices.find(device, plan=plan or "on_demand")})
            price = f"{offers[int(rng.integers(0, len(offers)))]}" + (f":{plan}" if plan else "") if offers else "2.75"
        args += ["--price", price]
        job.update(price=float(price) if price[0].isdigit() else price)
    return args, calc.job(**job)


CASES = [_case(np.random.default_rng(seed)) for seed in range(12)]


def _want(b: calc.Budget) -> dict[str, float | None]:
    out = {"memory_per_device_gib": b.memory.total / GIB, "headroom_gib": b.headroom_bytes / GIB}
    for fig in FIGURES:
        v = getattr(b, fig)
        if isinstance(v, calc.Span):
            out.update({f"{fig}_{k}": x for k, x in zip(("low", "expected", "high"), v.as_tuple(), strict=True)})
        else:
            out[fig] = v
    return out


@pytest.mark.parametrize(("args", "job"), CASES)
def test_json_csv_and_text_equal_budget(args, job):
    b = calc.budget(job)
    want = _want(b)
    (row,) = json.loads(invoke("estimate", *args, "--json", check=True).stdout)["rows"]
    (line,) = csv.DictReader(io.StringIO(invoke("estimate", *args, "--csv", check=True).stdout))
    for key, value in want.items():
        assert row[key] == pytest.approx(value), key
        assert (line[key] == "") if value is None else float(line[key]) == pytest.approx(value), key
    assert row["fits"] == bool(b.fits) and row["goodput"] == pytest.approx(b.goodput)
    text = invoke("estimate", *args, check=True).stdout
    if b.ranged:  # a figure per line: low / expected / high
        lines = [[c.strip() for c in line.split("  ") if c.strip()] for line in text.splitlines()]
        for want_cells in emit.range_rows(b):
            assert [c for c in want_cells if c] in lines, want_cells
    else:
        cells = [c.strip() for c in text.split(b.device, 2)[2].splitlines()[0].split("  ") if c.strip()]
        assert cells == emit.table_row(b)[1:]  # the table row is the Budget's figures, formatted
    assert f"{emit.gb_words(b.memory.total)} of " in text  # the header: '71.5 GB (66.6 GiB) of ... per device'


def test_scenarios_rows_equal_budget(tmp_path):
    jobs = [job for _, job in CASES if job.model.preset is None and not isinstance(job.pricing.price, calc.Owned)]
    path = tmp_path / "plans.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["name", "params", "tokens", "device", "devices", "utilization", "price"])
        for i, j in enumerate(jobs):
            w.writerow([f"p{i}", j.model.params, j.tokens, j.cluster.device, j.cluster.devices, j.utilization,
                        "" if j.pricing.price is None else j.pricing.price])
    rows = json.loads(invoke("estimate", "--scenarios", str(path), "--json", check=True).stdout)["rows"]
    assert len(rows) == len(jobs) >= 3
    for row, j in zip(rows, jobs, strict=True):
        b = calc.budget(j.with_(zero_stage=0, method="full", pue=None))  # the file's columns; options default
        for key, value in _want(b).items():
            assert row[key] == pytest.approx(value), key


@pytest.mark.parametrize(("args", "job"), [c for c in CASES if c[1].utilization != "prior"
                                           and not isinstance(c[1].pricing.price, (str, calc.Owned))
                                           and c[1].model.preset is None])
def test_train_budget_equals_budget(args, job):
    rows = dict(udfs.TRAIN_BUDGET(job.model.params, job.tokens, job.cluster.device, job.utilization,
                                  job.cluster.devices, job.pricing.price, job.pricing.pue, job.training.method,
                                  job.training.optimizer, job.layout.zero_stage))
    b = calc.budget(job)
    assert rows["Hours"] == pytest.approx(b.hours) and rows["Days"] == pytest.approx(b.days)
    assert rows["Device-hours"] == pytest.approx(b.device_hours)
    assert rows["Energy (kWh)"] == pytest.approx(b.energy_kwh)
    assert rows["Total (GB per device)"] == pytest.approx(b.memory.total / 1e9)
    assert rows["Fits in memory"] == bool(b.fits)
    if b.cost_usd is not None:
        assert rows["Cost (USD)"] == pytest.approx(b.cost_usd)
