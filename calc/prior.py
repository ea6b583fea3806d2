"""A utilization prior from published runs: low / expected / high, and goodput, for the job at hand.

Samples: each `use="main"` run in `data/runs.csv` gives one utilization, a share of the
16-bit (BF16/FP16) dense peak, so all are comparable (DeepSeek-V3 is about 0.19 of the H800's
FP8 peak and 0.39 of its BF16 peak):
- reported whole-run device-hours: implied utilization / goodput (hours include restarts);
- steady-state hours (derived from throughput, as LLaMA's Table 15): implied utilization;
- only an MFU (steady state): that MFU (on the 6·N·D basis, see calc/runs.py).

Model (calc/ridge.py): ridge regression of log utilization on the device family, log10 active
parameters, log10 devices, MoE and log10 tokens per active parameter (a planner knows all five;
in the back-test the last moves inside 83% -> 85%, error 15.5% -> 13.6%, band x2.25 -> x2.20).
Device generation is the factor that matters: a Hopper run reaches about x0.57 of an Ampere
run's share of its own peak (the H100's 16-bit peak rose 3.2x over the A100's, its memory
bandwidth 1.6x). Families with no runs take the nearest generation's level (NEAREST). `expected`
is exp(prediction). The band (BAND = "loo") is expected times two constants: the lower and upper
percentiles (numpy's "linear" quantile: Hyndman & Fan 1996, definition 7) of the leave-one-out
residuals y_i - x_i·beta_-i at the finite-sample level 0.85·(1 + 1/n) (about 87% for 41 runs, the
conformal correction), so a spreadsheet writes it natively and every door gives one band. The
jackknife+ interval (Barber, Candes, Ramdas & Tibshirani 2021, Annals of Statistics 49(1), §2:
percentiles of y_hat_-i(x) + R_i over the refits, so it widens far from the runs) is an option.
What the planner does not give (device, size, scale, MoE, tokens) is set to the runs' mean and
the band's residuals are computed the same way, so a vaguer question gets a wider band;
`utilization_prior()` with no arguments is the prior of "a published run" in general.
Every range (calc.budget's utilization "prior", train_range, the planner, the workbook) uses the
job-keyed prior (job_prior; "prior:job" is the same): the same model and band, as named numbers
(Coefficients) for the workbook's native cells. Back-test on the 41 main runs
(bench/backtest.py --compare; inside / median error / median band): the shipped constant band
85% / 13.6% / x2.26 (misses the band goal by x0.06); jackknife+ 85% / 13.6% / x2.20 (meets it);
without tokens per param 83% / 15.5% / x2.25 and x2.34;
the all-runs prior asked nothing (the default of every range before 2026-12) 83% / 19.5% / x2.50.
Low utilization means MORE hours: hours run (1/(high·g), 1/(expected·g), 1/(low·g)).

Goodput (effective training time): Llama Team 2024, "The Llama 3 Herd of Models",
arXiv:2407.21783, §3.3.4: "higher than 90% effective training time" over a 54-day snapshot with
466 job interruptions. So reported whole-run device-hours = compute hours / 0.90.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import ridge
from .arith import log10
from .checks import ResultOverflowError, TrainingBudgetError, flag, positive, show, whole
from .devices import DeviceTable, catalog
from .flops import train_flops
from .frozen import fast_init
from .runs import Run, implied_utilization, load_runs
from .schedule import SECONDS_PER_HOUR, TERA

GOODPUT = 0.90          # Llama 3 paper, arXiv:2407.21783, §3.3.4: > 90% effective training time
COVERAGE = 0.85         # the band's target; its percentiles sit at the finite-sample level COVERAGE·(1 + 1/n)
METHOD = ("ridge regression of log utilization on device family, log10 active params, log10 devices, MoE "
          "and log10 tokens per param; band: expected x constant factors, the percentiles of the leave-one-out "
          "residuals at 0.85 (1 + 1/n)")
BASELINE = "ampere"     # the family the others are measured against (the most runs)
COMPARABLE_PEAKS = ("bf16", "fp16")
# The shipped band's method (BANDS): the constant one, so that utilization_prior, every range
# (job_prior) and the workbook's native cells give one band for one job. jackknife+ stays an
# option (fit_model(band="jackknife+")): it meets the band goal (x2.20) where this one is x2.26.
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


@fast_init  # calc/frozen.py: the same frozen dataclass, built faster (one per new scalar question)
@dataclass(frozen=True)
class UtilizationPrior:
    """Utilization (share of the 16-bit dense peak during compute time) and goodput.

    `expected` is the model's prediction for the job `basis` describes; `low` and `high` bound
    its nominal 85% jackknife+ band over the `n_runs` runs it was fitted on.
    """

    low: float
    expected: float
    high: float
    goodput: float
    n_runs: int
    basis: str
    method: str = METHOD

    def hour_factors(self) -> np.ndarray:
        """Multipliers of a utilization-1.0 figure for (low, expected, high) hours: 1/(u·goodput);
        for a job-keyed prior of arrays, the three on the leading axis."""
        return 1.0 / (np.array([self.high, self.expected, self.low], dtype=np.float64) * self.goodput)

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
    """A run's utilization sample: implied (/ goodput for whole-run hours) where hours are
    published, else its MFU; None for a run measured against a peak that is not 16-bit."""
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
    """What the model knows of a published run."""
    return ridge.Point(family(run.device, table), math.log10(run.flops_params),
                       None if run.devices is None else math.log10(run.devices), run.moe,
                       math.log10(run.tokens / run.flops_params))


BANDS = ("jackknife+", "loo")   # the band's method: per-question jackknife+, or constant LOO multipliers


@dataclass(frozen=True)
class Model:
    """The fitted prior: the ridge fit, its goodput, the band's method (BANDS) and the features
    left out of the model (ridge.FEATURES)."""

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
    """The prior's model fitted on the `use="main"` runs among `runs` that give a sample; `band`
    (BANDS) and `dropped` features default to the shipped model's (BAND, DROPPED)."""
    points, ys = [], []
    for r in runs:
        if r.use == "main" and (u := run_utilization(r, table, goodput)) is not None:
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
def _packaged(goodput: float) -> Model:
    return fit_model(load_runs(), None, goodput)


