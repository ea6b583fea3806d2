"""Hours, device-hours, cost, energy and devices needed."""

import math

import numpy as np
import pytest

from trainbudget import calc

H100 = "H100 SXM, BF16 tensor core, dense"


def test_seed_hours():
    # hours = 6·N·D / (rate·1e12) / 3600, the seed's formula
    for name in calc.SEED_DEVICES:
        rate = calc.catalog().get(name).tflops
        assert calc.train_hours(7e9, 1e9, name) == pytest.approx(42e18 / (rate * 1e12) / 3600)


def test_hours_scale_with_utilization_and_devices():
    base = calc.train_hours(7e9, 1e9, H100)
    assert calc.train_hours(7e9, 1e9, H100, utilization=0.4, devices=8) == pytest.approx(base / 3.2)


def test_device_as_number_means_tflops():
    assert calc.train_hours(7e9, 1e9, 989.5) == calc.train_hours(7e9, 1e9, H100)


def test_device_names_are_case_and_space_insensitive():
    assert calc.device_tflops("  h100 sxm,BF16   TENSOR core, dense") == 989.5


def test_device_array_mixes_names_and_numbers():
    got = calc.train_hours(7e9, 1e9, [H100, 989.5, "H100 SXM, FP8 tensor core, dense"])
    assert got[0] == got[1] == pytest.approx(2 * got[2])


def test_gpu_hours_and_cost():
    h = calc.train_hours(7e9, 1e12, H100, utilization=0.5, devices=16)
    assert calc.gpu_hours(7e9, 1e12, H100, utilization=0.5, devices=16) == pytest.approx(16 * h)
    cost = calc.train_cost(7e9, 1e12, H100, utilization=0.5, devices=16, usd_per_device_hour=2.5)
    assert cost == pytest.approx(16 * h * 2.5)


def test_cost_needs_a_price():
    with pytest.raises(calc.TrainingBudgetError, match="usd_per_device_hour"):
        calc.train_cost(7e9, 1e9, H100)


def test_cost_uses_the_rows_price():
    table = calc.DeviceTable([calc.Device("rented", 100.0, usd_per_device_hour=3.0, source="quote")])
    assert calc.train_cost(1e9, 1e9, "rented", table=table) == pytest.approx(
        3.0 * calc.gpu_hours(1e9, 1e9, 100.0))


def test_energy():
    dh = calc.gpu_hours(7e9, 1e12, H100, devices=8)
    assert calc.train_energy_kwh(7e9, 1e12, H100, devices=8, pue=1.2) == pytest.approx(
        700 * dh * 1.2 / 1000)
    with pytest.raises(calc.TrainingBudgetError, match="watts"):
        calc.train_energy_kwh(7e9, 1e9, 500.0)
    assert calc.train_energy_kwh(7e9, 1e9, 500.0, watts=300) > 0


def test_devices_needed_zero_3_and_0():
    # 70B full fine-tune: 1.12 TB of states; ZeRO-3 shards all of it over 76 GiB usable per card
    assert calc.devices_needed(70e9, H100, zero_stage=3) == math.ceil(70e9 * 16 / (76 * 2**30))
    assert calc.devices_needed(7e9, H100, zero_stage=0, method="lora") == 1
    assert calc.devices_needed(70e9, H100, zero_stage=0) == math.inf


def test_devices_needed_is_smallest_that_fits():
    stages = np.array([1, 2, 3])
    n = calc.devices_needed(13e9, H100, zero_stage=stages, activations=10e9)
    for stage, count in zip(stages, n, strict=True):
        fits = calc.train_bytes(13e9, zero_stage=stage, devices=count, activations=10e9)
        assert fits <= calc.usable_bytes(H100)  # 76 GiB: 80 less the reserve (calc/capacity.py)
        if count > 1:
            less = calc.train_bytes(13e9, zero_stage=stage, devices=count - 1, activations=10e9)
            assert less > calc.usable_bytes(H100)


def test_scalars_give_floats_arrays_broadcast():
    assert isinstance(calc.train_hours(7e9, 1e9, H100), float)
    got = calc.train_hours(np.array([[7e9], [70e9]]), 1e12, H100, utilization=[0.3, 0.4, 0.5])
    assert got.shape == (2, 3)
    assert got[1, 2] == pytest.approx(calc.train_hours(70e9, 1e12, H100, utilization=0.5))


@pytest.mark.parametrize(("stage", "tp", "pp", "ep", "method"), [
    (0, 1, 1, 1, "full"), (1, 2, 1, 2, "full"), (2, 1, 2, 4, "lora"), (3, 2, 2, 2, "full"), (3, 4, 1, 8, "qlora"),
])
def test_devices_needed_one_point_equals_two_points(stage, tp, pp, ep, method):
    """devices_needed reads the sharded bytes off one train_memory call; the general rule (bytes at
    data parallel e and 2e) must give the same count."""
    kw = {"method": method, "zero_stage": stage, "tensor_parallel": tp, "pipeline_parallel": pp,
          "expert_parallel": ep, "expert_params": 40e9, "activations": 3e9}
    split = tp * pp

    def at(dp):
        return calc.train_memory(70e9, devices=dp * split, **kw).total

    sharded = 2 * ep * (at(ep) - at(2 * ep))
    room = calc.usable_bytes(H100) - (at(ep) - sharded / ep)
    want = math.inf if room <= 0 else max(math.ceil(sharded / room / ep * (1 - 1e-12)) * ep, ep) * split
    assert calc.devices_needed(70e9, H100, **kw) == want
