"""The job-keyed prior (calc.prior.utilization describes the model): each job's own low / expected / high
utilization as one closed form in log space (Coefficients), so a sheet writes it natively
(addin/functions/prior_native.py); calc.prior.utilization re-exports every name here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.arith import log10
from ..base.checks import flag, fraction, positive, whole
from ..base.errors import TINY, ResultOverflowError, show
from ..hardware.catalog import DeviceTable
from . import ridge
from .regression import (
    BAND,
    BASIS_TAIL,
    COVERAGE,
    GOODPUT,
    METHOD,
    NAMES,
    UtilizationPrior,
    basis_text,
    decade_label,
    fit_model,
    packaged_family,
    packaged_prior,
    scaled_count,
    table_family,
)
from .runs import load_runs

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
    """The packaged runs' job-keyed prior (constant band) as named numbers; `goodput` in (0, 1]."""
    fraction("goodput", goodput)
    # the shipped model's own fit when the bands agree (one robust fit of the runs, not two)
    model = packaged_prior(goodput) if JOB_BAND == BAND else fit_model(load_runs(), None, goodput, band=JOB_BAND)
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


def device_families(device: Any, table: DeviceTable | None) -> Any:
    """The family of each device name (None where unknown or a number), one look-up per distinct name."""
    if isinstance(device, str):
        return packaged_family(device)[0] if table is None else table_family(device, table)[0]
    if isinstance(device, np.ndarray) and device.dtype.kind in "UO":
        names = {d: table_family(str(d), table)[0] for d in np.unique(device)}
        return np.vectorize(lambda d: names[d] or "", otypes=[object])(device)
    return None


def job_prior(device: Any, *, active_params: Any, devices: Any = 1, moe: Any = False, tokens: Any,
              table: DeviceTable | None = None, goodput: float = GOODPUT) -> UtilizationPrior:
    """Each job's own prior (Coefficients): low / expected / high utilization elementwise (numpy
    broadcasting over active params, devices, MoE flags, tokens and device names), the same
    arithmetic for a scalar as for each element of an array (scalar questions cached)."""
    if (table is None and type(device) in _KEYS and type(active_params) in _KEYS and type(devices) in _KEYS
            and type(moe) in _KEYS and type(tokens) in _KEYS and type(goodput) in _KEYS):
        return job_prior_cached(device, active_params, devices, moe, tokens, goodput)
    return job_prior_fast(device, active_params, devices, moe, tokens, table, goodput)


_KEYS = frozenset((str, float, int, bool))  # the types of a cacheable scalar question (one type test each)


@functools.lru_cache(maxsize=4096)
def job_prior_cached(device: Any, active_params: Any, devices: Any, moe: Any, tokens: Any,
                      goodput: float) -> UtilizationPrior:
    return job_prior_fast(device, active_params, devices, moe, tokens, None, goodput)


def job_prior_fast(device: Any, active_params: Any, devices: Any, moe: Any, tokens: Any, table: DeviceTable | None,
               goodput: float) -> UtilizationPrior:
    c = coefficients(goodput)
    fam = device_families(device, table)
    if (type(fam) is not np.ndarray and type(active_params) in _NUMBERS and type(devices) in _NUMBERS
            and type(tokens) in _NUMBERS):
        p, n, tok = float(positive("active_params", active_params)), whole("devices", devices), positive("tokens",
                                                                                                           tokens)
        m = float(flag("moe", moe)) if isinstance(moe, (str, bool)) else float(moe)
        per_param_rate(tok, p, tokens, active_params)
        return _scalar_prior(c, fam, device, p, float(n), m, float(tok))
    p = np.asarray(positive("active_params", active_params), dtype=np.float64)
    n = np.asarray(whole("devices", devices), dtype=np.float64)
    tok = np.asarray(positive("tokens", tokens), dtype=np.float64)
    per_param_rate(tok, p, tokens, active_params)
    m = np.asarray(moe, dtype=np.float64) if not isinstance(moe, (str, bool)) else float(flag("moe", moe))
    if isinstance(fam, np.ndarray):
        effect = np.vectorize(lambda f: c.effect(f or None), otypes=[np.float64])(fam)
        known = fam != ""
    else:
        effect, known = np.float64(c.effect(fam)), np.bool_(fam is not None)
    log_u = log_utilization(c, effect, p, n, m, tok)
    lo = np.where(known, c.band_low, c.band_low_unknown)
    hi = np.where(known, c.band_high, c.band_high_unknown)
    exp = np.exp(log_u)
    low, high = exp * np.exp(lo), exp * np.exp(hi)
    if np.ndim(log_u) == 0:
        low, exp, high = float(low), float(exp), float(high)
    return UtilizationPrior(low, exp, high, goodput, c.n_runs, job_basis(fam, device, p, n, m, tok, c), JOB_METHOD)