def _one(name: str, value: Any, check) -> float | None:
    """A scalar argument checked by `check`, or None; an array of one element reads as that element."""
    if value is None:
        return None
    if isinstance(value, (list, tuple, np.ndarray)) and np.size(value) != 1:
        raise TrainingBudgetError(f"utilization_prior: {name} must be one number (got {show(value)})")
    got = check(name, value)
    return float(np.reshape(got, -1)[0]) if isinstance(got, np.ndarray) else float(got)


def _device_family(device: Any, table: DeviceTable | None) -> tuple[str | None, str]:
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
def _packaged_family(device: str) -> tuple[str | None, str]:
    """_device_family in the packaged catalog (frozen), once per name."""
    return _device_family(device, None)


def utilization_prior(device: Any = None, *, active_params: Any = None, devices: Any = None, moe: Any = None,
                      tokens: Any = None, runs: Iterable[Run] | None = None, goodput: float = GOODPUT,
                      table: DeviceTable | None = None) -> UtilizationPrior:
    """Low / expected / high utilization of a 16-bit dense peak for a job, from published runs.

    `device`: a device name, hardware name or family ('hopper'); `active_params`: parameters
    doing the FLOPs (the active ones for MoE); `devices`: how many; `moe`: a mixture of experts;
    `tokens`: training tokens (read as tokens per active parameter, so it needs `active_params`).
    Each may be None (not known: the band widens). `runs` defaults to the packaged runs.
    """
    if not isinstance(goodput, (int, float)) or isinstance(goodput, bool) or not 0 < goodput <= 1:
        raise TrainingBudgetError(f"goodput must be in (0, 1] (got {show(goodput)})")
    params = _one("active_params", active_params, positive)
    n_dev = _one("devices", devices, whole)
    is_moe = None if moe is None else flag("moe", moe)
    n_tok = _one("tokens", tokens, positive)
    fam, fam_text = _device_family(device, table)
    if runs is None and table is None:
        return _packaged_prior(float(goodput), fam, fam_text, params, n_dev, is_moe, n_tok)
    return _prior(fit_model(load_runs() if runs is None else runs, table, goodput), fam, fam_text, params, n_dev,
                  is_moe, n_tok)


