"""A figure that underflows or overflows is a named refusal, never a silent 0 or inf, at every door (calc, the
command line, the cell): devices=1e308 made the rate overflow and the hours 0; params and tokens of 1e-300
made the FLOPs 0; a huge budget (or a price near 0) bought inf tokens. Property tests over the whole float64
range: every answer is a finite positive number or a TrainingBudgetError, whichever module raises it."""

from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests.conftest import invoke, run_cli
from trainbudget import calc
from trainbudget.addin.udf import udfs
from trainbudget.calc.base.errors import TINY
from trainbudget.calc.planning import inverse


def test_one_error_class_whichever_module_it_is_imported_from() -> None:
    from trainbudget import calc
    from trainbudget.calc.base import errors
    assert calc.TrainingBudgetError is errors.TrainingBudgetError
    assert issubclass(errors.ResultOverflowError, errors.TrainingBudgetError)

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
    job = calc.job(params=7e9, tokens=1e12, device=H100, devices=1e308, utilization=utilization)
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
    lambda: calc.budget(calc.job(params=1e-300, tokens=1e-300, device=H100)),
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
    job = calc.job(params=params, tokens=tokens, device=H100, devices=devices, utilization=utilization)
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


def one_line_refusal(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-300:], proc.stderr[-600:])
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-600:]
    assert "Traceback" not in proc.stderr


def test_overflow_is_one_line(tmp_path):
    """`estimate --params 1e308` printed numpy's RuntimeWarnings (8 lines with source) before the error."""
    one_line_refusal(run_cli("estimate", "--params", "1e308", "--tokens", "1"))
