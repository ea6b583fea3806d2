"""Published runs: sourced rows, and the utilization they imply, recomputed independently."""

import csv
import json
from importlib import resources

import pytest

from tests.conftest import run_cli
from trainbudget import calc
from trainbudget.calc import runs


def _csv(name):
    text = resources.files("trainbudget.calc").joinpath(f"data/{name}").read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def test_at_least_ten_sourced_runs_on_catalog_devices():
    rows = _csv("runs.csv")
    assert len(rows) >= 10
    names = {r["name"] for r in _csv("devices.csv")}
    for r in rows:
        assert r["source"].strip() and r["as_of"].strip(), r["run"]
        assert r["device"] in names, r["run"]
        assert r["hours_scope"] in ("whole-run", "steady-state")
        assert r["device_hours"] or r["reported_mfu"] or r["reported_flops"], r["run"]


def test_implied_utilization_recomputed_independently():
    peak = {r["name"]: float(r["tflops"]) * 1e12 for r in _csv("devices.csv")}
    checked = 0
    for row, run in zip(_csv("runs.csv"), runs.load_runs(), strict=True):
        if not row["device_hours"]:
            assert runs.implied_utilization(run) is None
            continue
        n = float(row["active_params"] or row["params"])
        want = 6 * n * float(row["tokens"]) / (float(row["device_hours"]) * 3600 * peak[row["device"]])
        assert runs.implied_utilization(run) == pytest.approx(want, rel=1e-12)
        assert 0.05 < want < 0.7, row["run"]
        checked += 1
    assert checked >= 8


def test_llama2_7b_matches_the_reference_check():
    (llama,) = [r for r in runs.load_runs() if r.run == "Llama 2 7B"]
    assert runs.implied_utilization(llama) == pytest.approx(0.39, abs=0.005)


def test_reported_flops_agree_with_six_n_d():
    for run in runs.load_runs():
        if run.reported_flops:
            assert calc.train_flops(run.flops_params, run.tokens) == pytest.approx(run.reported_flops, rel=0.02)


def test_predicted_hours_at_reported_mfu():
    for run in runs.load_runs():
        if run.reported_mfu:
            want = 6 * run.flops_params * run.tokens / (calc.catalog().get(run.device).tflops * 1e12
                                                         * run.reported_mfu) / 3600
            assert runs.predicted_device_hours(run) == pytest.approx(want)


def test_runs_command_json():
    rows = json.loads(run_cli("runs", "--json", check=True).stdout)
    assert [r["run"] for r in rows] == [r.run for r in runs.load_runs()]
    assert all(r["source"] for r in rows)
