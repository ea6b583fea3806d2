"""`trainbudget measure`: the sustained matmul rate of this machine, checked for correctness.

Method: square matmuls over a sweep of sizes; random operands; a warm-up call; device
synchronization before each clock read; the median of repeats; 2·n³ FLOPs per product. Every
size's product is checked against a float64 reference computed from the same operands on a
sample of rows, with a tolerance suited to the dtype, so a broken or lazy kernel is never
reported as fast. Time is bounded by `seconds`; an interrupt keeps what was measured.
"""

from __future__ import annotations

import datetime as dt
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ... import calc
from .backends import Backend

SIZES = (256, 512, 1024, 2048, 4096, 8192, 16384)
# Relative error allowed for a product row against float64 (accumulation and output rounding).
TOLERANCE = {"fp64": 1e-10, "fp32": 1e-4, "tf32": 1e-2, "fp16": 1e-2, "bf16": 2e-2, "fp8": 3e-2}
CHECK_ROWS = 8
MAX_SECONDS = 3600.0  # an hour: the sweep's sizes are done in well under a minute on any backend


def check_seconds(seconds: float) -> float:
    """The time budget as given, if it is a finite number of seconds in (0, MAX_SECONDS]."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= MAX_SECONDS:
        raise calc.TrainingBudgetError(
            f"seconds must be > 0 and at most {MAX_SECONDS:g} (got {calc.show_value(seconds)})")
    return float(seconds)


# A rate is "sustained" only when its repeats agree: interquartile range at most 20% of the median
# (a busy or throttling machine varies more, and its best repeat is not a rate to plan on).
SUSTAINED_SPREAD = 0.20


class WrongResult(calc.TrainingBudgetError):
    """A kernel's product disagrees with the float64 reference."""


@dataclass
class SizeResult:
    """One size: the median rate of its repeats, their spread, and the check's error."""

    n: int
    tflops: float
    repeats: int
    spread: float  # interquartile range / median of the repeat times (robust to one hiccup)
    error: float


@dataclass
class Measurement:
    """A run's sizes and its sustained rate (`best`: the median of the repeats at the fastest steady
    size; never the fastest single repeat, which biases the rate upward), with its provenance."""

    backend: str
    backend_version: str
    device: str
    hardware: str
    dtype: str
    host: str
    date: str
    sizes: list[SizeResult] = field(default_factory=list)
    interrupted: bool = False

    @property
    def best(self) -> SizeResult:
        """The fastest steady size (spread at most SUSTAINED_SPREAD), else the fastest size."""
        if not self.sizes:
            raise calc.TrainingBudgetError("nothing was measured: allow more --seconds")
        steady = [s for s in self.sizes if s.spread <= SUSTAINED_SPREAD]
        return max(steady or self.sizes, key=lambda s: s.tflops)

    @property
    def sustained(self) -> bool:
        """Whether the best rate held steady across its repeats (spread at most 20%)."""
        return self.best.spread <= SUSTAINED_SPREAD

    def as_dict(self) -> dict[str, Any]:
        best = self.best
        return {**asdict(self), "tflops": best.tflops, "n": best.n, "repeats": best.repeats,
                "spread": best.spread, "sustained": self.sustained}

    def source(self) -> str:
        """Provenance for the Devices table's source column."""
        b = self.best
        return (f"trainbudget measure {self.date}: {self.backend} {self.backend_version} {self.dtype} "
                f"matmul on {self.hardware} ({self.device}), host {self.host}, n={b.n}, "
                f"median of {b.repeats}, spread {b.spread:.1%}")


def check(backend: Backend, a: Any, b: Any, c: Any, dtype: str, seed: int) -> float:
    """Largest relative row error of `c` = `a` @ `b` against float64; raises WrongResult past tolerance."""
    n = c.shape[0]
    idx = np.random.default_rng(seed).choice(n, size=min(CHECK_ROWS, n), replace=False)
    ref = backend.rows(a, idx) @ backend.full(b)
    got = backend.rows(c, idx)
    error = float(np.max(np.linalg.norm(got - ref, axis=1) / np.linalg.norm(ref, axis=1)))
    if not error <= TOLERANCE[dtype]:  # catches NaN too
        raise WrongResult(f"{backend.name} {dtype} matmul at n={n} is wrong: relative error {error:.3g} "
                          f"> {TOLERANCE[dtype]:g}; its rate is not reported")
    return error


def time_size(backend: Backend, n: int, dtype: str, budget_s: float, seed: int = 0) -> SizeResult:
    """Median rate of repeated n x n products within about `budget_s` seconds (at least 3 repeats)."""
    a, b = backend.operands(n, dtype, seed)
    c = backend.matmul(a, b, dtype)  # warm-up (and the product that is checked)
    backend.sync(c)
    error = check(backend, a, b, c, dtype, seed)
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times) < 3 or (time.perf_counter() < deadline and len(times) < 50):
        start = time.perf_counter()
        c = backend.matmul(a, b, dtype)
        backend.sync(c)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    q1, _, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return SizeResult(n, 2.0 * n**3 / median / 1e12, len(times), (q3 - q1) / median, error)


def measure(backend: Backend, dtype: str, seconds: float = 20.0, sizes: tuple[int, ...] = SIZES,
            progress: Callable[[SizeResult], None] | None = None) -> Measurement:
    """Sweep `sizes` until the time runs out (a size that would overrun it is skipped)."""
    if dtype not in backend.dtypes:
        raise calc.TrainingBudgetError(
            f"dtype must be one of {', '.join(backend.dtypes)} for {backend.name} on {backend.device} "
            f"(got {dtype!r})")
    seconds = check_seconds(seconds)
    m = Measurement(backend.name, backend.version, backend.device, backend.hardware, dtype, platform.node(),
                    dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"))
    end = time.perf_counter() + seconds
    per_size = seconds / len(sizes)
    try:
        for n in sizes:
            left = end - time.perf_counter()
            expected = 4 * 2.0 * n**3 / (m.best.tflops * 1e12) if m.sizes else 0.0
            if left <= 0 or expected > left:
                break
            result = time_size(backend, n, dtype, min(per_size, left))
            m.sizes.append(result)
            if progress:
                progress(result)
    except KeyboardInterrupt:
        m.interrupted = True
    return m