@functools.lru_cache(maxsize=1024)
def _packaged_prior(goodput: float, fam: str | None, fam_text: str, params: float | None, n_dev: float | None,
                    is_moe: bool | None, n_tok: float | None) -> UtilizationPrior:
    """The packaged runs' prior, once per distinct question (a budget of many scenarios asks few)."""
    return _prior(_packaged(goodput), fam, fam_text, params, n_dev, is_moe, n_tok)


def _prior(model: Model, fam: str | None, fam_text: str, params: float | None, n_dev: float | None,
           is_moe: bool | None, n_tok: float | None = None) -> UtilizationPrior:
    level = model.level(fam)
    per_param = None if n_tok is None or params is None else math.log10(n_tok / params)
    point = ridge.Point(level, None if params is None else math.log10(params),
                        None if n_dev is None else math.log10(n_dev), is_moe, per_param)
    hidden = frozenset(k for k, v in (("family", level), ("params", params), ("devices", n_dev),
                                      ("moe", is_moe), ("tokens", per_param)) if v is None)
    hidden = hidden | model.dropped
    centre = ridge.predict(model.fit, point, hidden)
    cover = COVERAGE * (1 + 1 / model.fit.n)
    if model.band == "loo":
        lo, hi = ridge.constant_band(model.fit, cover, hidden)
    else:
        x = ridge.row(point, model.fit.families, model.fit.means, hidden)
        spread = model.fit.loo_beta @ x + ridge.loo_residuals(model.fit, hidden) - centre   # jackknife+
        tail = 100 * (1 - min(1.0, cover)) / 2
        lo, hi = np.percentile(spread, (tail, 100 - tail))
    basis = _basis(fam, level, fam_text, params, n_dev, is_moe, model.fit.n,
                   None if per_param is None else 10 ** per_param)
    return UtilizationPrior(float(np.exp(centre + lo)), float(np.exp(centre)), float(np.exp(centre + hi)),
                            model.goodput, model.fit.n, basis)


# How the basis line ends: the model and its band (addin/functions/prior_native writes it natively).
BASIS_TAIL = ("ridge regression over {n} published runs (family, log params, log devices, MoE, tokens per param); "
              "85% band: constant leave-one-out factors")


def _scaled(value: float, names: tuple[tuple[float, str], ...], spec: str = "g") -> str:
    """`value` in the largest unit of `names` it reaches ((1e9, "B"): 7e9 -> "7B")."""
    for scale, suffix in names:
        if value >= scale:
            return f"{value / scale:{spec}}{suffix}"
    return f"{value:{spec}}"


def _decade(value: float, unit: str, names: tuple[tuple[float, str], ...]) -> str:
    lo = 10.0 ** math.floor(math.log10(value))  # a float: 1e308's decade ends beyond float64
    hi = lo * 10.0
    text = _scaled(lo, names)
    return f"{text}-{_scaled(hi, names)}{unit}" if hi < math.inf else f"{text} or more{unit}"


def _basis(fam: str | None, level: str | None, fam_text: str, params: float | None, n_dev: float | None,
           is_moe: bool | None, n: int, per_param: float | None = None) -> str:
    """One line: which runs the prior describes, then how it was made."""
    who = fam_text or (NAMES[fam] if fam == level else f"{NAMES[fam]} (no runs; as {NAMES[level]})")
    kind = {None: "", True: " MoE", False: " dense"}[is_moe]
    size = "" if params is None else " of " + _decade(params, "", ((1e12, "T"), (1e9, "B"), (1e6, "M")))
    scale = "" if n_dev is None else " on " + _decade(n_dev, " devices", ((1e3, "k"),))
    if per_param is not None:
        scale += ", " + _decade(per_param, " tokens/param", ((1e3, "k"),))
    return f"{who}{kind} runs{size}{scale}: " + BASIS_TAIL.format(n=n)


# --- the job-keyed prior: one closed form a sheet writes natively ----------------------------------

KEYED = "prior:job"   # utilization="prior:job": each job's own prior (job_prior); "prior": every run's
JOB_BAND = "loo"      # its band: constant multipliers (ridge.constant_band), so low/high = expected x constants
JOB_METHOD = METHOD   # one model, one band: utilization_prior and job_prior


