"""The utilization prior never exceeds 100% of the peak: expected = min(1, model), the band its constant
factors around it, low and high at most 1, and the basis says "capped"; devices for a deadline and tokens
for a budget stay exact where the cap stops the devices^b growth; hours never beat the hours at the peak."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given

from tests.calc.base.test_out_of_range import SETTINGS, _answer_or_refusal, count, magnitude
from trainbudget import calc
from trainbudget.calc.base.errors import TINY
from trainbudget.calc.planning import inverse
from trainbudget.calc.prior import utilization as prior

H100 = "H100 SXM, BF16 tensor core, dense"



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
    job = calc.job(params=active, tokens=tokens, device=H100, devices=1024, utilization="prior")
    b, at_peak = calc.budget(job), calc.budget(job.with_(utilization=1.0))
    assert min(b.hours.as_tuple()) >= at_peak.hours / prior.GOODPUT * (1 - 1e-12)


@pytest.mark.parametrize("case", ["low", "expected", "high"])
def test_devices_for_days_are_the_fewest_where_the_prior_is_capped(case):
    job = calc.job(params=1e14, tokens=1e17, device=H100, utilization="prior")  # capped at every count
    n = inverse.devices_for(job, 30.0, case=case, memory=False)
    assert math.isfinite(n)  # the closed form (utilization growing as devices^b) fell short: inf before
    hours = [getattr(calc.budget(job.with_(devices=k)).hours, case) for k in (n, n - 1)]
    assert hours[0] <= 24 * 30.0 * (1 + 1e-12) < hours[1]


@pytest.mark.parametrize("case", ["low", "expected", "high"])
def test_tokens_for_a_budget_never_overspend_where_the_prior_is_capped(case):
    job = calc.job(params=1e14, tokens=1e17, device=H100, devices=1024, utilization="prior", price=2.0)
    usd = 1e15
    t = inverse.tokens_for(job, usd, case=case)
    spent = {"low": "high", "high": "low"}.get(case, case)  # the most tokens come from the low cost
    cost = [getattr(calc.budget(job.with_(tokens=k)).cost_usd, spent) for k in (t, t * (1 + 1e-9))]
    assert cost[0] <= usd < cost[1]  # was 1.30 x the budget for the high case


@SETTINGS
@given(magnitude, magnitude, count)
def test_ranges_are_finite_positive_and_never_beat_the_peak_or_refused(params, tokens, devices):
    got = _answer_or_refusal(lambda: calc.train_range(params, tokens, H100, devices=devices)["hours"])
    at_peak = _answer_or_refusal(lambda: calc.train_hours(params, tokens, H100, devices=devices))
    assert got is None or (np.isfinite(got).all() and (got >= at_peak * (1 - 1e-12)).all()), (params, tokens, got)
    job = calc.job(params=params, tokens=tokens, device=H100, devices=devices, utilization="prior")
    b = _answer_or_refusal(lambda: calc.budget(job).hours.as_tuple())
    assert b is None or (np.isfinite(b).all() and (b >= TINY).all()), (params, tokens, devices, b)


H100 = "H100 SXM, BF16 tensor core, dense"


@pytest.mark.parametrize("kwargs", [{"active_params": 1e308}, {"devices": 1e308}])
def test_prior_of_extreme_jobs_says_its_decade(kwargs):
    prior = calc.utilization_prior(H100, **kwargs)  # the basis's decade once ended in an OverflowError
    assert "or more" in prior.basis and math.isfinite(prior.expected)
