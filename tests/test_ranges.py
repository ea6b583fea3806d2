"""Ranges: utilization="prior" on the four functions and train_range broadcast; low <= expected <= high."""

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc import ranges

H100 = "H100 SXM, BF16 tensor core, dense"


def _factors():
    p = calc.utilization_prior()
    return np.array([1 / (p.high * p.goodput), 1 / (p.expected * p.goodput), 1 / (p.low * p.goodput)])


def test_four_functions_accept_prior_with_a_trailing_axis_of_three():
    f = _factors()
    for fn, extra in ((calc.train_hours, {}), (calc.gpu_hours, {}), (calc.train_energy_kwh, {"pue": 1.2}),
                      (calc.train_cost, {"usd_per_device_hour": 2.5})):
        point = fn(7e9, 1e12, H100, devices=8, utilization=1.0, **extra)
        got = fn(7e9, 1e12, H100, devices=8, utilization="prior", **extra)
        assert got.shape == (3,)
        assert got == pytest.approx(point * f)
        assert got[0] <= got[1] <= got[2]


def test_ranges_broadcast_over_scenarios():
    params = np.array([1e9, 7e9, 70e9])
    got = calc.train_hours(params[:, None], np.array([1e11, 1e12]), H100, utilization="prior")
    assert got.shape == (3, 2, 3)
    assert got[2, 1] == pytest.approx(calc.train_hours(70e9, 1e12, H100, utilization="prior"))
    assert (np.diff(got, axis=-1) >= 0).all()


def test_train_range_matches_the_functions():
    r = calc.train_range([7e9, 13e9], 1e12, H100, devices=16, usd_per_device_hour=2.0, pue=1.1)
    assert set(r) == {"hours", "device_hours", "usd", "kwh"}
    assert r["hours"] == pytest.approx(calc.train_hours([7e9, 13e9], 1e12, H100, devices=16, utilization="prior"))
    assert r["device_hours"] == pytest.approx(r["hours"] * 16)
    assert r["usd"] == pytest.approx(r["device_hours"] * 2.0)
    assert r["kwh"] == pytest.approx(calc.train_energy_kwh([7e9, 13e9], 1e12, H100, pue=1.1, devices=16,
                                                           utilization="prior"))
    assert "usd" not in calc.train_range(7e9, 1e12, 500.0)
    assert "kwh" not in calc.train_range(7e9, 1e12, 500.0)


def test_a_narrowed_prior_object_is_accepted():
    hopper = calc.utilization_prior("hopper")
    got = calc.gpu_hours(7e9, 1e12, H100, utilization=hopper)
    assert got == pytest.approx(calc.gpu_hours(7e9, 1e12, H100) * hopper.hour_factors())


def test_fp8_rows_use_the_same_hardwares_bf16_peak():
    fp8 = calc.train_hours(7e9, 1e12, "H100 SXM, FP8 tensor core, dense", utilization="prior")
    assert fp8 == pytest.approx(calc.train_hours(7e9, 1e12, H100, utilization="prior"))
    assert ranges.prior_device("M3 Ultra, MLX fp32 matmul (measured)").startswith("M3 Ultra, MLX")


def test_bad_utilization_text_is_refused():
    with pytest.raises(calc.TrainingBudgetError, match="utilization"):
        calc.train_hours(7e9, 1e12, H100, utilization="typical")


def test_price_spec_in_train_cost():
    dh = calc.gpu_hours(7e9, 1e12, H100, utilization=0.4)
    assert calc.train_cost(7e9, 1e12, H100, usd_per_device_hour="lambda:on_demand", utilization=0.4) == \
        pytest.approx(dh * 3.99)
    assert calc.train_cost(7e9, 1e12, H100, usd_per_device_hour="2.5", utilization=0.4) == pytest.approx(dh * 2.5)
    with pytest.raises(calc.TrainingBudgetError, match="no aws 3yr price"):
        calc.train_cost(7e9, 1e12, H100, usd_per_device_hour="aws:3yr")


def test_readme_range_transcript_is_real_output():
    from tests.conftest import ROOT, run_cli

    args = ("estimate", "--range", "--params", "70B", "--tokens", "2T", "--device", H100, "--devices", "512",
            "--price", "2.5")
    assert run_cli(*args, check=True).stdout.strip() in (ROOT / "README.md").read_text("utf-8")
