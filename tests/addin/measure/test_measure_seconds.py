"""`measure --seconds` and measure's API refuse a time outside (0, 3600] s."""

from __future__ import annotations

import math

import pytest

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.addin.measure import backends, core as measure


@pytest.mark.parametrize("seconds", ["inf", "0", "-1", "1e9", "nan", "3600.5", "1,5"])
def test_measure_seconds_bounded(seconds, tmp_path):
    proc = invoke("measure", "--backend", "numpy", f"--seconds={seconds}")
    assert proc.returncode == 2
    want = {"inf": "--seconds must be a finite number", "nan": "--seconds must be a finite number",
            "1,5": "--seconds: write 1.5"}.get(seconds, "seconds must be > 0 and at most 3600")  # read as the counts
    assert proc.stderr.count("\n") == 1 and want in proc.stderr, proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("seconds", [math.inf, 0, -1, 1e9, math.nan, True])
def test_measure_api_refuses_unbounded_time(seconds):
    with pytest.raises(calc.TrainingBudgetError, match="seconds must be > 0 and at most 3600"):
        measure.measure(backends.numpy_backend(), "fp64", seconds=seconds, sizes=(64,))
