"""Usable device memory: one rule (calc/capacity.py) that budget, fit and plan share, and a
default reserve that covers what the driver hides plus the runtime's own memory."""

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc import capacity, devices

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
    b = calc.budget(calc.Job(params=8e9, tokens=1e9, device=h100, devices=8, zero_stage=3))
    assert b.headroom_bytes == pytest.approx(calc.usable_bytes(h100) - b.memory.total)
