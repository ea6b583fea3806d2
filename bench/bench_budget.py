"""Benchmark: one whole question as a Budget, and today's functions asked the same, in one run.

The question: a 13B full fine-tune on 1T tokens, 64 H100s, TP 2, ZeRO 3, at the utilization prior
(low / expected / high), priced at 2.5 USD per device-hour, PUE 1.2: memory per device on the
layout (and whether it fits), hours, days, device-hours, cost and energy as ranges.
- scalar: `budget(Job(...))` (the Job built inside the timing, as a door does) against
  train_memory + train_range (what a caller needed before); the same question again (a workbook
  recalculating: budget()'s per-key caches of the job's prior and the layout's memory answer it),
  and a new question each call (a parameter count never asked before: nothing cached);
- vector: 1e6 jobs (params, tokens, devices and ZeRO stage varying) in one budget() call against
  train_memory + train_range over the same arrays.
Run: python bench/bench_budget.py [N] [--before DIR] [--cpu]. Prints figures; asserts nothing (goals, issue 17:
<= 10 us per scalar question, <= 50 ns per job over 1e6 jobs with ranges).
`--before DIR` also times budget() of another calc folder in the same run (calc imports only
itself, so a copy loads as its own package), e.g. main's:
    git archive main calc | tar -x -C /tmp/before && python bench/bench_budget.py --before /tmp/before/calc
Each figure is the best of 3 rounds, the columns measured in turn in each round (side_by_side), so a
load that comes and goes falls on budget(), before and today alike.
`--cpu` times with this process's CPU time (time.process_time) instead of the wall clock: on a
machine shared with other jobs, wall-clock time counts the time other processes held the CPU.
budget() of arrays makes each range's low / expected / high when first read (calc/frozen.py's
`Later`: the figures are checked in the call, the 15 range arrays and days made on reading), so
the row "every figure read" times budget() and then reading every figure (all 23 arrays made),
what a door that renders them all pays; --before asserts every figure equal, bit for bit.
The last row is this machine's floor for the vector case: one N-element multiply into a new
array, and how many of those one budget() call costs.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

from trainbudget import calc

H100 = "H100 SXM, BF16 tensor core, dense"


CLOCK = time.perf_counter  # --cpu: time.process_time, this process's CPU time (a shared, busy machine)


def us(fn: Callable[[], object]) -> float:
    """Best-of-7 microseconds per call."""
    t = timeit.Timer(fn, timer=CLOCK)
    number, _ = t.autorange()
    return min(t.repeat(7, number)) / number * 1e6


def best_s(fn: Callable[[], object], repeat: int = 5) -> float:
    """Best-of-`repeat` seconds of one call."""
    return min(timeit.repeat(fn, number=1, repeat=repeat, timer=CLOCK))


def side_by_side(measure: Callable[[Callable[[], object]], float], fns: list[Callable[[], object] | None],
                 rounds: int = 3) -> list[float]:
    """The best of `rounds` measures of each of `fns` (None: nan), taken in turn round by round, so
    a load that comes and goes during the run falls on each alike."""
    best = [float("inf") if fn is not None else float("nan") for fn in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            if fn is not None:
                best[i] = min(best[i], measure(fn))
    return best


def fresh_pass_s(a: np.ndarray, b: np.ndarray) -> float:
    """Best seconds of one a * b into a new array, the arrays kept (as a Budget keeps its figures),
    so each pass pays for fresh memory as budget()'s results do."""
    kept: list[np.ndarray] = []
    return min(timeit.repeat(lambda: kept.append(a * b), number=1, repeat=25, timer=CLOCK))