@dataclass(frozen=True)
class Coefficients:
    """The job-keyed prior as numbers: log u = intercept + family effect + params·(log10 active
    params − 10) + devices·(log10 devices − 3) + moe·[MoE] + tokens·(log10 tokens per active
    param − 2); expected = exp(log u), low = expected·exp(band_low), high = expected·exp(band_high)
    (`*_unknown`: a device whose family is unknown: its effect is the runs' mean, its band wider)."""

    intercept: float
    family: tuple[tuple[str, float], ...]   # every family of NAMES with its level's effect (baseline 0)
    unknown_family: float
    params: float
    devices: float
    moe: float
    tokens: float
    band_low: float
    band_high: float
    band_low_unknown: float
    band_high_unknown: float
    goodput: float
    n_runs: int

    def effect(self, fam: str | None) -> float:
        return dict(self.family).get(fam, self.unknown_family) if fam is not None else self.unknown_family

    @property
    def devices_exponent(self) -> float:
        """b in expected = A · devices^b (the devices coefficient over ln 10)."""
        return self.devices / math.log(10)

    @property
    def tokens_exponent(self) -> float:
        """c in expected = A · tokens^c at fixed active params (the tokens coefficient over ln 10)."""
        return self.tokens / math.log(10)


@functools.lru_cache(maxsize=4)
def coefficients(goodput: float = GOODPUT) -> Coefficients:
    """The packaged runs' job-keyed prior (constant band) as named numbers."""
    model = fit_model(load_runs(), None, goodput, band=JOB_BAND)
    fit = model.fit
    beta, cols = fit.beta, ridge.columns(fit.families)
    dummies = dict(zip(fit.families, beta[cols["family"]], strict=True))
    unknown = float(fit.means[cols["family"]] @ beta[cols["family"]])
    cover = COVERAGE * (1 + 1 / fit.n)
    lo, hi = ridge.constant_band(fit, cover)
    lo_u, hi_u = ridge.constant_band(fit, cover, frozenset({"family"}))
    effects = tuple((f, float(dummies.get(model.level(f), 0.0))) for f in sorted(NAMES))
    return Coefficients(float(beta[0]), effects, unknown, float(beta[cols["params"]]), float(beta[cols["devices"]]),
                        float(beta[cols["moe"]]), float(beta[cols["tokens"]]), lo, hi, lo_u, hi_u, goodput, fit.n)


def _families(device: Any, table: DeviceTable | None) -> Any:
    """The family of each device name (None where unknown or a number), one look-up per distinct name."""
    if isinstance(device, str):
        return _packaged_family(device)[0] if table is None else _device_family(device, table)[0]
    if isinstance(device, np.ndarray) and device.dtype.kind in "UO":
        names = {d: _device_family(str(d), table)[0] for d in np.unique(device)}
        return np.vectorize(lambda d: names[d] or "", otypes=[object])(device)
    return None


def job_prior(device: Any, *, active_params: Any, devices: Any = 1, moe: Any = False, tokens: Any,
              table: DeviceTable | None = None, goodput: float = GOODPUT) -> UtilizationPrior:
    """Each job's own prior (Coefficients): low / expected / high utilization elementwise (numpy
    broadcasting over active params, devices, MoE flags, tokens and device names), the same
    arithmetic for a scalar as for each element of an array (scalar questions cached)."""
    if (table is None and type(device) in _KEYS and type(active_params) in _KEYS and type(devices) in _KEYS
            and type(moe) in _KEYS and type(tokens) in _KEYS and type(goodput) in _KEYS):
        return _job_prior_cached(device, active_params, devices, moe, tokens, goodput)
    return _job_prior(device, active_params, devices, moe, tokens, table, goodput)


_KEYS = frozenset((str, float, int, bool))  # the types of a cacheable scalar question (one type test each)


@functools.lru_cache(maxsize=4096)
def _job_prior_cached(device: Any, active_params: Any, devices: Any, moe: Any, tokens: Any,
                      goodput: float) -> UtilizationPrior:
    return _job_prior(device, active_params, devices, moe, tokens, None, goodput)


