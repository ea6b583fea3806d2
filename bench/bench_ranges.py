"""Benchmark: budgets as ranges over 1,000,000 array scenarios (low / expected / high).

Run: python bench/bench_ranges.py. Prints figures; asserts nothing (the goal:
<= 50 ns per scenario with ranges). Measured: train_range (hours, device-hours, USD and kWh, each
(N, 3)) and calc.budget over the same arrays (memory too; each figure a Span), checks included.
(train_hours no longer takes utilization="prior": calc/money/totals.py returns points.)
"""

from __future__ import annotations

import timeit

import numpy as np

from trainbudget import calc


def _inputs(n: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    return (rng.uniform(1e8, 1e12, n), rng.uniform(1e9, 1e13, n), rng.choice([312.0, 989.5, 2250.0], n),
            rng.integers(1, 4096, n).astype(np.float64), rng.uniform(1.0, 12.0, n))


def per_scenario_ns(fn, n: int = 1_000_000, repeats: int = 7) -> float:
    args = _inputs(n)
    calc.utilization_prior()  # built once and cached by the caller in practice; warm the runs table
    return min(timeit.repeat(lambda: fn(*args), number=1, repeat=repeats)) / n * 1e9


def budget_prior(params, tokens, rate, devices, price):
    return calc.budget(calc.job(params=params, tokens=tokens, device=rate, devices=devices, utilization=PRIOR,
                                price=price))


def full_range(params, tokens, rate, devices, price):
    return calc.train_range(params, tokens, rate, devices=devices, usd_per_device_hour=price, watts=700.0,
                            prior=PRIOR)


PRIOR = calc.utilization_prior()


def main() -> None:
    n = 1_000_000
    print(f"budget(job(..., utilization=prior)), {n:,} scenarios: {per_scenario_ns(budget_prior, n):.1f} ns "
          "per scenario (goal <= 50)")
    print(f"train_range (hours, device-hours, USD, kWh), {n:,} scenarios: {per_scenario_ns(full_range, n):.1f} ns "
          "per scenario (goal <= 50)")
    t = timeit.Timer(lambda: calc.utilization_prior())
    number, _ = t.autorange()
    print(f"utilization_prior() from the runs table: {min(t.repeat(5, number)) / number * 1e6:.0f} us per call")


if __name__ == "__main__":
    main()
