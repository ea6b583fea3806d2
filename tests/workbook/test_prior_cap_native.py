"""The workbook's native prior (prior_native) caps at 100% of the peak as calc does, recalculated by
LibreOffice at jobs far outside the runs (and one inside them)."""

from __future__ import annotations

import pytest

from tests.workbook import test_prior_native as lo_prior
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.calc.prior import utilization as prior

H100 = "H100 SXM, BF16 tensor core, dense"

A100 = "A100 SXM 80GB, BF16 tensor core, dense"

ABSURD = [  # (device, active params, devices, tokens): the model's expected or high above 1
    (H100, 1.0, 1e286, 1.0), (H100, 1e14, 1e4, 1e18), (H100, 1e14, 1e4, 1e17), (A100, 1e13, 1e5, 1e16)]


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
