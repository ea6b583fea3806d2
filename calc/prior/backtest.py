"""Leave-one-out back-test of the utilization prior against the published runs.

For each `use="main"` run, fit the prior on all the OTHER main runs (its band too: the
leave-one-out residuals inside that fold, so a run never informs its own band), ask it what
a planner would ask (`utilization_prior` with the run's device, active params, devices where
published and MoE), and compare the predicted device-hours with what the run gives:
- a run with reported hours: those hours; predicted = compute hours / goodput for whole-run
  hours (the goodput that fold fitted: ridge.Fit.goodput), compute hours for steady-state hours
  (kind "hours");
- a run with only an MFU: the compute hours that MFU implies (kind "mfu").
Per set: the share inside the low-high band, the median relative error
|expected - observed| / observed, and the median band width high/low hours.
Goals: at least 85% inside, at most 15% error, a band of at most x2.2, together.
`sensitivity` rows (benchmarks, coarse or second-hand figures) are scored out of sample by
the prior fitted on every main run. `method="global"` scores the shipped prior of 2026-11
(10th/50th/90th percentiles of all other runs) for comparison.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..hardware.catalog import DeviceTable
from .runs import Run, load_runs
from .utilization import BAND, GOODPUT, Model, compute_device_hours, family, fit_model, prior_point, run_utilization

GOALS = {"inside_fraction": 0.85, "median_error": 0.15, "median_width": 2.2}
SETS = ("all", "hours", "mfu", "sensitivity")


@dataclass(frozen=True)
class BacktestRow:
    """One run's prediction from the others: device-hours observed and predicted."""

    run: str
    kind: str          # "hours", "mfu" (main runs) or "sensitivity" (scored out of sample)
    observed: float
    low: float
    expected: float
    high: float

    @property
    def inside(self) -> bool:
        return self.low <= self.observed <= self.high

    @property
    def error(self) -> float:
        return abs(self.expected - self.observed) / self.observed

    @property
    def width(self) -> float:
        return self.high / self.low


@dataclass(frozen=True)
class Backtest:
    """All runs' rows and the summary figures per set ('all', 'hours', 'mfu', 'sensitivity')."""

    rows: tuple[BacktestRow, ...]
    method: str = "ridge"
    band: str = ""

    def subset(self, kind: str = "all") -> list[BacktestRow]:
        if kind == "all":
            return [r for r in self.rows if r.kind != "sensitivity"]
        return [r for r in self.rows if r.kind == kind]

    def inside_fraction(self, kind: str = "all") -> float:
        rows = self.subset(kind)
        return sum(r.inside for r in rows) / len(rows)

    def median_error(self, kind: str = "all") -> float:
        return float(np.median([r.error for r in self.subset(kind)]))

    def median_width(self, kind: str = "all") -> float:
        return float(np.median([r.width for r in self.subset(kind)]))

    def summary(self) -> dict[str, dict[str, float]]:
        return {k: {"runs": len(self.subset(k)), "inside_fraction": self.inside_fraction(k),
                    "median_error": self.median_error(k), "median_width": self.median_width(k)}
                for k in SETS if self.subset(k)}

    def meets_goals(self, kind: str = "all") -> bool:
        """All three goals at once on `kind` (default: every main run)."""
        return (self.inside_fraction(kind) >= GOALS["inside_fraction"]
                and self.median_error(kind) <= GOALS["median_error"]
                and self.median_width(kind) <= GOALS["median_width"])


def _utilizations(model: Model, run: Run, table: DeviceTable | None, method: str,
                  others: list[Run], goodput: float) -> tuple[float, float, float]:
    """(low, expected, high) utilization for `run` from a model that never saw it."""
    if method == "global":
        samples = [u for r in others if r.use == "main" and (u := run_utilization(r, table, goodput)) is not None]
        low, mid, high = np.percentile(samples, (10.0, 50.0, 90.0))
        return float(low), float(mid), float(high)
    p = prior_point(model, family(run.device, table), "", run.flops_params, run.devices, run.moe, run.tokens)
    return p.low, p.expected, p.high


def _row(run: Run, kind: str, u: tuple[float, float, float], table: DeviceTable | None,
         goodput: float) -> BacktestRow:
    """`goodput`: what whole-run hours are divided by (the fold's fitted one for the ridge)."""
    base = compute_device_hours(run, 1.0, table)           # hours at utilization 1, no downtime
    if run.device_hours is not None:
        observed = run.device_hours
        g = goodput if run.hours_scope == "whole-run" else 1.0
    else:
        observed, g = compute_device_hours(run, run.reported_mfu, table), 1.0
    low_u, mid_u, high_u = u
    return BacktestRow(run.run, kind, observed, base / (high_u * g), base / (mid_u * g), base / (low_u * g))


def backtest(runs: Iterable[Run] | None = None, table: DeviceTable | None = None,
             goodput: float = GOODPUT, method: str = "ridge", band: str | None = None,
             dropped: frozenset[str] | None = None) -> Backtest:
    """Leave each main run out; predict its device-hours from the prior of the other main runs.
    `band` (calc.prior.utilization.BANDS: "jackknife+" or "loo", constant multipliers) and `dropped` features
    default to the shipped prior's; each fold's band comes from that fold's training runs only."""
    if method not in ("ridge", "global"):
        raise ValueError(f"method must be 'ridge' or 'global' (got {method!r})")
    band = BAND if band is None else band
    pool = list(load_runs() if runs is None else runs)
    rows = []
    for i, run in enumerate(pool):
        if run.use != "main" or run_utilization(run, table, goodput) is None:
            continue
        others = pool[:i] + pool[i + 1:]
        model = fit_model(others, table, goodput, band, dropped) if method == "ridge" else None
        kind = "hours" if run.device_hours is not None else "mfu"
        g = goodput if model is None else model.fit.goodput
        rows.append(_row(run, kind, _utilizations(model, run, table, method, others, goodput), table, g))
    full = fit_model(pool, table, goodput, band, dropped) if method == "ridge" else None
    for run in pool:
        if run.use == "sensitivity" and run_utilization(run, table, goodput) is not None:
            rows.append(_row(run, "sensitivity", _utilizations(full, run, table, method, pool, goodput),
                             table, goodput if full is None else full.fit.goodput))
    return Backtest(tuple(rows), method, band if method == "ridge" else "p10-p90")

