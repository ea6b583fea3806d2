"""Published runs: sourced rows, and the utilization they imply, recomputed independently."""

import csv
import json
from importlib import resources

import pytest

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.calc.prior import runs


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
    rows = json.loads(invoke("runs", "--json", check=True).stdout)
    assert [r["run"] for r in rows] == [r.run for r in runs.load_runs()]
    assert all(r["source"] for r in rows)


def test_columns_keep_the_kinds_of_evidence_apart():
    rows = _csv("runs.csv")
    assert len(rows) >= 50
    for r in rows:
        assert r["use"] in ("main", "sensitivity", "no"), r["run"]
        assert r["tier"] in ("A", "B", "C"), r["run"]
        assert r["hours_kind"] in (("stated", "derived") if r["device_hours"] else ("",)), r["run"]
        if not r["device_hours"]:
            assert r["hours_scope"] == "steady-state", r["run"]   # an MFU is a steady-state figure
    assert sum(r["use"] == "main" for r in rows) >= 40


def test_the_corrections_of_2026_11_30_are_applied():
    by = {r.run: r for r in runs.load_runs()}
    assert "MPT-30B" not in by                                           # ran on A100-40GB; no usable figure
    assert by["OPT-175B"].tokens == 300e9 and by["OPT-175B"].reported_mfu == pytest.approx(0.345)
    assert by["PaLM 540B"].device_hours == 6144 * 1200 + 3072 * 336 and by["PaLM 540B"].hours_scope == "whole-run"
    assert by["PaLM 540B"].reported_mfu == 0.457                         # without attention (6ND basis)
    assert {by[f"LLaMA {s}"].hours_scope for s in ("7B", "13B", "33B", "65B")} == {"steady-state"}
    assert (by["MT-NLG 530B"].devices, by["MT-NLG 530B"].reported_mfu) == (2240, 0.297)
    assert (by["Nemotron-4 15B"].params, by["Nemotron-4 15B"].devices) == (15.7e9, 2304)
    assert by["Llama 3.1 405B"].reported_mfu == 0.41 and by["Mamba2-Hybrid 8B"].devices == 1024
    assert by["Falcon-180B"].tier == "B" and by["GPT-3 175B"].device_hours is None
    assert by["DeepSeek-V3"].moe and not by["Llama 2 7B"].moe


def test_excluded_runs_are_not_samples():
    from trainbudget.calc.prior import utilization as prior
    main = {r.run for r in runs.load_runs() if r.use == "main"}
    assert {"Llama 3.2 1B", "Llama 3.2 3B", "Pythia 70M", "Llama 4 Behemoth"}.isdisjoint(main)
    assert prior.packaged_prior(prior.GOODPUT).fit.n == sum(prior.run_utilization(r) is not None
                                                        for r in runs.load_runs() if r.use == "main")
