"""A utilization prior from published runs: low / expected / high, and goodput, for the job at hand.

Samples: each `use="main"` run in `data/runs.csv` gives one utilization, a share of the
16-bit (BF16/FP16) dense peak, so all are comparable (DeepSeek-V3 is about 0.19 of the H800's
FP8 peak and 0.39 of its BF16 peak):
- reported device-hours: the implied utilization; whole-run hours (restarts included) and
  steady-state hours (derived from throughput, as LLaMA's Table 15) are kept apart by the
  model's scope column, whose coefficient is log goodput, fitted (GOODPUT = 0.79 on the 41 runs;
  the Llama 3 paper, arXiv:2407.21783 §3.3.4, states "higher than 90% effective training time"
  over a 54-day snapshot: LLAMA3_GOODPUT, assumed here before 2026-12);
- only an MFU (steady state): that MFU (on the 6·N·D basis, see calc/prior/runs.py).

Model (calc/prior/ridge.py): Huber-weighted ridge regression of log utilization on the device family,
log10 active parameters, log10 devices, MoE and log10 tokens per active parameter (a planner
knows all five) and the scope; a question is steady-state utilization and its hours divide by
goodput. Device generation is the factor that matters: a Hopper run reaches about x0.57 of an
Ampere run's share of its own peak (the H100's 16-bit peak rose 3.2x over the A100's, its memory
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
(Coefficients) for the workbook's native cells. Back-test on the 41 main runs (bench/backtest.py
--compare; inside / median error / median band; each fold fits its own goodput and band):
the shipped constant band 85% / 14.2% / x2.09 (meets the three goals); jackknife+ 85% / 14.2% /
x2.02; without tokens per param 83% / 14.1% / x2.32 (x2.24 jackknife+); the global p10/p50/p90
of 2026-11 (goodput 0.90) 76% / 18.9% / x2.24. Before 2026-12-01 (plain ridge, goodput 0.90
assumed): 85% / 13.6% / x2.26. Every variant tried, with its figures: bench/backtest.py.
Low utilization means MORE hours: hours run (1/(high·g), 1/(expected·g), 1/(low·g)).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..base.checks import flag, positive, whole
from ..base.errors import TrainingBudgetError, show
from ..hardware.catalog import DeviceTable
from . import ridge
from .job_prior import (
    BASES,
    COUNT_SIZES,
    JOB_BAND,
    JOB_METHOD,
    KEYED,
    Coefficients,
    beyond_words,
    coefficients,
    device_families,
    job_basis,
    job_prior,
    job_prior_cached,
    job_prior_fast,
    log_utilization,
    per_param_rate,
    run_spans,
)
from .regression import (
    BAND,
    BANDS,
    BASELINE,
    BASIS_TAIL,
    COMPARABLE_PEAKS,
    COVERAGE,
    DROPPED,
    FAMILIES,
    GOODPUT,
    GOODPUT_BASIS,
    LLAMA3_GOODPUT,
    METHOD,
    NAMES,
    NEAREST,
    Model,
    UtilizationPrior,
    basis_text,
    compute_device_hours,
    decade_label,
    family,
    fit_model,
    packaged_family,
    packaged_prior,
    run_point,
    run_utilization,
    scaled_count,
    table_family,
)
from .runs import Run, load_runs

__all__ = ["BAND", "BANDS", "BASELINE", "BASIS_TAIL", "COMPARABLE_PEAKS", "COVERAGE", "DROPPED", "FAMILIES",
           "GOODPUT", "GOODPUT_BASIS", "LLAMA3_GOODPUT", "JOB_BAND", "JOB_METHOD", "KEYED", "METHOD", "NAMES",
           "NEAREST", "BASES", "COUNT_SIZES", "Coefficients", "Model", "UtilizationPrior", "basis_text",
           "beyond_words", "decade_label", "table_family", "device_families", "job_basis", "job_prior_fast",
           "job_prior_cached", "log_utilization", "packaged_prior", "packaged_family", "per_param_rate",
           "prior_point", "scaled_count", "run_spans", "coefficients", "compute_device_hours", "family", "fit_model",
           "job_prior", "run_point", "run_utilization", "utilization_prior"]


def _one(name: str, value: Any, check) -> float | None:
    """A scalar argument checked by `check`, or None; an array of one element reads as that element."""
    if value is None:
        return None
    if isinstance(value, (list, tuple, np.ndarray)) and np.size(value) != 1:
        raise TrainingBudgetError(f"utilization_prior: {name} must be one number (got {show(value)})")
    got = check(name, value)
    return float(np.reshape(got, -1)[0]) if isinstance(got, np.ndarray) else float(got)


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
    fam, fam_text = table_family(device, table)
    if runs is None and table is None:
        return _packaged_prior(float(goodput), fam, fam_text, params, n_dev, is_moe, n_tok)
    return prior_point(fit_model(load_runs() if runs is None else runs, table, goodput), fam, fam_text, params, n_dev,
                  is_moe, n_tok)


@functools.lru_cache(maxsize=1024)
def _packaged_prior(goodput: float, fam: str | None, fam_text: str, params: float | None, n_dev: float | None,
                    is_moe: bool | None, n_tok: float | None) -> UtilizationPrior:
    """The packaged runs' prior, once per distinct question (a budget of many scenarios asks few)."""
    return prior_point(packaged_prior(goodput), fam, fam_text, params, n_dev, is_moe, n_tok)


def prior_point(model: Model, fam: str | None, fam_text: str, params: float | None, n_dev: float | None,
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
    basis = basis_text(fam, level, fam_text, params, n_dev, is_moe, model.fit.n,
                   None if per_param is None else 10 ** per_param)
    return UtilizationPrior(float(np.exp(centre + lo)), float(np.exp(centre)), float(np.exp(centre + hi)),
                            model.goodput, model.fit.n, basis)
