"""Usable device memory: one rule (calc/capacity.py) that budget, fit and plan share, and a
default reserve that covers what the driver hides plus the runtime's own memory."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from trainbudget import calc
from trainbudget.calc.hardware import capacity, catalog as devices

GIB = 2.0 ** 30


@pytest.mark.parametrize(("gib", "usable_gib"), [(80, 76.0), (141, 133.95), (40, 37.0), (24, 21.0), (192, 182.4)])
def test_usable_is_capacity_less_the_larger_of_3_gib_and_5_percent(gib, usable_gib):
    assert capacity.usable_bytes_of(float(gib)) == pytest.approx(usable_gib * GIB)


def test_it_broadcasts_and_a_given_reserve_wins():
    got = capacity.usable_bytes_of(np.array([40.0, 80.0, 141.0]))
    assert got.tolist() == pytest.approx([37 * GIB, 76 * GIB, 133.95 * GIB])
    assert capacity.usable_bytes_of(80.0, reserve_gib=1) == 79 * GIB
    assert capacity.usable_bytes_of(None) is None
    with pytest.raises(calc.TrainingBudgetError, match="reserve_gib"):
        capacity.usable_bytes_of(80.0, reserve_gib=-1)


@pytest.mark.parametrize("hardware", sorted(capacity.reported_memory_gib()))
def test_default_reserve_covers_what_the_driver_hides_plus_the_runtime(hardware):
    """nvidia-smi's figure (data/device_memory_reported.csv) less RESERVE_GIB for the CUDA context,
    NCCL and the allocator is still above the usable memory the rule gives."""
    row = next(d for d in devices.catalog() if d.hardware == hardware and d.memory_gib)
    reported = capacity.reported_memory_gib()[hardware]
    assert reported < row.memory_gib  # the driver hides some
    assert capacity.usable_bytes_of(row.memory_gib) <= (reported - capacity.RESERVE_GIB) * GIB


def test_budget_and_fit_count_the_same_usable_memory():
    h100 = "H100 SXM, BF16 tensor core, dense"
    assert calc.usable_bytes(h100) == calc.fit_layouts("Llama 3.1 8B", h100, 8).memory_bytes
    b = calc.budget(calc.job(params=8e9, tokens=1e9, device=h100, devices=8, zero_stage=3))
    assert b.headroom_bytes == pytest.approx(calc.usable_bytes(h100) - b.memory.total)


# --- devices needed: the smallest count at which budget() says the job fits --------------------

MEMORY_ROWS = sorted(d.name for d in devices.catalog() if d.memory_gib)


@settings(max_examples=150, deadline=None)
@given(st.floats(1e8, 2e12), st.sampled_from(MEMORY_ROWS), st.sampled_from((0, 1, 2, 3)),
       st.sampled_from(calc.METHODS), st.sampled_from(calc.OPTIMIZERS), st.floats(0.0, 40e9))
def test_devices_needed_is_the_smallest_count_at_which_the_budget_fits(params, device, stage, method,
                                                                     optimizer, activations):
    """calc.devices_needed counts against the usable memory budget().fits judges by: the job fits
    on devices_needed devices and not on one fewer (inf: it fits on no count)."""
    n = calc.devices_needed(params, device, zero_stage=stage, method=method, optimizer=optimizer,
                            activations=activations)
    job = calc.job(params=params, device=device, zero_stage=stage, method=method, optimizer=optimizer,
                   activations=activations)

    def fits(k: float) -> bool:
        return bool(calc.budget(job.with_(devices=float(k))).fits)

    if n == np.inf:
        assert not fits(2.0 ** 20)
    else:
        assert fits(n)
        assert n == 1 or not fits(n - 1)


def test_devices_needed_arrays_agree_with_the_budget():
    """The array path gives the same counts, and budget() over the same arrays fits at them."""
    params = np.array([10.3e9, 70.6e9, 8e9, 405e9])
    stage = np.array([3, 3, 2, 3])
    h100 = "H100 SXM, BF16 tensor core, dense"
    n = calc.devices_needed(params, h100, zero_stage=stage)
    b = calc.budget(calc.job(params=params, device=h100, zero_stage=stage, devices=n))
    assert np.asarray(b.fits).all()
    fewer = calc.budget(calc.job(params=params, device=h100, zero_stage=stage, devices=np.maximum(n - 1, 1)))
    assert not np.asarray(fewer.fits)[n > 1].any()


def test_devices_needed_counts_usable_memory_and_a_given_reserve_wins():
    """10.3B with ZeRO-3 on an H100 is 164.8e9 B of states (16 B/param); the usable
    76 GiB = 81.6e9 B holds 2.02 of them -> 3 devices (the full 80 GiB = 85.9e9 B would say 1.92 -> 2,
    on which budget() says it does not fit). 70.6B: 1129.6e9 B / 81.6e9 = 13.84 -> 14 (13.15 on the
    full capacity: 14 too). reserve_gib=0 counts against the whole capacity, as fit's --reserve-gib."""
    h100 = "H100 SXM, BF16 tensor core, dense"
    assert calc.devices_needed(10.3e9, h100, zero_stage=3) == 3
    assert calc.devices_needed(70.6e9, h100, zero_stage=3) == 14
    assert calc.devices_needed(10.3e9, h100, zero_stage=3, reserve_gib=0) == 2
    assert calc.devices_needed(10.3e9, h100, zero_stage=3, memory_gib=80.0, reserve_gib=4) == 3
    assert not calc.budget(calc.job(params=10.3e9, device=h100, zero_stage=3, devices=2)).fits
