"""Whole runs from the step: hours = steps x step time / goodput, with a low / expected / high range.

Goodput (the share of wall-clock time that trains: restarts, failures, checkpoints, evaluation
lost) is fitted on the published runs in calc/data/runs.csv that state both whole-run device-hours
and a steady-state MFU: goodput = (6·N_active·D / (peak x device-hours)) / MFU. Its expected value
is their geometric mean, its spread their lowest and highest. The step's own spread is the
leave-one-out residuals of the step model on calc/data/steptime_measured.csv (bench/bench_steptime.py:
p10 and p90 of measured / predicted step time). The range multiplies the two ends: low = the
fast step at the best goodput, high = the slow step at the worst.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import numpy as np

from ..base.checks import positive
from ..base.errors import TrainingBudgetError
from ..hardware.catalog import catalog
from .calibrate import Constants
from .hardware import Hardware
from .layout import Layout
from .shape import Shape
from .step import Step, step_time

# Step time measured / predicted, p10 and p90 of the leave-one-out residuals over the 57 fit rows
# (bench/bench_steptime.py --sweeps 3, 2026-12-07, which prints them).
STEP_RESIDUAL = (0.865, 1.154)
STEP_RESIDUAL_ROWS = 57  # the fit rows they were measured on (a test counts them in the packaged file)


@dataclass(frozen=True)
class Goodput:
    """expected, low, high: shares of wall-clock time that train (0-1); runs: the (name, goodput) it
    rests on; basis: the words."""

    expected: float
    low: float
    high: float
    runs: tuple[tuple[str, float], ...]
    basis: str


@dataclass(frozen=True)
class RunHours:
    """Wall-clock hours of a whole run: low, expected, high; device_hours the same x devices (expected);
    steps; step_seconds and mfu (the steady-state step's); goodput used; basis in words."""

    low: Any
    expected: Any
    high: Any
    device_hours: Any
    steps: Any
    step_seconds: Any
    mfu: Any
    goodput: float
    basis: str


def goodput_samples(text: str | None = None, leave_out: str | None = None) -> tuple[tuple[str, float], ...]:
    """(run, goodput) for each run with whole-run device-hours and a steady-state MFU (`leave_out`: a run
    to omit, for a back-test)."""
    if text is None:
        text = resources.files(__name__.rsplit(".", 2)[0]).joinpath("data/runs.csv").read_text("utf-8")
    table = catalog()
    out = []
    for r in csv.DictReader(text.splitlines()):
        if r["hours_scope"] != "whole-run" or not r["reported_mfu"] or not r["device_hours"] or r["run"] == leave_out:
            continue
        n = float(r["active_params"] or r["params"])
        whole = 6.0 * n * float(r["tokens"]) / (table.get(r["device"]).tflops * 1e12 * float(r["device_hours"]) * 3600)
        out.append((r["run"], whole / float(r["reported_mfu"])))
    return tuple(out)


@functools.lru_cache(maxsize=4)
def fit_goodput(leave_out: str | None = None) -> Goodput:
    """Goodput from the packaged published runs (calc/data/runs.csv), optionally leaving one run out."""
    runs = goodput_samples(leave_out=leave_out)
    g = [v for _, v in runs]
    mid = math.exp(sum(math.log(v) for v in g) / len(g))
    names = ", ".join(f"{n} {v:.2f}" for n, v in runs)
    basis = (f"whole-run utilization / steady-state MFU of the published runs that state both ({names}; "
             f"calc/data/runs.csv): {mid:.2f}, {min(g):.2f}-{max(g):.2f}")
    return Goodput(expected=mid, low=min(g), high=max(g), runs=runs, basis=basis)


def run_hours(shape: Shape, layout: Layout, hw: Hardware, tokens: Any, constants: Constants | None = None,
              goodput: Goodput | None = None) -> RunHours:
    """Hours of a whole run of `tokens` training tokens: steps = tokens / global batch tokens, each
    the step model's step time, divided by goodput; low / expected / high from the step model's
    leave-one-out residuals (STEP_RESIDUAL) and goodput's spread. Hours of wall clock."""
    tokens = positive("tokens", tokens)
    g = goodput or fit_goodput()
    st = step_time(shape, layout, hw, constants)
    steps = tokens / layout.global_batch_tokens
    base = steps * st.step_seconds / 3600.0
    lo, hi = STEP_RESIDUAL
    basis = (f"{g.basis}; step time range x{lo:g}-x{hi:g}: p10-p90 of the step model's leave-one-out "
             "residuals on calc/data/steptime_measured.csv")
    return RunHours(low=base * lo / g.high, expected=base / g.expected, high=base * hi / g.low,
                    device_hours=base / g.expected * layout.devices, steps=steps, step_seconds=st.step_seconds,
                    mfu=st.mfu, goodput=g.expected, basis=basis)


# Counts tried from the lower bound up, and times the bound is raised from the step at the last one:
# on 704 layouts and deadlines (5 layouts x 8 token counts x 11 deadlines, and every count the batch
# allows timed one by one) the first count that met the deadline was the raised bound itself
DEADLINE_COUNTS = 16
DEADLINE_BOUNDS = 3


def case_factor(case: str, goodput: Goodput | None = None) -> float:
    """Run hours / (steps x step seconds / 3600) in run_hours' `case` (low, expected, high): the
    same at every device count, so a case's deadline is the expected one's at another factor."""
    g = goodput or fit_goodput()
    lo, hi = STEP_RESIDUAL
    factors = {"low": lo / g.high, "expected": 1.0 / g.expected, "high": hi / g.low}
    if case not in factors:
        raise TrainingBudgetError(f"case must be one of {', '.join(factors)} (got {case!r})", "case")
    return factors[case]


def deadline_devices(shape: Shape, layout: Layout, hw: Hardware, tokens: float, days: float,
                     goodput: Goodput | None = None, case: str = "expected") -> float:
    """Fewest devices on which `layout`'s degrees (its tp, pp, cp, ep and batch; data parallel the
    rest) run `tokens` within `days` days at run_hours' `case` hours (expected by default): time only
    (memory is calc.devices_needed's). Counts go in steps of r = tp·pp·cp·ep, k·r devices. k starts
    at 1 and is raised DEADLINE_BOUNDS times by deadline_bound (no smaller count can meet the
    deadline); the answer is the first of DEADLINE_COUNTS counts from there that meets it, inf where
    none does or the batch runs out of data-parallel ranks first. Scalars."""
    limit = 24.0 * positive("days", days)
    g = goodput or fit_goodput()
    r = layout.tp * layout.pp * layout.cp * layout.ep
    most = math.floor(layout.global_batch_tokens / layout.seq_len / (layout.ep * layout.micro_batch))
    per_second = (tokens / layout.global_batch_tokens / (3600.0 * g.expected) if case == "expected"  # hours per
                  else tokens / layout.global_batch_tokens / 3600.0 * case_factor(case, g))  # step second
    k0 = 1.0
    for _ in range(DEADLINE_BOUNDS):
        if k0 > most:
            return math.inf
        k0 = deadline_bound(step_time(shape, replace(layout, devices=k0 * r), hw), k0, layout.zero_stage, limit,
                            per_second)
    k = k0 + np.arange(DEADLINE_COUNTS, dtype=np.float64)
    k = k[k <= most]
    if not len(k):
        return math.inf
    hours = getattr(run_hours(shape, replace(layout, devices=k * r), hw, tokens, goodput=g), case)
    met = k[hours <= limit]
    return float(met[0] * r) if len(met) else math.inf


def deadline_bound(st: Step, k: float, zero_stage: float, limit: float, per_second: float) -> float:
    """The fewest k' >= k (k'·r devices, r = tp·pp·cp·ep) whose hours can meet `limit` hours, from
    the step `st` at k, where a run's hours are `per_second` times the step's seconds (steps /
    (3600·goodput) for run_hours' expected hours): a rank's work (compute, TP, CP, EP) is its share
    of the batch, so it goes as 1 / k'; the bubble is fixed by the batch; exposed DP never falls as
    k' grows (ZeRO-3's, paid every micro-batch, never falls faster than 1 / k'); the optimizer goes
    as 1 / k' with ZeRO >= 1. So hours(k') >= per_second x (per_k / k' + fixed) for k' >= k. inf
    when even the fixed part exceeds the limit (no k' meets it)."""
    parts = st.breakdown
    zero3, sharded = zero_stage >= 3, zero_stage >= 1
    per_k = k * (parts["compute"] + parts["tp"] + parts["cp"] + parts["ep"] + (parts["dp_exposed"] if zero3 else 0.0)
                 + (parts["optimizer"] if sharded else 0.0))
    fixed = parts["bubble"] + (0.0 if zero3 else parts["dp_exposed"]) + (0.0 if sharded else parts["optimizer"])
    room = limit / per_second - fixed
    if room <= 0:
        return math.inf
    return max(k, -math.floor(-per_k / room))
