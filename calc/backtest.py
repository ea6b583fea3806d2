"""Leave-one-out back-test of the utilization prior against the published runs.

For each run, build the prior from all the OTHER runs, predict the run's device-hours
(low / expected / high = compute hours at the prior's high / expected / low utilization,
divided by goodput) and compare with what the run reports:
- a run with reported device-hours: those hours (kind "hours");
- a run with only a reported MFU: the hours that MFU implies, divided by goodput (kind "mfu").
Two figures per set: the share of runs inside the low-high band, and the median relative
error |expected - observed| / observed. The project's goals: at least 0.80 inside, at most 0.25 error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .devices import DeviceTable
from .prior import GOODPUT, compute_device_hours, run_utilization, utilization_prior
from .runs import Run, load_runs


@dataclass(frozen=True)
class BacktestRow:
    """One run's prediction from the others: device-hours observed and predicted."""

    run: str
    kind: str          # "hours" (reported device-hours) or "mfu" (hours implied by reported MFU)
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


@dataclass(frozen=True)
class Backtest:
    """All runs' rows and the summary figures per set ('hours', 'all')."""

    rows: tuple[BacktestRow, ...]

    def subset(self, kind: str = "hours") -> list[BacktestRow]:
        return [r for r in self.rows if kind == "all" or r.kind == kind]

    def inside_fraction(self, kind: str = "hours") -> float:
        rows = self.subset(kind)
        return sum(r.inside for r in rows) / len(rows)

    def median_error(self, kind: str = "hours") -> float:
        return float(np.median([r.error for r in self.subset(kind)]))

    def summary(self) -> dict[str, dict[str, float]]:
        return {k: {"runs": len(self.subset(k)), "inside_fraction": self.inside_fraction(k),
                    "median_error": self.median_error(k)} for k in ("hours", "all")}


def backtest(runs: Iterable[Run] | None = None, table: DeviceTable | None = None,
             goodput: float = GOODPUT, by_family: bool = False) -> Backtest:
    """Leave each run out; predict its device-hours from the prior of the others.

    `by_family`: narrow each prior to the left-out run's device family (where MIN_RUNS remain).
    """
    pool = list(load_runs() if runs is None else runs)
    rows = []
    for i, run in enumerate(pool):
        if run_utilization(run, table, goodput) is None:
            continue
        if run.device_hours is not None:
            kind, observed = "hours", run.device_hours
        else:
            kind, observed = "mfu", compute_device_hours(run, run.reported_mfu, table) / goodput
        prior = utilization_prior(run.device if by_family else None, runs=pool[:i] + pool[i + 1:],
                                  goodput=goodput, table=table)
        base = compute_device_hours(run, 1.0, table)
        low, mid, high = base * prior.hour_factors()
        rows.append(BacktestRow(run.run, kind, observed, float(low), float(mid), float(high)))
    return Backtest(tuple(rows))
