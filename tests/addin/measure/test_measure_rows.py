"""Whole measured rows: memory and watts recorded, what is missing said plainly, and no rate
called sustained when its repeats disagree by more than 20%."""

from __future__ import annotations

import shutil
from pathlib import Path

import openpyxl

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.addin.measure import backends, hardware, into
from trainbudget.addin.measure.core import Measurement, SizeResult


def _measurement(*sizes: SizeResult) -> Measurement:
    return Measurement("numpy", "2", "cpu", "Lab CPU", "fp32", "host", "2026-11-30", list(sizes))


def test_best_is_the_fastest_steady_size():
    m = _measurement(SizeResult(256, 0.21, 50, 0.07, 1e-7), SizeResult(512, 0.25, 50, 6.54, 1e-7))
    assert m.best.n == 256 and m.sustained
    assert "sustained rate: 0.21 TFLOP/s (numpy fp32, n=256: the median of 50 repeats" in into.text(m)


def test_unsteady_rate_is_not_called_sustained():
    m = _measurement(SizeResult(256, 0.206, 5, 5.73, 1e-7), SizeResult(512, 0.1, 5, 0.5, 1e-7))
    assert not m.sustained and m.best.n == 256
    text = into.text(m)
    assert "sustained rate" not in text and "NOT sustained" in text and "0.206 TFLOP/s" in text
    assert "not sustained" in into.as_device(m).note


def test_row_carries_memory_watts_and_three_digits():
    m = _measurement(SizeResult(256, 0.20649, 50, 0.05, 1e-7))
    d = into.as_device(m, "Lab", memory_gib=96.0, watts=350.0)
    assert (d.tflops, d.memory_gib, d.watts) == (0.206, 96.0, 350.0)


def test_missing_figures_named_with_the_results_they_leave_empty():
    text = hardware.missing_text(None, None)
    assert "--memory-gib" in text and "Devices needed to fit" in text
    assert "--watts" in text and "Energy (kWh)" in text
    assert hardware.missing_text(80.0, 700.0) == ""


def test_cpu_backend_reads_nothing_it_cannot_know():
    numpy = backends.numpy_backend()
    assert hardware.memory_gib(numpy) is None and hardware.watts(numpy) is None


def test_cli_records_given_memory_and_watts(built, tmp_path):
    path = Path(shutil.copyfile(built.path, tmp_path / "TrainingBudget.xlsm"))
    proc = invoke("measure", "--backend", "numpy", "--seconds", "1", "--into", str(path), "--name", "Lab",
                   "--memory-gib", "64", "--watts", "120")
    assert proc.returncode == 0, proc.stderr
    assert "not known" not in proc.stdout
    ws = openpyxl.load_workbook(path)["Devices"]
    row = len(calc.catalog()) + 2
    assert (ws[f"A{row}"].value, ws[f"F{row}"].value, ws[f"H{row}"].value) == ("Lab", 64, 120)
    proc = invoke("measure", "--backend", "numpy", "--seconds", "1", "--into", str(path), "--name", "Lab2")
    assert "pass --memory-gib" in proc.stdout and "pass --watts" in proc.stdout


class _Uneven(backends.Backend):
    """numpy's product, then a wait that makes every fifth repeat three times faster than the rest."""

    calls = 0

    def sync(self, c):
        import time

        type(self).calls += 1
        time.sleep(0.01 if self.calls % 5 == 0 else 0.03)


def test_the_rate_is_the_median_repeat_not_the_fastest():
    """A size's rate is 2n^3 over the median repeat time: a few fast repeats do not raise it."""
    from trainbudget.addin.measure import core

    b = _Uneven("numpy", "cpu", ("fp32",), "2", "Lab CPU")
    r = core.time_size(b, 64, "fp32", budget_s=0.6)
    assert r.repeats >= 10
    median_rate = 2 * 64**3 / 0.03 / 1e12  # the fastest repeat's would be 3x this
    assert 0.5 * median_rate < r.tflops <= median_rate  # a sleep only overshoots: at most the median's rate
