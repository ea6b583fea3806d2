"""Benchmark: one whole question as a Budget, and today's functions asked the same, in one run.

The question: a 13B full fine-tune on 1T tokens, 64 H100s, TP 2, ZeRO 3, at the utilization prior
(low / expected / high), priced at 2.5 USD per device-hour, PUE 1.2: memory per device on the
layout (and whether it fits), hours, days, device-hours, cost and energy as ranges.
- scalar: `budget(Job(...))` (the Job built inside the timing, as a door does) against
  train_memory + train_range (what a caller needed before);
- vector: 1e6 jobs (params, tokens, devices and ZeRO stage varying) in one budget() call against
  train_memory + train_range over the same arrays.
Run: python bench/bench_budget.py [N]. Prints figures; asserts nothing (goals, issue 17: <= 10 us
per scalar question, <= 50 ns per job over 1e6 jobs with ranges).
"""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable

import numpy as np

from trainbudget import calc

H100 = "H100 SXM, BF16 tensor core, dense"


def us(fn: Callable[[], object]) -> float:
    """Best-of-7 microseconds per call."""
    t = timeit.Timer(fn)
    number, _ = t.autorange()
    return min(t.repeat(7, number)) / number * 1e6


def best_s(fn: Callable[[], object], repeat: int = 5) -> float:
    """Best-of-`repeat` seconds of one call."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def scalar_budget() -> calc.Budget:
    return calc.budget(calc.Job(params=13e9, tokens=1e12, device=H100, devices=64, tensor_parallel=2, zero_stage=3,
                                utilization="prior", price=2.5, pue=1.2))


def scalar_today() -> tuple[object, dict]:
    mem = calc.train_memory(13e9, zero_stage=3, devices=64, tensor_parallel=2)
    return mem, calc.train_range(13e9, 1e12, H100, devices=64, usd_per_device_hour=2.5, pue=1.2)


def main(n: int = 1_000_000) -> None:
    rng = np.random.default_rng(0)
    params = rng.uniform(1e9, 7e10, n)
    tokens = rng.uniform(1e11, 1e13, n)
    devices = rng.choice([64.0, 128.0, 512.0], n)
    zero = rng.integers(0, 4, n).astype(np.float64)
    prior = calc.utilization_prior()

    def vector_budget() -> calc.Budget:
        return calc.budget(calc.Job(params=params, tokens=tokens, device=H100, devices=devices, tensor_parallel=2,
                                    zero_stage=zero, utilization=prior, price=2.5, pue=1.2))

    def vector_today() -> tuple[object, dict]:
        mem = calc.train_memory(params, zero_stage=zero, devices=devices, tensor_parallel=2)
        return mem, calc.train_range(params, tokens, H100, devices=devices, prior=prior, usd_per_device_hour=2.5,
                                     pue=1.2)

    b, (mem, r) = vector_budget(), vector_today()  # the same figures, and a warm cache
    assert np.allclose(b.cost_usd.expected, r["usd"][:, 1]) and np.allclose(b.memory.total, mem.total)
    rows = [("scalar question (us per call)", us(scalar_budget), us(scalar_today)),
            (f"{n:,} jobs with ranges (ns per job)", best_s(vector_budget) / n * 1e9, best_s(vector_today) / n * 1e9)]
    print(f"{'':40} {'budget()':>10} {'today':>10}   (today: train_memory + train_range)")
    for label, ours, today in rows:
        print(f"{label:40} {ours:10.1f} {today:10.1f}")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000)