_NUMBERS = frozenset((float, int))


def scalar_job_prior(device: str, active_params: float, devices: float, moe: bool, tokens: float,
                     goodput: float = GOODPUT) -> UtilizationPrior:
    """job_prior of one job on the packaged catalog from checked Python floats (active params and
    tokens > 0, devices a whole number >= 1: calc.budget's scalar question), with no cache (its
    caller keeps the answer): the same arithmetic as job_prior's."""
    c = coefficients(goodput)
    per_param_rate(tokens, active_params, tokens, active_params)
    return _scalar_prior(c, packaged_family(device)[0], device, active_params, devices, 1.0 if moe else 0.0, tokens)


def _scalar_prior(c: Coefficients, fam: str | None, device: Any, p: float, n: float, m: float,
                  tok: float) -> UtilizationPrior:
    """One job's prior from checked floats (`fam` its device's family or None, `m` 1.0 for MoE)."""
    effects, lo, hi = _scalar_terms(c, fam is not None)
    # the same ufuncs as for arrays; exp · e^band as floats is numpy's float64 product exactly
    exp = float(np.exp(log_utilization(c, effects.get(fam, c.unknown_family), p, n, m, tok)))
    return UtilizationPrior(exp * lo, exp, exp * hi, c.goodput, c.n_runs, job_basis(fam, device, p, n, m, tok, c),
                            JOB_METHOD)


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


def log_utilization(c: Coefficients, effect: Any, p: Any, n: Any, m: Any, tok: Any) -> Any:
    """log utilization (Coefficients): floats or arrays alike, through numpy's ufuncs (arith.log10)."""
    return (c.intercept + effect + c.params * (log10(p) - 10.0) + c.devices * (log10(n) - 3.0)
            + c.moe * m + c.tokens * (log10(tok / p) - 2.0))


def per_param_rate(tok: Any, p: Any, tokens: Any, active_params: Any) -> None:
    """Tokens per parameter, a feature of the prior (its log), must be a finite number > 0: a quotient
    that overflows to inf or underflows to 0 (or a subnormal: 1e-231 tokens on 1e93 parameters) is refused."""
    if type(tok) is float and type(p) is float:
        q = tok / p   # a float quotient overflows to inf (underflows to 0), it does not raise
        big, small = not q < math.inf, q < TINY
    else:
        with np.errstate(over="ignore", under="ignore"):
            q = tok / p
        big, small = not bool(np.all(np.isfinite(q))), bool(np.any(q < TINY))
    if big or small:
        raise ResultOverflowError(f"tokens per parameter {'overflows' if big else 'underflows'} float64 (tokens "
                                  f"{show(tokens)}, active_params {show(active_params)})")


