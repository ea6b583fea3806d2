"""Benchmark: ranked plans for a 405B model over every catalog device x every price x fitting layouts.

Run: python bench/bench_plan.py. Prints figures; asserts nothing (the goal: the whole
`trainbudget plan` command over the catalog and the price table within 3 s on this machine).
In-process: best of several calls of calc.rank_plans (each call searches its layouts afresh);
as a command: wall time of `python -m trainbudget.addin.cli plan ...` (interpreter start and imports
included), best of three. Also the scalar inverse questions (devices for a deadline, tokens for a budget).
"""

from __future__ import annotations

import subprocess
import sys
import time
import timeit

from trainbudget import calc

MODEL, TOKENS, DAYS = "Llama 3.1 405B", 15e12, 90.0
COMMAND = [sys.executable, "-m", "trainbudget.addin.cli", "plan", "--model", MODEL, "--tokens", "15T",
           "--days", "90", "--budget", "80e6"]
H200 = "H200 SXM, BF16 tensor core, dense"


def in_process(repeats: int = 5) -> tuple[float, list[calc.Plan]]:
    preset = calc.model_preset(MODEL)
    def ranked() -> list[calc.Plan]:  # the question made and checked, then ranked: as the plan command does
        return calc.rank_plans(calc.PlanQuestion(TOKENS, DAYS, model=preset))

    plans = ranked()  # warm caches (catalog, prices, prior)
    best = min(timeit.repeat(ranked, number=1, repeat=repeats))
    return best, plans


def as_command(repeats: int = 3) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = subprocess.run(COMMAND, capture_output=True, text=True, check=True).stdout
        times.append(time.perf_counter() - t0)
    return min(times), out


def scalar_us(fn, number: int = 200) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main() -> None:
    best, plans = in_process()
    devices = len({p.device for p in plans})
    print(f"rank_plans, {MODEL}, {TOKENS:.3g} tokens, {DAYS:g} days: {len(plans)} plans over {devices} devices "
          f"(16-bit rows of the catalog with memory) in {best * 1e3:.0f} ms in-process (best of 5)")
    seconds, out = as_command()
    print(f"as a command (`{' '.join(COMMAND[3:])}`): {seconds:.2f} s wall (best of 3)")
    print("example answer:", out.splitlines()[0])
    us = scalar_us(lambda: calc.devices_for_days(70.6e9, 15e12, H200, 90, utilization="prior"))
    print(f"devices_for_days (70.6B, 15T tokens, H200, 90 days, prior): {us:.0f} us per scalar call")
    us = scalar_us(lambda: calc.tokens_for_budget(70.6e9, H200, 2e6, usd_per_device_hour=2.5, utilization=0.4))
    print(f"tokens_for_budget (70.6B, H200, 2M USD at 2.5 USD/h): {us:.0f} us per scalar call")


if __name__ == "__main__":
    main()