def _job_prior(device: Any, active_params: Any, devices: Any, moe: Any, tokens: Any, table: DeviceTable | None,
               goodput: float) -> UtilizationPrior:
    c = coefficients(goodput)
    fam = _families(device, table)
    if (type(fam) is not np.ndarray and type(active_params) in _NUMBERS and type(devices) in _NUMBERS
            and type(tokens) in _NUMBERS):
        p, n, tok = float(positive("active_params", active_params)), whole("devices", devices), positive("tokens",
                                                                                                           tokens)
        m = float(flag("moe", moe)) if isinstance(moe, (str, bool)) else float(moe)
        _per_param(tok, p, tokens, active_params)
        effects, lo, hi = _scalar_terms(c, fam is not None)
        # the same ufuncs as for arrays; exp · e^band as floats is numpy's float64 product exactly
        exp = float(np.exp(_log_u(c, effects.get(fam, c.unknown_family), p, float(n), m, float(tok))))
        return UtilizationPrior(exp * lo, exp, exp * hi, goodput, c.n_runs,
                                _job_basis(fam, device, p, float(n), m, float(tok), c), JOB_METHOD)
    p = np.asarray(positive("active_params", active_params), dtype=np.float64)
    n = np.asarray(whole("devices", devices), dtype=np.float64)
    tok = np.asarray(positive("tokens", tokens), dtype=np.float64)
    _per_param(tok, p, tokens, active_params)
    m = np.asarray(moe, dtype=np.float64) if not isinstance(moe, (str, bool)) else float(flag("moe", moe))
    if isinstance(fam, np.ndarray):
        effect = np.vectorize(lambda f: c.effect(f or None), otypes=[np.float64])(fam)
        known = fam != ""
    else:
        effect, known = np.float64(c.effect(fam)), np.bool_(fam is not None)
    log_u = _log_u(c, effect, p, n, m, tok)
    lo = np.where(known, c.band_low, c.band_low_unknown)
    hi = np.where(known, c.band_high, c.band_high_unknown)
    exp = np.exp(log_u)
    low, high = exp * np.exp(lo), exp * np.exp(hi)
    if np.ndim(log_u) == 0:
        low, exp, high = float(low), float(exp), float(high)
    return UtilizationPrior(low, exp, high, goodput, c.n_runs, _job_basis(fam, device, p, n, m, tok, c), JOB_METHOD)


_NUMBERS = frozenset((float, int))


_SCALAR: dict[tuple[int, bool], tuple[Coefficients, dict[str, float], float, float]] = {}


def _scalar_terms(c: Coefficients, known: bool) -> tuple[dict[str, float], float, float]:
    """A scalar job's constants, once per coefficients object (by identity: hashing a Coefficients
    costs more than the look-up saves): each family's effect (Coefficients.effect as a dict) and
    exp of the band's two constants (known family or not) as floats, the ufunc the array path applies."""
    hit = _SCALAR.get((id(c), known))
    if hit is None or hit[0] is not c:
        if len(_SCALAR) > 16:
            _SCALAR.clear()
        lo, hi = (c.band_low, c.band_high) if known else (c.band_low_unknown, c.band_high_unknown)
        hit = _SCALAR[(id(c), known)] = (c, dict(c.family), float(np.exp(lo)), float(np.exp(hi)))
    return hit[1], hit[2], hit[3]


def _log_u(c: Coefficients, effect: Any, p: Any, n: Any, m: Any, tok: Any) -> Any:
    """log utilization (Coefficients): floats or arrays alike, through numpy's ufuncs (arith.log10)."""
    return (c.intercept + effect + c.params * (log10(p) - 10.0) + c.devices * (log10(n) - 3.0)
            + c.moe * m + c.tokens * (log10(tok / p) - 2.0))


def _per_param(tok: Any, p: Any, tokens: Any, active_params: Any) -> None:
    """Tokens per parameter, a feature of the prior, must be a finite number."""
    if type(tok) is float and type(p) is float:
        finite = tok / p < math.inf   # a float quotient overflows to inf, it does not raise
    else:
        with np.errstate(over="ignore"):
            finite = bool(np.all(np.isfinite(tok / p)))
    if not finite:
        raise ResultOverflowError(f"tokens per parameter overflows float64 (tokens {show(tokens)}, "
                                  f"active_params {show(active_params)})")


