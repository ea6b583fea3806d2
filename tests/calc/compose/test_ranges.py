"""Ranges: train_range and budget() over the prior, broadcast; low <= expected <= high; the point
functions refuse "prior"."""

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc.compose import ranges
from trainbudget.calc.prior import utilization as calc_prior

H100 = "H100 SXM, BF16 tensor core, dense"


def _factors(params=7e9, tokens=1e12, devices=8, device=None):
    """The job's own prior's hour factors (calc_prior.job_prior of a dense job), recomputed."""
    p = calc_prior.job_prior(device or H100, active_params=params, devices=devices, tokens=tokens)
    return np.array([1 / (p.high * p.goodput), 1 / (p.expected * p.goodput), 1 / (p.low * p.goodput)])


@pytest.mark.parametrize("fn", [calc.train_hours, calc.gpu_hours, calc.train_energy_kwh, calc.train_cost])
def test_point_functions_refuse_a_range_and_point_to_train_range(fn):
    """schedule returns points only (no import of the prior: no cycle); a range is train_range's."""
    with pytest.raises(calc.TrainingBudgetError, match="train_range"):
        fn(7e9, 1e12, H100, devices=8, utilization="prior", usd_per_device_hour=2.5) if fn is calc.train_cost \
            else fn(7e9, 1e12, H100, devices=8, utilization="prior")


def test_train_range_is_the_points_times_the_priors_factors():
    f = _factors()
    r = calc.train_range(7e9, 1e12, H100, devices=8, usd_per_device_hour=2.5, pue=1.2)
    for key, fn, extra in (("hours", calc.train_hours, {}), ("device_hours", calc.gpu_hours, {}),
                           ("kwh", calc.train_energy_kwh, {"pue": 1.2}),
                           ("usd", calc.train_cost, {"usd_per_device_hour": 2.5})):
        point = fn(7e9, 1e12, H100, devices=8, utilization=1.0, **extra)
        assert r[key].shape == (3,)
        assert r[key] == pytest.approx(point * f)
        assert r[key][0] <= r[key][1] <= r[key][2]


def test_ranges_broadcast_over_scenarios():
    params = np.array([1e9, 7e9, 70e9])
    got = calc.train_range(params[:, None], np.array([1e11, 1e12]), H100)["hours"]
    assert got.shape == (3, 2, 3)
    assert got[2, 1] == pytest.approx(calc.train_range(70e9, 1e12, H100)["hours"])
    assert (np.diff(got, axis=-1) >= 0).all()


def test_train_range_equals_budget():
    r = calc.train_range([7e9, 13e9], 1e12, H100, devices=16, usd_per_device_hour=2.0, pue=1.1)
    assert set(r) == {"hours", "device_hours", "usd", "kwh"}
    b = calc.budget(calc.job(params=np.array([7e9, 13e9]), tokens=1e12, devices=16, utilization="prior",
                             price=2.0, pue=1.1))
    for key, span in (("hours", b.hours), ("device_hours", b.device_hours), ("usd", b.cost_usd),
                      ("kwh", b.energy_kwh)):
        assert r[key] == pytest.approx(np.stack(span.as_tuple(), axis=-1))
    assert "usd" not in calc.train_range(7e9, 1e12, 500.0)
    assert "kwh" not in calc.train_range(7e9, 1e12, 500.0)


def test_a_narrowed_prior_object_is_accepted():
    hopper = calc.utilization_prior("hopper")
    got = calc.train_range(7e9, 1e12, H100, prior=hopper)["device_hours"]
    assert got == pytest.approx(calc.gpu_hours(7e9, 1e12, H100) * hopper.hour_factors())
    b = calc.budget(calc.job(params=7e9, tokens=1e12, utilization=hopper))
    assert b.device_hours.as_tuple() == pytest.approx(tuple(got))


