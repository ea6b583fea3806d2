"""The utilization a job's hours rest on, for calc.budget: a share the user gives, the published
runs' prior (the job's own, calc.job_prior, or a UtilizationPrior given), or the step model
(utilization="step", calc/compose/step_terms.py); each with its goodput and where both came from.
A scalar job's prior terms are kept by the inputs that key them (a workbook recalculating asks the
same question again)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.checks import fraction
from ..base.errors import TrainingBudgetError, show
from ..hardware.catalog import DeviceTable
from ..model.shapes import preset_params
from ..prior.job_prior import scalar_job_prior
from ..prior.utilization import GOODPUT, GOODPUT_BASIS, UtilizationPrior, job_prior
from .job import Job, Span
from .ranges import top_factor, wants_prior
from .step_terms import step_prior
from .terms import device_terms as _device

_tuple_new = tuple.__new__  # a Span in one C call (calc/compose/job.py)

GOODPUT_SOURCE = GOODPUT_BASIS  # the prior's goodput (calc.GOODPUT): fitted on the runs
_PRIOR_WORDS = ("prior", "prior:job")  # the common utilization texts: no further test for "step"
NO_GOODPUT = "not counted: restarts and failures excluded; give goodput (--goodput) to count them"
_Terms = tuple[Any, str, Any, str, "UtilizationPrior | None", Any, float]
_JOB_TERMS: dict[tuple[Any, ...], _Terms] = {}  # a scalar job's prior terms, by the inputs that key them


def _prior_for(job: Job, active: Any) -> UtilizationPrior:
    """The utilization prior for `job`: the one given (a UtilizationPrior, e.g. calc.utilization_prior()
    over every run), else the job's own (utilization "prior" or "prior:job": calc.job_prior of
    its device's family, active params, devices, MoE = fewer active than total parameters, tokens per
    active param; elementwise over arrays, band factors constant, so the workbook's native ranges
    (addin/functions/prior_native.py) equal it at any input)."""
    if isinstance(job.utilization, UtilizationPrior):
        return job.utilization
    total = float(preset_params(job.model.preset).total) if job.model.preset is not None else job.model.params
    if type(active) is float and type(total) is float:  # the common scalar job: no numpy
        moe: Any = active < total
    else:
        moe = np.asarray(active, dtype=np.float64) < np.asarray(total, dtype=np.float64)
        moe = bool(moe) if moe.ndim == 0 else moe
    return job_prior(job.cluster.device, active_params=active, devices=job.cluster.devices, moe=moe, tokens=job.tokens,
                     table=job.cluster.table, goodput=GOODPUT)


def _prior_terms(prior: UtilizationPrior, g: Any) -> tuple[Span, str, Any, float]:
    """The prior's utilizations as a Span, where they come from, its hour factors at goodput `g`
    (UtilizationPrior.factors: 1 / (u · g) for the high, expected and low u) and the largest.
    Floats for a scalar prior, arrays for a job-keyed prior of an array of jobs."""
    span, basis = _tuple_new(Span, (prior.low, prior.expected, prior.high)), f"prior: {prior.basis}"
    factors = prior.factors(g)
    return span, basis, factors, top_factor(factors)


def _utilization(job: Job, active: Any, total: Any, tokens: Any, n: Any) -> _Terms:
    """(utilization or Span, basis, goodput, goodput basis, prior, the range's hour factors, the
    largest factor) for `job` (`active`, `total`, `tokens`, `n`: its checked counts). A scalar job's
    own prior ("prior" / "prior:job" on a named device of the packaged catalog, the prior's
    goodput) is worked out once per (utilization text, device, active, MoE, devices, tokens), the
    inputs job_prior keys it by."""
    util = job.utilization
    if (type(util) is not str or type(active) is not float or type(total) is not float or type(n) is not float
            or type(tokens) is not float or type(job.cluster.device) is not str or job.goodput is not None
            or job.cluster.table is not None):
        return _utilization_terms(job, active)
    key = (util, job.cluster.device, active, active < total, n, tokens)
    hit = _JOB_TERMS.get(key)
    if hit is None:
        if not wants_prior(util):
            return _utilization_terms(job, active)
        # the job's own prior from its checked numbers (no job_prior cache: these terms are kept here)
        prior = scalar_job_prior(job.cluster.device, active, n, key[3], tokens, GOODPUT)
        span, basis, factors, top = _prior_terms(prior, prior.goodput)
        hit = (span, basis, prior.goodput, GOODPUT_SOURCE, prior, factors, top)
        if len(_JOB_TERMS) > 4096:
            _JOB_TERMS.clear()
        _JOB_TERMS[key] = hit
    return hit


def _utilization_terms(job: Job, active: Any) -> _Terms:
    """_utilization's terms, worked out."""
    util = job.utilization
    if type(util) is not float and wants_prior(util):
        prior = _prior_for(job, active)
        g, g_basis = ((prior.goodput, GOODPUT_SOURCE) if job.goodput is None
                      else (fraction("goodput", job.goodput), "given"))
        span, basis, factors, top = _prior_terms(prior, g)
        return span, basis, g, g_basis, prior, factors, top
    if isinstance(util, str):
        raise TrainingBudgetError(f"utilization must be a number in (0, 1] or 'prior' (got {show(util)})")
    u = fraction("utilization", util)
    if job.goodput is None:
        return u, "given", 1.0, NO_GOODPUT, None, None, 1.0
    return u, "given", fraction("goodput", job.goodput), "given", None, None, 1.0


def _step(job: Job, per_token: Any, n: Any, table: DeviceTable) -> tuple[Any, ...]:
    """_utilization's terms, and the Step, from the step model (calc/compose/step_terms.py): its
    range on the figures' row (the 16-bit row of an FP8 peak, as for the prior), goodput fitted
    on the published whole runs unless the job gives one."""
    rate = _device(job.cluster.device, table, True)[3]
    prior, st, g_words = step_prior(job, n, per_token, rate, table)
    g, g_basis = ((prior.goodput, g_words) if job.goodput is None else (fraction("goodput", job.goodput), "given"))
    span, basis, factors, top = _prior_terms(prior, g)
    return span, basis.removeprefix("prior: "), g, g_basis, prior, factors, top, st
