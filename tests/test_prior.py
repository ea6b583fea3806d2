"""The utilization prior and the back-test: computed from the packaged runs, recomputed here."""

import csv
from importlib import resources

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc import prior, runs
from trainbudget.calc.backtest import backtest as run_backtest


def _rows(name):
    text = resources.files("trainbudget.calc").joinpath(f"data/{name}").read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def _samples(goodput=prior.GOODPUT):
    """Each run's utilization sample, recomputed from the CSV columns independently of calc.prior."""
    peak = {r["name"]: float(r["tflops"]) * 1e12 for r in _rows("devices.csv")}
    out = []
    for r in _rows("runs.csv"):
        n = float(r["active_params"] or r["params"])
        if r["device_hours"]:
            out.append(6 * n * float(r["tokens"]) / (float(r["device_hours"]) * 3600 * peak[r["device"]]) / goodput)
        elif r["reported_mfu"]:
            out.append(float(r["reported_mfu"]))
    return out


def test_at_least_25_runs_with_devices_precision_and_sources():
    rows = _rows("runs.csv")
    assert len(rows) >= 25
    for r in rows:
        assert r["source"].strip() and r["as_of"].strip(), r["run"]
        assert r["peak_precision"] in ("bf16", "fp16", "fp8"), r["run"]
        assert r["devices"] == "" or float(r["devices"]) >= 1


def test_prior_is_the_10_50_90_percentiles_of_the_runs():
    p = calc.utilization_prior()
    want = np.percentile(_samples(), [10, 50, 90])
    assert (p.low, p.expected, p.high) == pytest.approx(tuple(want), rel=1e-12)
    assert p.n_runs == len(_samples()) >= 25
    assert p.low < p.expected < p.high
    assert p.goodput == 0.90 and "Hyndman" in p.method


def test_goodput_divides_whole_run_samples():
    p80 = calc.utilization_prior(goodput=0.8)
    assert p80.expected == pytest.approx(float(np.percentile(_samples(0.8), 50)))
    with pytest.raises(calc.TrainingBudgetError, match="goodput"):
        calc.utilization_prior(goodput=1.5)


def test_hour_factors_order_low_to_high_hours():
    p = calc.utilization_prior()
    f = p.hour_factors()
    assert f.tolist() == pytest.approx([1 / (p.high * 0.9), 1 / (p.expected * 0.9), 1 / (p.low * 0.9)])
    assert f[0] < f[1] < f[2]


def test_narrowing_by_family_and_scale_uses_only_those_runs():
    hopper = calc.utilization_prior("hopper")
    assert hopper.basis == "runs with family hopper" and hopper.n_runs >= prior.MIN_RUNS
    fams = [prior.family(r["device"]) for r in _rows("runs.csv")]
    want = [u for u, f in zip(_samples(), fams, strict=True) if f == "hopper"]
    assert hopper.expected == pytest.approx(float(np.median(want)))
    assert calc.utilization_prior("H100 SXM, BF16 tensor core, dense") == hopper
    large = calc.utilization_prior(min_devices=1000)
    assert large.n_runs == sum(1 for r in _rows("runs.csv") if r["devices"] and float(r["devices"]) >= 1000)


def test_too_few_runs_fall_back_to_all_runs():
    p = calc.utilization_prior("tpu")  # one TPU run: fewer than MIN_RUNS
    assert p.basis.startswith("all runs (only 1") and p.n_runs == calc.utilization_prior().n_runs
    with pytest.raises(calc.TrainingBudgetError, match="family"):
        calc.utilization_prior("abacus")


def test_backtest_is_computed_leave_one_out():
    b = calc.backtest()
    all_rows = b.subset("all")
    assert len(all_rows) == len(_samples())
    assert 0 < len(b.subset("hours")) < len(all_rows)
    first = runs.load_runs()[0]
    others = prior.utilization_prior(runs=runs.load_runs()[1:])
    base = 6 * first.flops_params * first.tokens / (312e12 * 3600)
    row = b.rows[0]
    assert row.run == first.run and row.observed == first.device_hours
    assert row.expected == pytest.approx(base / (others.expected * 0.9))
    assert row.low <= row.expected <= row.high
    s = b.summary()
    inside = sum(r.low <= r.observed <= r.high for r in b.subset("hours")) / len(b.subset("hours"))
    assert s["hours"]["inside_fraction"] == pytest.approx(inside)
    errors = [abs(r.expected - r.observed) / r.observed for r in all_rows]
    assert s["all"]["median_error"] == pytest.approx(float(np.median(errors)))
    assert 0 <= s["hours"]["inside_fraction"] <= 1 and s["hours"]["median_error"] >= 0


def test_backtest_by_family_differs_from_pooled():
    assert run_backtest(by_family=True).rows != calc.backtest().rows
