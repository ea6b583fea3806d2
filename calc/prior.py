"""A utilization prior from published runs: low / expected / high, and goodput.

Every published run in `data/runs.csv` gives one utilization sample, all measured against a
16-bit (BF16/FP16) dense peak so they are comparable (a run against an FP8 peak reads half:
DeepSeek-V3 is about 0.19 of the H800's FP8 peak and 0.39 of its BF16 peak):
- a run with reported device-hours (whole run): implied utilization / goodput, since reported
  hours include restarts and failures (hours = compute hours / goodput);
- a run with only a reported MFU (steady state): that MFU.
low / expected / high are the 10th / 50th / 90th percentiles of the samples, numpy's default
"linear" estimator (Hyndman & Fan 1996, "Sample quantiles in statistical packages", definition 7).
Low utilization means MORE hours: a range of hours runs (1/(high·g), 1/(expected·g), 1/(low·g)).

Goodput (effective training time): Llama Team 2024, "The Llama 3 Herd of Models",
arXiv:2407.21783, §3.3.4: "higher than 90% effective training time" over a 54-day snapshot with
466 job interruptions. So reported device-hours = compute hours / 0.90.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .checks import TrainingBudgetError
from .devices import DeviceTable, catalog
from .flops import train_flops
from .runs import Run, implied_utilization, load_runs
from .schedule import SECONDS_PER_HOUR, TERA

GOODPUT = 0.90          # Llama 3 paper, arXiv:2407.21783, §3.3.4: > 90% effective training time
PERCENTILES = (10.0, 50.0, 90.0)   # low, expected, high
METHOD = "numpy.percentile 'linear' (Hyndman & Fan 1996, definition 7) of the runs' utilizations"
MIN_RUNS = 8            # fewest runs a narrowed prior needs; below it the prior uses all runs
LARGE_SCALE_DEVICES = 1000   # "large" runs: at least this many devices
COMPARABLE_PEAKS = ("bf16", "fp16")

# Device families by the hardware name's start (architecture generation).
FAMILIES = {"A100": "ampere", "H100": "hopper", "H200": "hopper", "H800": "hopper", "B200": "blackwell",
            "GB200": "blackwell", "V100": "volta", "TPU": "tpu", "MI3": "cdna3", "L40S": "ada",
            "RTX 4090": "ada", "Gaudi": "gaudi"}


@dataclass(frozen=True)
class UtilizationPrior:
    """Utilization (share of the 16-bit dense peak during compute time) and goodput.

    `low`, `expected`, `high` are the 10th, 50th and 90th percentiles of `n_runs` runs
    selected as `basis` says.
    """

    low: float
    expected: float
    high: float
    goodput: float
    n_runs: int
    basis: str
    method: str = METHOD

    def hour_factors(self) -> np.ndarray:
        """Multipliers of a utilization-1.0 figure for (low, expected, high) hours: 1/(u·goodput)."""
        return 1.0 / (np.array([self.high, self.expected, self.low]) * self.goodput)

    def as_dict(self) -> dict[str, float | int | str]:
        return {"low": self.low, "expected": self.expected, "high": self.high, "goodput": self.goodput,
                "n_runs": self.n_runs, "basis": self.basis, "method": self.method}


def family(name: str, table: DeviceTable | None = None) -> str:
    """The family ('ampere', 'hopper', 'tpu', ...) of a device name, hardware name or family."""
    text = name.strip()
    if text.lower() in FAMILIES.values():
        return text.lower()
    with contextlib.suppress(TrainingBudgetError):
        text = (catalog() if table is None else table).get(text).hardware
    for prefix, fam in FAMILIES.items():
        if text.upper().startswith(prefix.upper()):
            return fam
    raise TrainingBudgetError(f"family: no device family for {name!r} (known: {sorted(set(FAMILIES.values()))})")


def run_utilization(run: Run, table: DeviceTable | None = None, goodput: float = GOODPUT) -> float | None:
    """A run's utilization sample: implied / goodput where hours are published, else its MFU."""
    if run.peak_precision not in COMPARABLE_PEAKS:
        return None
    implied = implied_utilization(run, table)
    if implied is not None:
        return implied / goodput
    return run.reported_mfu


def compute_device_hours(run: Run, utilization: float, table: DeviceTable | None = None) -> float:
    """Device-hours of compute (no downtime) for `run` at `utilization` of its device's peak."""
    peak = (catalog() if table is None else table).get(run.device).tflops * TERA
    return float(train_flops(run.flops_params, run.tokens)) / (peak * utilization * SECONDS_PER_HOUR)


def _select(runs: Iterable[Run], fam: str | None, min_devices: float | None,
            table: DeviceTable | None) -> list[Run]:
    chosen = list(runs)
    if fam is not None:
        chosen = [r for r in chosen if family(r.device, table) == fam]
    if min_devices is not None:
        chosen = [r for r in chosen if r.devices is not None and r.devices >= min_devices]
    return chosen


def utilization_prior(device_family: str | None = None, *, min_devices: float | None = None,
                      runs: Iterable[Run] | None = None, goodput: float = GOODPUT,
                      table: DeviceTable | None = None) -> UtilizationPrior:
    """Low / expected / high utilization (10th / 50th / 90th percentiles) from published runs.

    `device_family` ('ampere', 'hopper', a device or hardware name) and `min_devices` (e.g. 1000
    for large runs) narrow the runs used, where at least MIN_RUNS (8) runs remain; otherwise the
    prior falls back to all runs and `basis` says so. `runs` defaults to the packaged runs.
    """
    if not 0 < goodput <= 1:
        raise TrainingBudgetError(f"goodput must be in (0, 1] (got {goodput!r})")
    pool = list(load_runs() if runs is None else runs)
    fam = None if device_family is None else family(device_family, table)
    wanted = " and ".join(s for s in (fam and f"family {fam}",
                                      min_devices is not None and f">= {min_devices:g} devices") if s)
    chosen = _select(pool, fam, min_devices, table) if wanted else pool
    samples = _samples(chosen, table, goodput)
    basis = f"runs with {wanted}" if wanted else "all runs"
    if wanted and len(samples) < MIN_RUNS:
        basis = f"all runs (only {len(samples)} with {wanted}, fewer than {MIN_RUNS})"
        samples = _samples(pool, table, goodput)
    if len(samples) < 2:
        raise TrainingBudgetError(f"utilization_prior needs at least 2 runs with hours or MFU (got {len(samples)})")
    low, mid, high = np.percentile(np.array(samples), PERCENTILES)
    return UtilizationPrior(float(low), float(mid), float(high), goodput, len(samples), basis)


def _samples(runs: Iterable[Run], table: DeviceTable | None, goodput: float) -> list[float]:
    return [u for r in runs if (u := run_utilization(r, table, goodput)) is not None]