def job_basis(fam: Any, device: Any, p: Any, n: Any, m: Any, tok: Any, c: Coefficients) -> str:
    """One line: the runs the job's prior describes (the ranges of an array of jobs)."""
    if type(p) is float and type(n) is float and type(tok) is float and type(fam) is not np.ndarray:
        return _scalar_basis(fam, device, p, n, bool(m), tok / p, c)  # job_prior_fast's scalar question
    if not isinstance(fam, np.ndarray) and all(type(x) is float or np.ndim(x) == 0 for x in (p, n, m, tok)):
        return _scalar_basis(fam, device, float(p), float(n), bool(m), float(tok / p), c)
    tail = BASIS_TAIL.format(n=c.n_runs)
    fams = sorted({NAMES[f] for f in np.ravel(fam) if f}) if isinstance(fam, np.ndarray) else (
        [NAMES[fam]] if fam else [])
    size = decade_label(float(np.min(p)), "", COUNT_SIZES) + (
        "" if np.min(p) == np.max(p) else " to " + decade_label(float(np.max(p)), "", COUNT_SIZES))
    return f"each job's own runs ({'/'.join(fams) or 'unknown family'}, {size} params): {tail}"


def _scalar_basis(fam: str | None, device: Any, p: float, n: float, moe: bool, per_param: float,
                  c: Coefficients) -> str:
    """job_basis of one job. The text depends on the family (or the device naming an unknown one),
    MoE, each figure's decade and which figures lie beyond the runs: worked out once per that key."""
    beyond = beyond_words(c.goodput, p, n, per_param)
    key = (fam, device if fam is None and type(device) is str else None, moe, c.n_runs, c.goodput,
           math.floor(math.log10(p)), math.floor(math.log10(n)), math.floor(math.log10(per_param)), beyond)
    hit = BASES.get(key)
    if hit is None:
        # a device of unknown family, named as _device_family names it: from the job's own table (a measured
        # row of a --catalog or workbook), which the packaged catalog need not hold
        unknown = f"family of {device.strip()} unknown" if isinstance(device, str) else "family of the device unknown"
        fam_text = "" if fam is not None else f"Published ({unknown})"
        if len(BASES) > 4096:
            BASES.clear()
        head = basis_text(fam, None if fam is None else packaged_prior(c.goodput).level(fam), fam_text, p, n, moe,
                      c.n_runs, per_param)
        hit = BASES[key] = head.split(": ")[0] + beyond + ": " + BASIS_TAIL.format(n=c.n_runs)
    return hit


COUNT_SIZES = ((1e12, "T"), (1e9, "B"), (1e6, "M"))
BASES: dict[tuple, str] = {}


@functools.lru_cache(maxsize=4)
def run_spans(goodput: float) -> dict[str, tuple[float, float]]:
    """The (min, max) the fitted runs span: active params, devices, tokens per active param."""
    pts = packaged_prior(goodput).fit.points
    out = {}
    for key, attr in (("params", "log_params"), ("devices", "log_devices"), ("tokens/param", "log_tokens_per_param")):
        logs = [getattr(q, attr) for q in pts if getattr(q, attr) is not None]
        out[key] = (10 ** min(logs), 10 ** max(logs))
    return out


@functools.lru_cache(maxsize=4)
def _inside(goodput: float) -> tuple[tuple[float, float], ...]:
    """run_spans' (params, devices, tokens/param) ranges with beyond_words's 0.1% margins."""
    return tuple((lo * 0.999, hi * 1.001) for lo, hi in run_spans(goodput).values())


def beyond_words(goodput: float, params: float, devices: float, per_param: float) -> str:
    """' (extrapolated: the runs span ...)' for each of the job's figures outside the runs' range, else ''."""
    (p0, p1), (d0, d1), (t0, t1) = _inside(goodput)
    if p0 <= params <= p1 and d0 <= devices <= d1 and t0 <= per_param <= t1:  # the common job: inside
        return ""
    names = {"params": COUNT_SIZES, "devices": ((1e3, "k"),), "tokens/param": ((1e3, "k"),)}
    out = []
    for key, value in (("params", params), ("devices", devices), ("tokens/param", per_param)):
        lo, hi = run_spans(goodput)[key]
        if not lo * 0.999 <= value <= hi * 1.001:
            out.append(f"{scaled_count(lo, names[key], '.2g')}-{scaled_count(hi, names[key], '.2g')} {key}")
    return f" (extrapolated: the runs span {', '.join(out)})" if out else ""
