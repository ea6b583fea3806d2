"""The utilization prior's model (calc.prior.utilization describes it): device families, each run's
sample, the ridge fit on the published runs and the basis line. calc.prior.utilization (utilization_prior)
and calc.prior.job_prior (the job-keyed prior) both build on it and calc.prior.utilization re-exports it.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.checks import positive
from ..base.errors import TrainingBudgetError, show
from ..base.fastinit import fast_init
from ..hardware.catalog import DeviceTable, catalog
from ..money.totals import SECONDS_PER_HOUR, TERA
from ..physics.flops import train_flops
from . import ridge
from .runs import Run, implied_utilization, load_runs

# Goodput (the share of wall-clock time spent training): fitted on the runs, the scope column of
# calc/prior/ridge.py (whole-run hours against steady-state ones): exp(b5) on the 41 main runs, to two
# places (tests/calc/prior/test_prior.py checks it against the fit). For comparison, the Llama 3 paper
# (arXiv:2407.21783, §3.3.4) states "higher than 90% effective training time" over a 54-day
# snapshot with 466 job interruptions (LLAMA3_GOODPUT, the prior's assumed figure before 2026-12).
GOODPUT = 0.79
LLAMA3_GOODPUT = 0.90
GOODPUT_BASIS = ("fitted on the published runs' whole-run against steady-state hours (calc.prior); the Llama 3 "
                 "paper, arXiv:2407.21783 §3.3.4, states above 0.90")
COVERAGE = 0.85         # the band's target; its percentiles sit at the finite-sample level COVERAGE·(1 + 1/n)
METHOD = ("Huber-weighted ridge regression of log utilization on device family, log10 active params, log10 "
          "devices, MoE and log10 tokens per param, whole-run hours over a fitted goodput; band: expected x "
          "constant factors, the percentiles of the leave-one-out residuals at 0.85 (1 + 1/n)")
BASELINE = "ampere"     # the family the others are measured against (the most runs)
COMPARABLE_PEAKS = ("bf16", "fp16")
# The shipped band's method (BANDS): the constant one, so that utilization_prior, every range
# (job_prior) and the workbook's native cells give one band for one job. jackknife+ stays an
# option (fit_model(band="jackknife+")); both meet the three goals (bench/backtest.py --compare).
BAND = "loo"
DROPPED: frozenset[str] = frozenset()   # features the shipped model leaves out

# Device families by the hardware name's start (architecture generation); first match wins,
# so "L40S" is tried before "L4" and "MI35" before "MI3".
FAMILIES = (("A100", "ampere"), ("H100", "hopper"), ("H200", "hopper"), ("H800", "hopper"),
            ("GB200", "blackwell"), ("GB300", "blackwell"), ("B200", "blackwell"), ("B300", "blackwell"),
            ("RTX PRO 6000", "blackwell"), ("RTX 5090", "blackwell"), ("V100", "volta"), ("TPU", "tpu"),
            ("MI35", "cdna4"), ("MI3", "cdna3"), ("L40S", "ada"), ("L4", "ada"), ("RTX 4090", "ada"),
            ("Gaudi", "gaudi"), ("Trainium", "trainium"), ("M3 Ultra", "apple"), ("M4", "apple"))
NAMES = {"ampere": "Ampere", "hopper": "Hopper", "blackwell": "Blackwell", "volta": "Volta", "tpu": "TPU",
         "cdna3": "CDNA 3", "cdna4": "CDNA 4", "ada": "Ada", "gaudi": "Gaudi", "trainium": "Trainium",
         "apple": "Apple"}
# A family without runs takes the level of the nearest generation (runs-2026 reference: Blackwell
# -> Hopper, MI300 -> Hopper): parts of 2022-2025 with 4th/5th-generation matrix units and a
# peak-to-bandwidth ratio near the H100's go to Hopper; Volta, TPU and Apple go to Ampere.
NEAREST = {"blackwell": "hopper", "cdna3": "hopper", "cdna4": "hopper", "ada": "hopper", "gaudi": "hopper",
           "trainium": "hopper", "volta": "ampere", "tpu": "ampere", "apple": "ampere", "hopper": "ampere",
           "ampere": "hopper"}


@fast_init  # calc/base/fastinit.py: the same frozen dataclass, built faster (one per new scalar question)
@dataclass(frozen=True)
class UtilizationPrior:
    """Utilization (share of the 16-bit dense peak during compute time) and goodput.

    `expected` is the model's prediction for the job `basis` describes; `low` and `high` bound
    its 85% band (BAND) over the `n_runs` runs it was fitted on.
    """

    low: float
    expected: float
    high: float
    goodput: float
    n_runs: int
    basis: str
    method: str = METHOD

    def __post_init__(self) -> None:
        """Cap at 100% of the peak, which no run can exceed (an absurd job, far outside the runs, can be
        predicted above it): expected = min(1, model); where the model's expected is above 1 the band is
        its constant factors around the capped 1 (low = model low / model expected); low and high at most
        1; the basis says so. Elementwise for a job-keyed prior of arrays."""
        low, e, high = self.low, self.expected, self.high
        if type(e) is float and type(high) is float:  # the scalar question: one comparison when nothing binds
            if high <= 1.0:
                return
            over = e > 1.0
            new = (low / e if over else min(low, 1.0), 1.0 if over else e, 1.0)
            note = (f" (capped at 100% of peak: the model gives {e:.3g} x peak)" if over
                    else " (band capped at 100% of peak)")
        else:
            a_low, a_e, a_high = (np.asarray(v, dtype=np.float64) for v in (low, e, high))
            if not np.any(a_high > 1.0):
                return
            over = a_e > 1.0
            new = (np.where(over, a_low / a_e, np.minimum(a_low, 1.0)), np.minimum(a_e, 1.0), np.minimum(a_high, 1.0))
            new = tuple(float(v) if np.ndim(v) == 0 else v for v in new)
            note = " (capped at 100% of peak where the model gives more)"
        tail = ": " + BASIS_TAIL.format(n=self.n_runs)  # the note goes before how the prior was made
        basis = (self.basis[:-len(tail)] + note + tail) if self.basis.endswith(tail) else self.basis + note
        for name, value in zip(("low", "expected", "high", "basis"), (*new, basis), strict=True):
            object.__setattr__(self, name, value)

    def factors(self, goodput: Any = None) -> tuple[Any, Any, Any]:
        """Multipliers of a utilization-1.0 figure for the low, expected and high hours: 1/(u·goodput)
        for the high, expected and low u (`goodput` None: the prior's own). Floats for a scalar
        prior (IEEE's product and quotient, numpy's exactly), arrays for a job-keyed prior of arrays."""
        g = self.goodput if goodput is None else goodput
        high, e, low = self.high, self.expected, self.low
        if type(high) is float and type(e) is float and type(low) is float and type(g) is float:
            return (1.0 / (high * g), 1.0 / (e * g), 1.0 / (low * g))
        made = (1.0 / (np.asarray(u, dtype=np.float64) * g) for u in (high, e, low))
        return tuple(float(f) if np.ndim(f) == 0 else f for f in made)  # type: ignore[return-value]

    def hour_factors(self) -> np.ndarray:
        """`factors` as one array: (low, expected, high) hours' multipliers; for a job-keyed prior of
        arrays, the three on the leading axis."""
        return np.array(self.factors(), dtype=np.float64)

    def as_dict(self) -> dict[str, float | int | str]:
        return {"low": self.low, "expected": self.expected, "high": self.high, "goodput": self.goodput,
                "n_runs": self.n_runs, "basis": self.basis, "method": self.method}


def family(name: str, table: DeviceTable | None = None) -> str:
    """The family ('ampere', 'hopper', 'tpu', ...) of a device name, hardware name or family."""
    text = name.strip()
    if text.lower() in NAMES:
        return text.lower()
    with contextlib.suppress(TrainingBudgetError):
        text = (catalog() if table is None else table).get(text).hardware or text
    for prefix, fam in FAMILIES:
        if text.upper().startswith(prefix.upper()):
            return fam
    raise TrainingBudgetError(f"family: no device family for {show(name)} (known: {', '.join(sorted(NAMES))})")


def run_utilization(run: Run, table: DeviceTable | None = None, goodput: float = GOODPUT) -> float | None:
    """A run's steady-state utilization: implied (/ goodput for whole-run hours) where hours are
    published, else its MFU; None for a run measured against a peak that is not 16-bit. The fit
    takes goodput 1 (the implied figure) and the scope column instead (run_point)."""
    if run.peak_precision not in COMPARABLE_PEAKS:
        return None
    implied = implied_utilization(run, table)
    if implied is not None:
        return implied / goodput if run.hours_scope == "whole-run" else implied
    return run.reported_mfu


def compute_device_hours(run: Run, utilization: float, table: DeviceTable | None = None) -> float:
    """Device-hours of compute (no downtime) for `run` at `utilization` of its device's peak."""
    peak = (catalog() if table is None else table).get(run.device).tflops * TERA
    return float(train_flops(run.flops_params, run.tokens)) / (peak * utilization * SECONDS_PER_HOUR)


def run_point(run: Run, table: DeviceTable | None = None) -> ridge.Point:
    """What the model knows of a published run (whole_run: its sample is from whole-run hours)."""
    whole = run.hours_scope == "whole-run" and implied_utilization(run, table) is not None
    return ridge.Point(family(run.device, table), math.log10(run.flops_params),
                       None if run.devices is None else math.log10(run.devices), run.moe,
                       math.log10(run.tokens / run.flops_params), whole)


BANDS = ("jackknife+", "loo")   # the band's method: per-question jackknife+, or constant LOO multipliers


@dataclass(frozen=True)
class Model:
    """The fitted prior: the ridge fit, the goodput it reports (the fit's own: fit.goodput), the
    band's method (BANDS) and the features left out of the model (ridge.FEATURES)."""

    fit: ridge.Fit
    goodput: float
    band: str = "jackknife+"
    dropped: frozenset[str] = frozenset()

    def level(self, fam: str | None) -> str | None:
        """`fam`, or the nearest generation with runs (None: unknown family)."""
        seen = set()
        while fam is not None and fam != self.fit.baseline and fam not in self.fit.families:
            if fam in seen or fam not in NEAREST:
                return self.fit.baseline
            seen.add(fam)
            fam = NEAREST[fam]
        return fam


def fit_model(runs: Iterable[Run], table: DeviceTable | None = None, goodput: float = GOODPUT,
              band: str | None = None, dropped: frozenset[str] | None = None) -> Model:
    """The prior's model fitted on the `use="main"` runs among `runs` that give a sample (the
    implied utilization, whole-run rows flagged: the fit estimates goodput); `goodput` is the
    figure the prior reports for hours; `band` (BANDS) and `dropped` features default to the
    shipped model's (BAND, DROPPED)."""
    points, ys = [], []
    for r in runs:
        if r.use == "main" and (u := run_utilization(r, table, 1.0)) is not None:
            points.append(run_point(r, table))
            ys.append(math.log(u))
    if len(points) < 8:
        raise TrainingBudgetError(f"utilization_prior needs at least 8 runs with hours or MFU (got {len(points)})")
    band = BAND if band is None else band
    dropped = DROPPED if dropped is None else frozenset(dropped)
    if band not in BANDS:
        raise TrainingBudgetError(f"band must be one of {', '.join(BANDS)} (got {show(band)})")
    return Model(ridge.fit(points, np.array(ys), BASELINE, dropped=dropped), goodput, band, dropped)


@functools.lru_cache(maxsize=4)
def packaged_prior(goodput: float) -> Model:
    return fit_model(load_runs(), None, goodput)


def table_family(device: Any, table: DeviceTable | None) -> tuple[str | None, str]:
    """(family or None, how the basis names it) for `device`: a name, a family, a rate or None."""
    if device is None:
        return None, "Published"
    if isinstance(device, (bool, np.bool_)) or not isinstance(device, (str, int, float, np.floating, np.integer)):
        raise TrainingBudgetError(f"utilization_prior: device must be a device name or family (got {show(device)})")
    if not isinstance(device, str):
        positive("device", device)
        return None, f"Published (family of a {show(device)} TFLOP/s device unknown)"
    try:
        return family(device, table), ""
    except TrainingBudgetError:
        (catalog() if table is None else table).get(device)  # unknown name: the closest known ones
        return None, f"Published (family of {device.strip()} unknown)"


@functools.lru_cache(maxsize=1024)
def packaged_family(device: str) -> tuple[str | None, str]:
    """table_family in the packaged catalog (frozen), once per name."""
    return table_family(device, None)


# How the basis line ends: the model and its band (addin/functions/prior_native writes it natively).
BASIS_TAIL = ("robust ridge regression over {n} published runs (family, log params, log devices, MoE, tokens "
              "per param, scope); 85% band: constant leave-one-out factors")   # the workbook's formula: <= 200


def scaled_count(value: float, names: tuple[tuple[float, str], ...], spec: str = "g") -> str:
    """`value` in the largest unit of `names` it reaches ((1e9, "B"): 7e9 -> "7B")."""
    for scale, suffix in names:
        if value >= scale:
            return f"{value / scale:{spec}}{suffix}"
    return f"{value:{spec}}"


def decade_label(value: float, unit: str, names: tuple[tuple[float, str], ...]) -> str:
    lo = 10.0 ** math.floor(math.log10(value))  # a float: 1e308's decade ends beyond float64
    hi = lo * 10.0
    text = scaled_count(lo, names)
    return f"{text}-{scaled_count(hi, names)}{unit}" if hi < math.inf else f"{text} or more{unit}"


def basis_text(fam: str | None, level: str | None, fam_text: str, params: float | None, n_dev: float | None,
           is_moe: bool | None, n: int, per_param: float | None = None) -> str:
    """One line: which runs the prior describes, then how it was made."""
    who = fam_text or (NAMES[fam] if fam == level else f"{NAMES[fam]} (no runs; as {NAMES[level]})")
    kind = {None: "", True: " MoE", False: " dense"}[is_moe]
    size = "" if params is None else " of " + decade_label(params, "", ((1e12, "T"), (1e9, "B"), (1e6, "M")))
    scale = "" if n_dev is None else " on " + decade_label(n_dev, " devices", ((1e3, "k"),))
    if per_param is not None:
        scale += ", " + decade_label(per_param, " tokens/param", ((1e3, "k"),))
    return f"{who}{kind} runs{size}{scale}: " + BASIS_TAIL.format(n=n)
