"""Small defects noticed at the last stop (issues 17 and 18), each pinned by a test that failed before.

1. Small modules: calc/plan.py (421 lines) and calc/checks.py (415) were split, each into two cohesive
   modules (calc.inverse, calc.errors) that the old module re-exports, so every import keeps working.
2. A figure that underflows or overflows is a named refusal, never a silent 0 or inf: devices=1e308 made
   the rate (TFLOP/s x utilization x devices) overflow and the hours 0; params and tokens of 1e-300 made
   the FLOPs 0; a huge budget (or a price near 0) bought inf tokens. Property tests over the whole float64
   range: every answer is a finite positive number or a TrainingBudgetError.
3. The utilization prior never exceeds 100% of the peak: an absurd job (far outside the runs) was
   predicted above 1 (1 param on 1e286 devices: 31,445x peak, hours below the 100%-utilization hours).
   Now expected = min(1, model), the band its constant factors around it, low and high at most 1, the
   basis says "capped"; the workbook's native prior (prior_native) caps the same way (LibreOffice);
   devices for a deadline and tokens for a budget stay exact where the cap stops the devices^b growth.
4. The sheets' price rule is written once (pieces.price_rule): price_used (the price) and price_source
   (whose price) are built from it, as compare_price / compare_source from pieces.compare_rule; the
   formulas are the same text as before, so the LibreOffice price tests hold.
5. Uneven pipeline stages (80 layers on PP 3: 27/27/26, legal): calc.budget split the layers evenly
   (26.7 a stage), below the busiest stage that calc.fit_layouts counts. Now every door gives the
   largest stage's memory per device (calc.stages: Budget, estimate's text, JSON and CSV, the
   workbook's layout block) and says the stages are uneven.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import openpyxl
import pytest
from hypothesis import given, settings, strategies as st

from tests import test_libreoffice_prior as lo_prior, xlsx_edit
from tests.conftest import invoke
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.functions import pieces
from trainbudget.addin.template import budget_sheet, model_block
from trainbudget.addin.udf import udfs
from trainbudget.calc.base.errors import TINY
from trainbudget.calc.money import totals as calc_schedule
from trainbudget.calc.physics import stages
from trainbudget.calc.planning import inverse
from trainbudget.calc.prior import utilization as prior


def test_one_error_class_whichever_module_it_is_imported_from() -> None:
    from trainbudget import calc
    from trainbudget.calc.base import errors
    assert calc.TrainingBudgetError is errors.TrainingBudgetError is errors.TrainingBudgetError
    assert issubclass(errors.ResultOverflowError, errors.TrainingBudgetError)


# --- 2. underflow and overflow: a named refusal -------------------------------------------------

H100 = "H100 SXM, BF16 tensor core, dense"


def _refusal(call) -> str:
    with pytest.raises(calc.TrainingBudgetError) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize("call", [
    lambda: calc.train_range(7e9, 1e12, H100, devices=1e308),
    lambda: calc.train_hours(7e9, 1e12, H100, devices=1e308),
    lambda: calc.gpu_hours(7e9, 1e12, H100, devices=1e308),
    lambda: calc.train_cost(7e9, 1e12, H100, devices=1e308, usd_per_device_hour=2.0),
])
def test_huge_device_counts_are_refused_naming_devices(call):
    message = _refusal(call)
    assert message.startswith("devices (got 1e+308) out of range") and "underflow" in message, message


@pytest.mark.parametrize("utilization", [1.0, "prior"])
def test_the_budget_refuses_the_zero_hours_of_huge_device_counts(utilization):
    job = calc.Job(params=7e9, tokens=1e12, device=H100, devices=1e308, utilization=utilization)
    message = _refusal(lambda: calc.budget(job))
    assert "hours underflow" in message and "devices 1e+308" in message, message


def test_estimate_with_huge_device_counts_is_one_line_and_exit_2():
    got = invoke("estimate", "--params", "7B", "--tokens", "1T", "--devices", "1e308")
    assert got.returncode == 2 and got.stdout == "", got.stdout
    assert "devices 1e+308" in got.stderr and len(got.stderr.strip().splitlines()) == 1, got.stderr


def test_the_cell_says_value_naming_devices():
    got = udfs.TRAIN_HOURS(7e9, 1e12, H100, 1, 1e308)
    assert got.startswith("#VALUE! devices (got 1e+308) out of range"), got


@pytest.mark.parametrize("call", [
    lambda: calc.train_flops(1e-300, 1e-300),
    lambda: calc.train_hours(1e-300, 1e-300, H100),
    lambda: calc.train_range(1e-300, 1e-300, H100),
    lambda: calc.budget(calc.Job(params=1e-300, tokens=1e-300, device=H100)),
])
def test_flops_that_underflow_are_refused_naming_params_and_tokens(call):
    message = _refusal(call)
    assert "params (got 1e-300), tokens (got 1e-300) out of range" in message and "underflow" in message


def test_a_subnormal_hours_figure_is_refused_too():  # 1.7e-318 hours: digits lost, not a figure
    message = _refusal(lambda: calc.train_hours(1e-200, 1.0, H100, devices=1e100))
    assert "params (got 1e-200), devices (got 1e+100) out of range" in message, message


def test_an_array_names_the_element_that_underflows():
    message = _refusal(lambda: calc.train_hours([7e9, 7e9], 1e12, H100, devices=[1, 1e308]))
    assert "hours[1] underflow" in message, message


@pytest.mark.parametrize(("call", "name"), [
    (lambda: inverse.tokens_for_budget(7e9, H100, 1e308, usd_per_device_hour=2.0), "usd (got 1e+308)"),
    (lambda: inverse.tokens_for_budget(7e9, H100, 1e6, usd_per_device_hour=1e-300), "usd (got 1000000)"),
    (lambda: inverse.devices_for_days(7e9, 1e12, H100, 1e-300), "days (got 1e-300)"),
])
def test_the_questions_the_other_way_round_refuse_too(call, name):
    message = _refusal(call)
    assert message.startswith(name + " out of range"), message


def _answer_or_refusal(call):
    """The answer as a float64 array, or None for a TrainingBudgetError (nothing else may escape)."""
    try:
        return np.asarray(call(), dtype=np.float64)
    except calc.TrainingBudgetError:
        return None


magnitude = st.floats(-300, 300).map(lambda e: 10.0 ** e)  # any decade float64 holds
count = st.floats(0, 308).map(lambda e: float(math.ceil(10.0 ** e)))
SETTINGS = settings(max_examples=60, deadline=None)


@SETTINGS
@given(magnitude, magnitude, count, st.floats(1e-3, 1.0))
def test_hours_are_finite_positive_or_refused(params, tokens, devices, utilization):
    for call in (lambda: calc.train_hours(params, tokens, H100, utilization=utilization, devices=devices),
                 lambda: calc.gpu_hours(params, tokens, H100, utilization=utilization, devices=devices)):
        got = _answer_or_refusal(call)
        assert got is None or (np.isfinite(got).all() and (got >= TINY).all()), (params, tokens, devices, got)


@SETTINGS
@given(magnitude, magnitude, count, st.floats(1e-3, 1.0))
def test_budgets_are_finite_positive_or_refused(params, tokens, devices, utilization):
    job = calc.Job(params=params, tokens=tokens, device=H100, devices=devices, utilization=utilization)
    for figure in ("hours", "device_hours", "flops"):
        b = _answer_or_refusal(lambda job=job, figure=figure: getattr(calc.budget(job), figure))
        assert b is None or (np.isfinite(b).all() and (b >= TINY).all()), (params, tokens, devices, figure, b)


@SETTINGS
@given(magnitude, magnitude, magnitude)
def test_tokens_for_a_budget_are_finite_whole_or_refused(params, usd, price):
    got = _answer_or_refusal(lambda: inverse.tokens_for_budget(params, H100, usd, usd_per_device_hour=price))
    assert got is None or (np.isfinite(got).all() and (got >= 1).all()), (params, usd, price, got)


@SETTINGS
@given(magnitude, magnitude, magnitude)
def test_devices_for_days_are_finite_whole_or_refused(params, tokens, days):
    got = _answer_or_refusal(lambda: inverse.devices_for_days(params, tokens, H100, days))
    assert got is None or (np.isfinite(got).all() and (got >= 1).all()), (params, tokens, days, got)


# --- 3. the prior is capped at 100% of the peak --------------------------------------------------

A100 = "A100 SXM 80GB, BF16 tensor core, dense"
ABSURD = [  # (device, active params, devices, tokens): the model's expected or high above 1
    (H100, 1.0, 1e286, 1.0), (H100, 1e14, 1e4, 1e18), (H100, 1e14, 1e4, 1e17), (A100, 1e13, 1e5, 1e16)]


@pytest.mark.parametrize(("device", "active", "devices", "tokens"), ABSURD)
def test_no_prior_exceeds_the_peak(device, active, devices, tokens):
    for p in (prior.job_prior(device, active_params=active, devices=devices, tokens=tokens),
              calc.utilization_prior(device, active_params=active, devices=devices, tokens=tokens)):
        assert 0 < p.low <= p.expected <= p.high <= 1.0, p
        assert ("capped at 100% of peak" in p.basis) == (p.high == 1.0), p.basis
        assert p.basis.endswith(prior.BASIS_TAIL.format(n=p.n_runs))
    assert prior.job_prior(device, active_params=active, devices=devices, tokens=tokens).high == 1.0


def test_the_cap_keeps_the_band_around_the_capped_expected():
    c = prior.coefficients()
    p = prior.job_prior(H100, active_params=1.0, devices=1e286, tokens=1.0)  # the model: far above 1 x peak
    assert p.expected == 1.0 and p.high == 1.0 and p.low == pytest.approx(math.exp(c.band_low), rel=1e-12)
    model = re.search(r"the model gives ([0-9.e+]+) x peak", p.basis)
    assert model is not None and float(model.group(1)) > 1.0, p.basis
    asks = (prior.job_prior(H100, active_params=1e14, devices=1e4, tokens=t) for t in np.logspace(14, 19, 51))
    q = next(a for a in asks if a.high == 1.0 and a.expected < 1.0)  # only the band's high binds
    assert q.high == 1.0 and q.expected < 1.0 and q.low == pytest.approx(q.expected * math.exp(c.band_low))
    assert "band capped at 100% of peak" in q.basis


def test_an_array_prior_is_capped_elementwise():
    p = prior.job_prior(H100, active_params=[7e9, 1e14], devices=[1024, 1e4], tokens=[1e12, 1e17])
    one = prior.job_prior(H100, active_params=7e9, devices=1024, tokens=1e12)
    assert p.high[1] == 1.0 and p.high[0] == pytest.approx(one.high) and p.expected[0] == pytest.approx(one.expected)
    assert "capped at 100% of peak where the model gives more" in p.basis


def test_a_prior_below_the_peak_is_untouched():
    p = prior.job_prior(H100, active_params=7e9, devices=1024, tokens=1e12)
    c = prior.coefficients()
    assert p.high < 1 and "capped" not in p.basis
    assert p.high == pytest.approx(p.expected * math.exp(c.band_high), rel=1e-12)


@pytest.mark.parametrize(("active", "tokens"), [(1e14, 1e17), (1e15, 1e19)])
def test_hours_never_beat_the_hours_at_the_peak(active, tokens):
    job = calc.Job(params=active, tokens=tokens, device=H100, devices=1024, utilization="prior")
    b, at_peak = calc.budget(job), calc.budget(job.with_(utilization=1.0))
    assert min(b.hours.as_tuple()) >= at_peak.hours / prior.GOODPUT * (1 - 1e-12)


@pytest.mark.parametrize("case", ["low", "expected", "high"])
def test_devices_for_days_are_the_fewest_where_the_prior_is_capped(case):
    job = calc.Job(params=1e14, tokens=1e17, device=H100, utilization="prior")  # capped at every count
    n = inverse.devices_for(job, 30.0, case=case, memory=False)
    assert math.isfinite(n)  # the closed form (utilization growing as devices^b) fell short: inf before
    hours = [getattr(calc.budget(job.with_(devices=k)).hours, case) for k in (n, n - 1)]
    assert hours[0] <= 24 * 30.0 * (1 + 1e-12) < hours[1]


@pytest.mark.parametrize("case", ["low", "expected", "high"])
def test_tokens_for_a_budget_never_overspend_where_the_prior_is_capped(case):
    job = calc.Job(params=1e14, tokens=1e17, device=H100, devices=1024, utilization="prior", price=2.0)
    usd = 1e15
    t = inverse.tokens_for(job, usd, case=case)
    spent = {"low": "high", "high": "low"}.get(case, case)  # the most tokens come from the low cost
    cost = [getattr(calc.budget(job.with_(tokens=k)).cost_usd, spent) for k in (t, t * (1 + 1e-9))]
    assert cost[0] <= usd < cost[1]  # was 1.30 x the budget for the high case


def test_the_native_prior_is_capped_as_calc_in_libreoffice(soffice, tmp_path):
    table = calc.catalog()
    jobs = []
    for device, active, devices, tokens in [*ABSURD[1:], (H100, 7e9, 1024, 1e12)]:
        d = table.get(device)
        jobs.append({"device": device, "hardware": d.hardware, "active": active, "devices": devices,
                     "tokens": tokens, "moe": False, "days": 30.0, "usd": 1e6,
                     "hours1": float(calc.train_hours(active, tokens, d.tflops, utilization=1.0))})
    path = tmp_path / "capped.xlsx"
    lo_prior._workbook(path, jobs)
    rows = lo_prior._read(engine.convert([path], "xlsx", tmp_path / "lo")[0])
    capped = 0
    for job, row in zip(jobs, rows, strict=True):
        want = prior.job_prior(job["device"], active_params=job["active"], devices=job["devices"],
                               tokens=job["tokens"])
        for k in ("expected", "low", "high"):
            assert row[k] == pytest.approx(getattr(want, k), rel=1e-9), (job, k, row[k])
            assert row[k] <= 1.0
        capped += want.high == 1.0
    assert capped == len(ABSURD) - 1


@SETTINGS
@given(magnitude, magnitude, count)
def test_ranges_are_finite_positive_and_never_beat_the_peak_or_refused(params, tokens, devices):
    got = _answer_or_refusal(lambda: calc.train_range(params, tokens, H100, devices=devices)["hours"])
    at_peak = _answer_or_refusal(lambda: calc.train_hours(params, tokens, H100, devices=devices))
    assert got is None or (np.isfinite(got).all() and (got >= at_peak * (1 - 1e-12)).all()), (params, tokens, got)
    job = calc.Job(params=params, tokens=tokens, device=H100, devices=devices, utilization="prior")
    b = _answer_or_refusal(lambda: calc.budget(job).hours.as_tuple())
    assert b is None or (np.isfinite(b).all() and (b >= TINY).all()), (params, tokens, devices, b)


# --- 4. one price rule, two renderings -------------------------------------------------------------

def _recording(monkeypatch, name: str) -> list[dict]:
    calls: list[dict] = []
    real = getattr(pieces, name)
    monkeypatch.setattr(pieces, name, lambda *a, **k: calls.append(k) or real(*a, **k))
    return calls


def test_price_used_and_price_source_are_one_rule(monkeypatch):
    calls = _recording(monkeypatch, "price_rule")
    used = pieces.price_used("Provider", "Price_found", "Price_per_hour", "Row_price")
    source = pieces.price_source("Provider", "Plan", "Price_found", "Price_per_hour", "Row_price")
    assert len(calls) == 2 and calls[0].keys() == calls[1].keys()  # each case given once, by both
    # the same branches: with each case's rendering blanked out, the two formulas are one text
    for formula, cases in ((used, calls[0]), (source, calls[1])):
        assert formula == pieces.price_rule("Provider", "Price_found", "Price_per_hour", "Row_price", **cases)
    skeleton = {k: f"<{k}>" for k in calls[0]}
    text = pieces.price_rule("P", "F", "T", "O", **skeleton)
    assert all(text.count(mark) == 1 for mark in skeleton.values())  # every case rendered, once
    assert calls[0]["provider_price"] == "Price_found" and calls[1]["typed_price"] == f'"{pieces.TYPED}"'
    assert calls[0]["no_price"] == calls[1]["no_price"] == f'"{pieces.NO_PRICE}"'


def test_a_comparison_rows_price_and_source_are_one_rule(monkeypatch):
    calls = _recording(monkeypatch, "compare_rule")
    pieces.compare_price("Name", "Chosen", "Used", "Own")
    pieces.compare_source("Name", "Chosen", "Source", "Own")
    assert len(calls) == 2 and calls[0].keys() == calls[1].keys()
    assert (calls[0]["chosen_value"], calls[1]["chosen_value"]) == ("Used", "Source")


# --- 5. uneven pipeline stages: the largest stage's memory, said so --------------------------------

L70 = calc.model_preset("Llama 3.1 70B")  # 80 layers


def _job(pp: float, **options) -> calc.Job:
    return calc.Job(model=L70, tokens=1e12, device=H100, devices=8 * pp, tensor_parallel=8.0, pipeline_parallel=pp,
                    **options)


def test_stages_are_listed_with_the_extra_layers_first():
    assert stages.stage_layers(80, 3) == [27, 27, 26] and stages.stage_layers(126, 16)[:2] == [8, 8]
    assert sum(stages.stage_layers(126, 16)) == 126 and stages.stage_layers(80, 4) == [20] * 4


def test_the_budget_counts_the_busiest_stage_as_fit_does():
    b = calc.budget(_job(3.0))
    lay = calc.fit_layouts(L70, H100, 24, memory_gib=1000, zero_stages=(0,), context_parallel=1)
    i = int(np.flatnonzero((np.asarray(lay.tensor) == 8) & (np.asarray(lay.pipeline) == 3))[0])
    assert b.memory.weights == pytest.approx(float(np.asarray(lay.weights)[i]), rel=1e-12)
    shape = L70.shape
    embedding = shape["vocab"] * shape["d_model"]
    p = L70.params()
    even = calc.train_memory(p.total, devices=24, tensor_parallel=8, pipeline_parallel=3, stage_params=embedding)
    busiest = calc.train_memory(embedding + (p.total - embedding) * 27 * 3 / 80, devices=24, tensor_parallel=8,
                                pipeline_parallel=3, stage_params=embedding)
    assert b.memory.total == pytest.approx(busiest.total, rel=1e-12) and b.memory.total > even.total * 1.01


def test_even_stages_are_the_same_floats_as_before():
    b = calc.budget(_job(4.0))
    p, shape = L70.params(), L70.shape
    m = calc.train_memory(p.total, devices=32, tensor_parallel=8, pipeline_parallel=4,
                          stage_params=shape["vocab"] * shape["d_model"])
    assert b.memory.total == m.total


def test_estimate_says_the_stages_are_uneven_and_prints_the_largest():
    args = ("estimate", "--model", "Llama 3.1 70B", "--tokens", "1T", "--devices", "24", "--tp", "8", "--pp", "3",
            "--device", H100)
    want = float(calc.budget(_job(3.0)).memory.total) / calc_schedule.GIB
    text = invoke(*args, check=True).stdout
    assert f"{want:,.1f} GiB per device" in text and "uneven stages 27/27/26 layers: memory of the largest" in text
    row = json.loads(invoke(*args, "--json", check=True).stdout)["rows"][0]
    assert row["pipeline_stage_layers"] == "27/27/26" and row["memory_per_device_gib"] == pytest.approx(want)
    csv_text = invoke(*args, "--csv", check=True).stdout
    assert "pipeline_stage_layers" in csv_text.splitlines()[0] and ",27/27/26," in csv_text
    even = invoke(*args[:-4], "--pp", "4", "--devices", "32", "--device", H100, check=True).stdout
    assert "uneven" not in even


def test_the_layout_block_counts_the_largest_stage_in_libreoffice(soffice, built, tmp_path):
    names = {n: d.attr_text.split("!")[-1].replace("$", "")
             for n, d in openpyxl.load_workbook(built.path).defined_names.items()}
    shape = L70.shape
    fields = {name: field for name, _, field, _ in model_block.ARCH_INPUTS}
    layout = {"Tensor_parallel": 8, "Pipeline_parallel": 3, "Expert_parallel": 1}
    path = tmp_path / "pp3.xlsm"
    path.write_bytes(built.path.read_bytes())
    edits = {**{n: shape[f] for n, f in fields.items()}, **layout, budget_sheet.NAMES["devices"]: 24}
    for name, value in edits.items():
        xlsx_edit.edit_cell(path, "Budget", names[name],
                            lambda s, cell, v=value: s.set_constant(cell, v, cell.get("s")))
    ws = openpyxl.load_workbook(engine.convert([path], "xlsx", tmp_path / "out")[0],
                                              data_only=True)["Budget"]
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    want = calc.budget(calc.Job(model=L70, tokens=1e12, device=H100, devices=24.0, tensor_parallel=8.0,
                                pipeline_parallel=3.0, optimizer=v["optimizer"], zero_stage=v["zero_stage"],
                                activations=v["activations"] * 1e9)).memory
    total_row = int(names["Layout_total_GB"][1:])
    assert ws[f"B{total_row}"].value == pytest.approx(want.total / 1e9, rel=1e-9)
    assert ws[f"B{total_row - 5}"].value == pytest.approx(want.weights / 1e9, rel=1e-9)
    assert ws[f"B{total_row - 8}"].value == pieces.UNEVEN == "uneven stages"
