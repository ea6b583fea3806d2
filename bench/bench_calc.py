"""Benchmark: train_hours over 1,000,000 array scenarios, one scalar call, CLI start-up.

Run: python bench/bench_calc.py. Prints figures; asserts nothing (goals, reported not asserted:
<= 30 ns per array scenario, checks included; <= 0.5 s start-up of `trainbudget estimate`).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import timeit

import numpy as np

from trainbudget import calc


def per_scenario_ns(n: int = 1_000_000, repeats: int = 7) -> float:
    rng = np.random.default_rng(0)
    params = rng.uniform(1e8, 1e12, n)
    tokens = rng.uniform(1e9, 1e13, n)
    rate = rng.choice([19.5, 312.0, 989.5, 1979.0], n)
    util = rng.uniform(0.2, 0.6, n)
    devices = rng.integers(1, 4096, n).astype(np.float64)
    times = timeit.repeat(lambda: calc.train_hours(params, tokens, rate, utilization=util,
                                                   devices=devices), number=1, repeat=repeats)
    return min(times) / n * 1e9


def scalar_call_us() -> float:
    t = timeit.Timer(lambda: calc.train_hours(7e9, 1e9, "H100 SXM, BF16 tensor core, dense"))
    number, _ = t.autorange()
    return min(t.repeat(5, number)) / number * 1e6


def startup_s(repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "trainbudget.addin.cli", "estimate"], check=True,
                       capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    print(f"train_hours, 1e6 array scenarios: {per_scenario_ns():.1f} ns per scenario (goal <= 30)")
    print(f"train_hours, one scalar call:     {scalar_call_us():.1f} us")
    print(f"trainbudget estimate start-up:    {startup_s():.3f} s median of 5 (goal <= 0.5)")