def _job_basis(fam: Any, device: Any, p: Any, n: Any, m: Any, tok: Any, c: Coefficients) -> str:
    """One line: the runs the job's prior describes (the ranges of an array of jobs)."""
    if type(p) is float and type(n) is float and type(tok) is float and type(fam) is not np.ndarray:
        return _scalar_basis(fam, device, p, n, bool(m), tok / p, c)  # _job_prior's scalar question
    if not isinstance(fam, np.ndarray) and all(type(x) is float or np.ndim(x) == 0 for x in (p, n, m, tok)):
        return _scalar_basis(fam, device, float(p), float(n), bool(m), float(tok / p), c)
    tail = BASIS_TAIL.format(n=c.n_runs)
    fams = sorted({NAMES[f] for f in np.ravel(fam) if f}) if isinstance(fam, np.ndarray) else (
        [NAMES[fam]] if fam else [])
    size = _decade(float(np.min(p)), "", _SIZES) + (
        "" if np.min(p) == np.max(p) else " to " + _decade(float(np.max(p)), "", _SIZES))
    return f"each job's own runs ({'/'.join(fams) or 'unknown family'}, {size} params): {tail}"


def _scalar_basis(fam: str | None, device: Any, p: float, n: float, moe: bool, per_param: float,
                  c: Coefficients) -> str:
    """_job_basis of one job. The text depends on the family (or the device naming an unknown one),
    MoE, each figure's decade and which figures lie beyond the runs: worked out once per that key."""
    beyond = _beyond(c.goodput, p, n, per_param)
    key = (fam, device if fam is None and type(device) is str else None, moe, c.n_runs, c.goodput,
           math.floor(math.log10(p)), math.floor(math.log10(n)), math.floor(math.log10(per_param)), beyond)
    hit = _BASES.get(key)
    if hit is None:
        fam_text = "" if fam is not None else (_packaged_family(device)[1] if isinstance(device, str)
                                               else "Published (family of the device unknown)")
        if len(_BASES) > 4096:
            _BASES.clear()
        head = _basis(fam, None if fam is None else _packaged(c.goodput).level(fam), fam_text, p, n, moe,
                      c.n_runs, per_param)
        hit = _BASES[key] = head.split(": ")[0] + beyond + ": " + BASIS_TAIL.format(n=c.n_runs)
    return hit


_SIZES = ((1e12, "T"), (1e9, "B"), (1e6, "M"))
_BASES: dict[tuple, str] = {}


@functools.lru_cache(maxsize=4)
def _spans(goodput: float) -> dict[str, tuple[float, float]]:
    """The (min, max) the fitted runs span: active params, devices, tokens per active param."""
    pts = _packaged(goodput).fit.points
    out = {}
    for key, attr in (("params", "log_params"), ("devices", "log_devices"), ("tokens/param", "log_tokens_per_param")):
        logs = [getattr(q, attr) for q in pts if getattr(q, attr) is not None]
        out[key] = (10 ** min(logs), 10 ** max(logs))
    return out


@functools.lru_cache(maxsize=4)
def _inside(goodput: float) -> tuple[tuple[float, float], ...]:
    """_spans' (params, devices, tokens/param) ranges with _beyond's 0.1% margins."""
    return tuple((lo * 0.999, hi * 1.001) for lo, hi in _spans(goodput).values())


def _beyond(goodput: float, params: float, devices: float, per_param: float) -> str:
    """' (extrapolated: the runs span ...)' for each of the job's figures outside the runs' range, else ''."""
    (p0, p1), (d0, d1), (t0, t1) = _inside(goodput)
    if p0 <= params <= p1 and d0 <= devices <= d1 and t0 <= per_param <= t1:  # the common job: inside
        return ""
    names = {"params": _SIZES, "devices": ((1e3, "k"),), "tokens/param": ((1e3, "k"),)}
    out = []
    for key, value in (("params", params), ("devices", devices), ("tokens/param", per_param)):
        lo, hi = _spans(goodput)[key]
        if not lo * 0.999 <= value <= hi * 1.001:
            out.append(f"{_scaled(lo, names[key], '.2g')}-{_scaled(hi, names[key], '.2g')} {key}")
    return f" (extrapolated: the runs span {', '.join(out)})" if out else ""
