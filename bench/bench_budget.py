"""Benchmark: one whole question as a Budget, and today's functions asked the same, in one run.

The question: a 13B full fine-tune on 1T tokens, 64 H100s, TP 2, ZeRO 3, at the utilization prior
(low / expected / high), priced at 2.5 USD per device-hour, PUE 1.2: memory per device on the
layout (and whether it fits), hours, days, device-hours, cost and energy as ranges.
- scalar: `budget(job(...))` (the Job built inside the timing, as a door does) against
  train_memory + train_range (what a caller needed before); the same question again (a workbook
  recalculating: budget()'s per-key caches of the job's prior and the layout's memory answer it),
  and a new question each call (a parameter count never asked before: nothing cached);
- vector: 1e6 jobs (params, tokens, devices and ZeRO stage varying) in one budget() call against
  train_memory + train_range over the same arrays.
Run: python bench/bench_budget.py [N] [--before DIR] [--cpu]. Prints figures; asserts nothing (goals:
<= 10 us per scalar question, <= 50 ns per job over 1e6 jobs with ranges).
`--before DIR` also times budget() of another calc folder in the same run (calc imports only
itself, so a copy loads as its own package), e.g. main's:
    git archive main calc | tar -x -C /tmp/before && python bench/bench_budget.py --before /tmp/before/calc
Each figure is the best of 3 rounds, the columns measured in turn in each round (side_by_side), so a
load that comes and goes falls on budget(), before and today alike.
`--cpu` times with this process's CPU time (time.process_time) instead of the wall clock: on a
machine shared with other jobs, wall-clock time counts the time other processes held the CPU.
budget() of arrays makes each range's low / expected / high when first read (calc/base/fastinit.py's
`Later`: the figures are checked in the call; the 15 range arrays, and the device-hours, cost and
energy points they come from, made on reading), so the row "every figure read" times budget()
and then reading every figure (every array made), what a door that renders them all pays;
--before asserts every figure equal, bit for bit.
The last rows are this machine's floors: for the vector case one N-element multiply into a new
array, how many of those one budget() call costs, and how many new N-element arrays the call and
every figure read keep (tracemalloc), each at least one such multiply; for the scalar case the
same question's objects and arithmetic as straight-line Python with no checks or look-ups, and
the objects alone (the Job, its MemoryBreakdown, UtilizationPrior, five Spans and the Budget built
from figures worked out beforehand: what the frozen data model costs before any work). Then
the bytecodes one scalar question runs (new, same, straight-line): a count no load changes.
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


OLD_NAMES = {"tp": "tensor_parallel", "pp": "pipeline_parallel", "ep": "expert_parallel", "cp": "context_parallel"}


def make_job(c: ModuleType, **flat: object) -> calc.Job:
    """A job from flat names in `c`: calc.job, or for a calc from before the Job had parts, its flat
    Job with the layout's older names (tensor_parallel for tp, ...)."""
    if callable(getattr(c, "job", None)):
        return c.job(**flat)
    return c.Job(**{OLD_NAMES.get(k, k): v for k, v in flat.items()})


def scalar_budget(c: ModuleType = calc) -> calc.Budget:
    return c.budget(make_job(c, params=13e9, tokens=1e12, device=H100, devices=64, tp=2, zero_stage=3,
                          utilization="prior", price=2.5, pue=1.2))