def load_calc(folder: str) -> ModuleType:
    """Another checkout's calc folder as its own package (calc's imports are all relative)."""
    init = Path(folder) / "__init__.py"
    spec = importlib.util.spec_from_file_location("calc_before", init, submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["calc_before"] = module
    spec.loader.exec_module(module)
    return module


def scalar_budget(c: ModuleType = calc) -> calc.Budget:
    return c.budget(c.Job(params=13e9, tokens=1e12, device=H100, devices=64, tensor_parallel=2, zero_stage=3,
                          utilization="prior", price=2.5, pue=1.2))


def fresh_questions(c: ModuleType = calc) -> Callable[[], calc.Budget]:
    """The scalar question with a parameter count never asked before on each call: no cache of
    budget() (the job's prior, the layout's memory) or of calc.prior.job_prior can answer it."""
    count = iter(range(1, 1 << 62))

    def ask() -> calc.Budget:
        return c.budget(c.Job(params=13e9 + next(count), tokens=1e12, device=H100, devices=64, tensor_parallel=2,
                              zero_stage=3, utilization="prior", price=2.5, pue=1.2))
    return ask


FIGURES = ("flops", "usable_bytes", "fits", "headroom_bytes", "hours", "days", "device_hours", "cost_usd",
           "energy_kwh")
MEMORY = ("weights", "gradients", "optimizer", "master", "activations", "total")


def every_figure(b: calc.Budget) -> dict[str, object]:
    """Every figure of a Budget by name, each read (a range's low, expected and high; memory by part):
    what a door that renders all of them pays on top of budget(), where ranges are made when read."""
    got: dict[str, object] = {f"memory.{k}": getattr(b.memory, k) for k in MEMORY}  # (as_dict deep-copies)
    for name in FIGURES:
        value = getattr(b, name)
        if isinstance(value, tuple):  # a Span
            got.update({f"{name}.low": value.low, f"{name}.expected": value.expected, f"{name}.high": value.high})
        else:
            got[name] = value
    return got


def scalar_today() -> tuple[object, dict]:
    mem = calc.train_memory(13e9, zero_stage=3, devices=64, tensor_parallel=2)
    return mem, calc.train_range(13e9, 1e12, H100, devices=64, usd_per_device_hour=2.5, pue=1.2)


def main(n: int = 1_000_000, before: str | None = None) -> None:
    rng = np.random.default_rng(0)
    params = rng.uniform(1e9, 7e10, n)
    tokens = rng.uniform(1e11, 1e13, n)
    devices = rng.choice([64.0, 128.0, 512.0], n)
    zero = rng.integers(0, 4, n).astype(np.float64)
    prior = calc.utilization_prior()
    old = load_calc(before) if before else None

    def vector_budget(c: ModuleType = calc, p: object = prior) -> calc.Budget:
        return c.budget(c.Job(params=params, tokens=tokens, device=H100, devices=devices, tensor_parallel=2,
                              zero_stage=zero, utilization=p, price=2.5, pue=1.2))

    def vector_today() -> tuple[object, dict]:
        mem = calc.train_memory(params, zero_stage=zero, devices=devices, tensor_parallel=2)
        return mem, calc.train_range(params, tokens, H100, devices=devices, prior=prior, usd_per_device_hour=2.5,
                                     pue=1.2)

    b, (mem, r) = vector_budget(), vector_today()  # the same figures, and a warm cache
    assert np.allclose(b.cost_usd.expected, r["usd"][:, 1]) and np.allclose(b.memory.total, mem.total)
    # the same prior's three numbers for both (the other calc's own model may differ: the question, not the fit)
    old_prior = None if old is None else old.UtilizationPrior(prior.low, prior.expected, prior.high, prior.goodput,
                                                              prior.n_runs, prior.basis)
    if old is not None:
        ob = vector_budget(old, old_prior)
        for name, figure in every_figure(b).items():  # the same figures, bit for bit
            assert np.array_equal(every_figure(ob)[name], figure), name
    per_job = lambda fn: best_s(fn) / n * 1e9  # noqa: E731
    rows = [["scalar question (us per call)", us, scalar_budget, lambda: scalar_budget(old), scalar_today],
            ["scalar, a new question each call (us)", us, fresh_questions(), fresh_questions(old), None],
            [f"{n:,} jobs with ranges (ns per job)", per_job, vector_budget, lambda: vector_budget(old, old_prior),
             vector_today],
            ["  the same, every figure read (ns per job)", per_job, lambda: every_figure(vector_budget()),
             lambda: every_figure(vector_budget(old, old_prior)), None]]
    cols = ["budget()", "before", "today"] if old is not None else ["budget()", "today"]
    rows = [[label, *side_by_side(measure, [now, then, today] if old is not None else [now, today])]
            for label, measure, now, then, today in rows]
    print(f"{'':40}" + "".join(f"{c:>10}" for c in cols) + "   (today: train_memory + train_range)")
    for label, *figures in rows:
        print(f"{label:40}" + "".join(f"{f:10.1f}" if f == f else f"{'-':>10}" for f in figures))
    one = fresh_pass_s(params, tokens)
    print(f"{'floor: one multiply into a new array (ms)':40}{one * 1e3:10.2f}   "
          f"(budget() costs {best_s(vector_budget) / one:.0f} of them)")

if __name__ == "__main__":
    args = sys.argv[1:]
    if "--cpu" in args:
        args.remove("--cpu")
        CLOCK = time.process_time
    at = args.index("--before") if "--before" in args else -1
    folder = args[at + 1] if at >= 0 else None
    rest = [a for i, a in enumerate(args) if at < 0 or i not in (at, at + 1)]
    main(int(float(rest[0])) if rest else 1_000_000, folder)