def test_fp8_rows_use_the_same_hardwares_bf16_peak():
    fp8 = calc.train_range(7e9, 1e12, "H100 SXM, FP8 tensor core, dense")["hours"]
    assert fp8 == pytest.approx(calc.train_range(7e9, 1e12, H100)["hours"])
    assert ranges.prior_device("M3 Ultra, MLX fp32 matmul (measured)").startswith("M3 Ultra, MLX")


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"utilization": 0.4}, "takes its utilizations from the prior"),   # was applied on top of the prior
    ({"prior": "prior"}, "prior must be a UtilizationPrior"),          # was an AttributeError
    ({"usd_per_device_hour": "-5"}, "must be a number or PROVIDER:PLAN"),  # was a negative range
    ({"usd_per_device_hour": -5.0}, "usd_per_device_hour must be >= 0"),
])
def test_train_range_refuses(kwargs, needle):
    with pytest.raises(calc.TrainingBudgetError, match=needle):
        calc.train_range(7e9, 1e12, H100, **kwargs)


def test_bad_utilization_text_is_refused():
    with pytest.raises(calc.TrainingBudgetError, match="utilization"):
        calc.train_hours(7e9, 1e12, H100, utilization="typical")


def test_price_spec_in_train_cost():
    dh = calc.gpu_hours(7e9, 1e12, H100, utilization=0.4)
    assert calc.train_cost(7e9, 1e12, H100, usd_per_device_hour="lambda:on_demand", utilization=0.4) == \
        pytest.approx(dh * 3.99)
    with pytest.raises(calc.TrainingBudgetError, match="must be a number or PROVIDER:PLAN"):  # '7e9'
        calc.train_cost(7e9, 1e12, H100, usd_per_device_hour="7e9", utilization=0.4)
    with pytest.raises(calc.TrainingBudgetError, match="unknown device 'H10'"):  # not blamed on the price
        calc.train_cost(7e9, 1e12, "H10", usd_per_device_hour="aws")
    with pytest.raises(calc.TrainingBudgetError, match="no aws 3yr price"):
        calc.train_cost(7e9, 1e12, H100, usd_per_device_hour="aws:3yr")


def test_readme_range_transcript_is_real_output():
    from tests.conftest import ROOT, invoke

    args = ("estimate", "--range", "--params", "70B", "--tokens", "2T", "--device", H100, "--devices", "512",
            "--price", "2.5")
    assert invoke(*args, check=True).stdout.strip() in (ROOT / "README.md").read_text("utf-8")


def test_job_keyed_prior_through_budget_array_equals_scalar():
    """utilization="prior:job": each job's own prior; an array of jobs equals the jobs one by one,
    bit for bit, and an MoE job (fewer active than total parameters) reads as MoE."""
    from trainbudget.calc.prior import utilization as prior
    h100 = "H100 SXM, BF16 tensor core, dense"
    params = np.array([7e9, 70e9, 405e9])
    n = np.array([64.0, 2048.0, 16384.0])
    arr = calc.budget(calc.job(params=params, tokens=15e12, device=h100, devices=n, utilization="prior:job",
                               price=2.0))
    for i in range(3):
        one = calc.budget(calc.job(params=float(params[i]), tokens=15e12, device=h100, devices=float(n[i]),
                                   utilization="prior:job", price=2.0))
        for name in ("hours", "device_hours", "cost_usd"):
            a, b = getattr(arr, name), getattr(one, name)
            assert (a.low[i], a.expected[i], a.high[i]) == (b.low, b.expected, b.high)
    p = prior.job_prior(h100, active_params=70e9, devices=2048, moe=False, tokens=15e12)
    one = calc.budget(calc.job(params=70e9, tokens=15e12, device=h100, devices=2048, utilization="prior:job"))
    assert one.utilization.as_tuple() == (p.low, p.expected, p.high) and one.utilization_basis == f"prior: {p.basis}"
    moe = calc.budget(calc.job(params=47e9, active_params=13e9, tokens=1e12, device=h100, devices=512,
                               utilization="prior:job"))
    assert moe.prior.expected == prior.job_prior(h100, active_params=13e9, devices=512, moe=True,
                                                 tokens=1e12).expected
    assert moe.prior.expected != prior.job_prior(h100, active_params=13e9, devices=512, moe=False,
                                                 tokens=1e12).expected
    g = calc.budget(calc.job(params=70e9, tokens=15e12, device=h100, devices=2048, utilization="prior:job",
                             goodput=0.8))
    assert g.hours.expected == pytest.approx(one.hours.expected * prior.GOODPUT / 0.8, rel=1e-12)