def fresh_questions(c: ModuleType = calc) -> Callable[[], calc.Budget]:
    """The scalar question with a parameter count never asked before on each call: no cache of
    budget() (the job's prior, the layout's memory) or of calc.job_prior can answer it."""
    count = iter(range(1, 1 << 62))

    def ask() -> calc.Budget:
        return c.budget(make_job(c, params=13e9 + next(count), tokens=1e12, device=H100, devices=64, tp=2,
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
        return c.budget(make_job(c, params=params, tokens=tokens, device=H100, devices=devices, tp=2,
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
    call, every = kept_arrays(vector_budget, n), kept_arrays(lambda: every_figure(vector_budget()), n)
    print(f"{'  new arrays kept: the call, every read':40}{call:10.1f}{every:10.1f}   (the floor, ns per job: "
          f"{call * one / n * 1e9:.0f} and {every * one / n * 1e9:.0f})")
    print(f"{'floor: a scalar Budget, straight-line (us)':40}{us(straight_line()):10.1f}   "
          "(no checks, look-ups or provenance: the Job, the objects and the arithmetic)")
    print(f"{'floor: the objects alone (us)':40}{us(objects_alone()):10.1f}   "
          "(the Job, MemoryBreakdown, UtilizationPrior, 5 Spans and Budget; no arithmetic)")
    counts = [bytecodes(fn) for fn in (fresh_questions(), scalar_budget, straight_line())]
    print(f"{'bytecodes: new, same, straight-line':40}" + "".join(f"{c:10,}" for c in counts)
          + "   (the interpreter's work per question: a count no load on the machine moves)")


def bytecodes(fn: Callable[[], object]) -> int:
    """Python bytecodes one call of `fn` executes (sys.settrace's opcode events; numpy's C code
    counts as the one instruction that calls it), after two warm calls: unlike a timing, the same
    on a busy machine as on an idle one."""
    import collections
    fn(), fn()
    seen: collections.Counter[str] = collections.Counter()

    def trace(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            seen["op"] += 1
        return trace
    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return seen["op"]


def kept_arrays(fn: Callable[[], object], n: int) -> float:
    """How many n-element float64 arrays' worth of memory what `fn` returns holds (tracemalloc
    sees numpy's allocations): each is a fresh array that the call page-faulted in."""
    import tracemalloc
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = fn()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return (after - before) / (8 * n)


def straight_line() -> Callable[[], calc.Budget]:
    """The scalar question's figures as straight-line Python with its constants worked out
    beforehand (no checks, no device, price or prior look-ups, no basis text): the Job, the
    MemoryBreakdown, UtilizationPrior, Spans and Budget, and the arithmetic with numpy's log10
    and exp (the calls the prior needs). What one scalar question costs in this interpreter on
    this machine before any of the work that makes it a checked, cited answer."""
    from trainbudget.calc import MemoryBreakdown, Span, UtilizationPrior
    ref = scalar_budget()
    make = tuple.__new__
    count = iter(range(1, 1 << 62))
    logs = np.empty(3)

    def ask() -> calc.Budget:
        job = calc.job(params=13e9 + next(count), tokens=1e12, device=H100, devices=64, tp=2,
                       zero_stage=3, utilization="prior", price=2.5, pue=1.2)
        p, tok, n = job.model.params, job.tokens, float(job.cluster.devices)
        dense, dp = p / 2.0, n / 2.0
        w, g, o = dense / dp * 2.0, dense / dp * 2.0, dense / dp
        mem = MemoryBreakdown(w, g, 8.0 * o, 4.0 * o, 0.0, w + g + 8.0 * o + 4.0 * o + 0.0)
        logs[0], logs[1], logs[2] = p, n, tok / p
        a, b, c = np.log10(logs).tolist()
        e = float(np.exp(-1.0 + 0.1 * (a - 10.0) + 0.05 * (b - 3.0) + 0.2 * (c - 2.0)))
        prior = UtilizationPrior(e * 0.7, e, e * 1.3, 0.79, 41, ref.prior.basis, "loo")
        f0, f1, f2 = 1.0 / (e * 1.3 * 0.79), 1.0 / (e * 0.79), 1.0 / (e * 0.7 * 0.79)
        h = 6.0 * p * tok / (989.0 * 3.6e15 * n)
        dh = h * n
        c1, k1 = dh * 2.5, dh * 700.0 * 1.2 / 1000.0
        hours = make(Span, (h * f0, h * f1, h * f2))
        head = ref.usable_bytes - mem.total
        return calc.Budget(job, H100, 6.0 * p * tok, p, p, mem, dict(ref.layout, data_parallel=dp), ref.usable_bytes,
                           head >= 0, head, hours, make(Span, (hours[0] / 24, hours[1] / 24, hours[2] / 24)),
                           make(Span, (dh * f0, dh * f1, dh * f2)), make(Span, (c1 * f0, c1 * f1, c1 * f2)),
                           make(Span, (k1 * f0, k1 * f1, k1 * f2)), make(Span, (prior.low, prior.expected, prior.high)),
                           ref.utilization_basis, 0.79, ref.goodput_basis, 2.5, ref.price_label, None, None, None,
                           1.2, prior)
    return ask

def objects_alone() -> Callable[[], calc.Budget]:
    """The scalar question's objects and nothing else: a new Job (keywords, as a door builds it), its
    MemoryBreakdown, UtilizationPrior, five Spans and the Budget, every figure taken from a Budget
    worked out beforehand. The frozen data model's own cost per question, the floor under any
    composer of it on this interpreter and machine."""
    import dataclasses

    from trainbudget.calc import MemoryBreakdown, Span, UtilizationPrior
    ref = scalar_budget()
    m, q = ref.memory, ref.prior
    parts = (m.weights, m.gradients, m.optimizer, m.master, m.activations, m.total)
    prior = (q.low, q.expected, q.high, q.goodput, q.n_runs, q.basis, q.method)
    fields = [getattr(ref, f.name) for f in dataclasses.fields(ref)]
    make = tuple.__new__
    s0, s1, s2, s3, s4 = (tuple(getattr(ref, k)) for k in ("hours", "days", "device_hours", "cost_usd", "energy_kwh"))
    count = iter(range(1, 1 << 62))

    def ask() -> calc.Budget:
        job = calc.job(params=13e9 + next(count), tokens=1e12, device=H100, devices=64, tp=2,
                       zero_stage=3, utilization="prior", price=2.5, pue=1.2)
        mem, made = MemoryBreakdown(*parts), UtilizationPrior(*prior)
        return calc.Budget(job, *fields[1:5], mem, *fields[6:10], make(Span, s0), make(Span, s1), make(Span, s2),
                           make(Span, s3), make(Span, s4), *fields[15:25], made)
    return ask


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--cpu" in args:
        args.remove("--cpu")
        CLOCK = time.process_time
    at = args.index("--before") if "--before" in args else -1
    folder = args[at + 1] if at >= 0 else None
    rest = [a for i, a in enumerate(args) if at < 0 or i not in (at, at + 1)]
    main(int(float(rest[0])) if rest else 1_000_000, folder)
