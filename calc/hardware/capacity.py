"""Usable device memory: one rule for budget, fit, plan and the workbook's native formulas.

A device's memory is a capacity in GiB (a vendor's "80GB" of HBM is 80 GiB: calc.hardware.catalog). A
training job cannot use all of it:
- the driver hides part of it: nvidia-smi shows 81,559 MiB (79.65 GiB) on an H100 80GB and
  143,771 MiB (140.4 GiB) on an H200 141GB, 0.4% less (data/device_memory_reported.csv);
- the CUDA context, NCCL's buffers and the caching allocator's fragmentation take 1-5 GiB more
  in practice (PyTorch CUDA semantics, "Memory management"; NCCL environment docs,
  NCCL_BUFFSIZE).
So usable = capacity - reserve, with reserve = max(RESERVE_GIB, RESERVE_SHARE x capacity) unless
a reserve is given: 76 GiB of an H100's 80, 133.95 GiB of an H200's 141. The rule is simple
enough for a spreadsheet (MAX of two numbers), so the Budget sheet computes the same figure;
tests/calc/hardware/test_capacity.py checks that the default reserve covers what the driver hides plus
RESERVE_GIB on every device whose reported memory is on file.
"""

from __future__ import annotations

import csv
import functools
from importlib import resources
from typing import Any

import numpy as np

from ..base.checks import non_negative

GIB = 2.0 ** 30       # device memory is a capacity in GiB
RESERVE_GIB = 3.0     # CUDA context + NCCL + allocator fragmentation (1-5 GiB in practice; see above)
RESERVE_SHARE = 0.05  # a share of large memories, covering what the driver hides as well


def reserve_bytes(capacity_bytes: Any, reserve_gib: Any = None) -> Any:
    """Bytes kept back on a device of `capacity_bytes`: `reserve_gib` GiB when given, else the
    larger of RESERVE_GIB and RESERVE_SHARE of the capacity. Broadcasts."""
    if reserve_gib is not None:
        return non_negative("reserve_gib", reserve_gib) * GIB
    if isinstance(capacity_bytes, float):
        return max(RESERVE_GIB * GIB, RESERVE_SHARE * capacity_bytes)
    return np.maximum(RESERVE_GIB * GIB, RESERVE_SHARE * np.asarray(capacity_bytes, dtype=float))


def usable_bytes_of(capacity_gib: Any, reserve_gib: Any = None) -> Any:
    """Bytes a job may use on a device of `capacity_gib` GiB (None stays None)."""
    if capacity_gib is None:
        return None
    cap = capacity_gib * GIB
    return cap - reserve_bytes(cap, reserve_gib)


def words(reserve_gib: Any = None) -> str:
    """The reserve in words, for every door that prints a fit."""
    if reserve_gib is not None:
        return f"{float(non_negative('reserve_gib', reserve_gib)):g} GiB"
    return f"the larger of {RESERVE_GIB:g} GiB and {RESERVE_SHARE:.0%}"


@functools.lru_cache(maxsize=1)
def reported_memory_gib() -> dict[str, float]:
    """Memory each hardware reports to software, GiB (data/device_memory_reported.csv): the
    evidence the default reserve is checked against, not a second capacity."""
    text = resources.files(__name__.rsplit(".", 2)[0]).joinpath("data/device_memory_reported.csv").read_text("utf-8")
    return {r["hardware"]: float(r["reported_mib"]) / 1024.0 for r in csv.DictReader(text.splitlines())}
