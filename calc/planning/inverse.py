"""The planner's questions the other way round: devices for a deadline and tokens for a budget.

Every answer is read off `calc.budget(job)`, the one composer, so every figure a plan shows
is what `estimate` says for the same job. Hours scale as 1 / devices (hours = FLOPs / (rate ·
utilization · devices), calc.money.totals.hours_at) and device-hours, cost and tokens are linear in
tokens, so each question is one Budget at a reference point, solved in closed form, rounded to a
whole count and checked with a Budget at the answer:
- devices for `days`: the fewest devices n (a multiple of `node` and of the layout's replica) with
  hours <= 24 · days and memory per device within the device's usable memory (calc.budget's
  reserve); n - node does not meet it;
- tokens for `usd`: the most whole tokens whose cost is within `usd`; tokens for `days`: the most
  whole tokens whose hours are within 24 · days on the job's devices.
A range (utilization "prior") answers each of low / expected / high; `case` picks one.
Monotonicity the closed forms assume, stated and checked: the job-keyed prior's utilization moves
as devices^b and tokens^c (calc.prior.utilization.Coefficients), so hours ∝ devices^-(1+b) must fall as devices
rise (b > -1) and cost ∝ tokens^(1-c) must rise with tokens (c < 1); either failing is refused
(_devices_exponent, _tokens_exponent). Where the prior's 100% cap bends the power law, bisection
(monotone under the same conditions) finds the exact answer; every answer is checked with a Budget.
Units: days, hours, USD, counts. calc.planning.rank (ranked plans) builds on this module and re-exports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.checks import positive, whole
from ..base.errors import ResultOverflowError, ResultUnderflowError, TrainingBudgetError, show
from ..compose.budget import Job, Span, budget, usable_bytes
from ..compose.job import job as job_of
from ..compose.ranges import wants_prior
from ..compose.step_terms import wants_step
from ..hardware.catalog import DeviceTable, catalog
from ..money.totals import devices_needed
from ..physics.stages import busiest_params
from ..prior.utilization import coefficients
from ..step import DEADLINE_BOUNDS, deadline_bound

CASES = ("low", "expected", "high")  # of the answer's hours: "high" is the slow case (most hours)
HOURS_PER_DAY = 24.0
EXACT = 1e-12  # an exact fit is not rounded up (as calc.devices_needed)
MAX_STEPS = 64  # node-sized steps tried past the closed form when a prior depends on the device count


def _case(name: str | None) -> str | None:
    if name is None or name in CASES:
        return name
    raise TrainingBudgetError(f"case must be one of {', '.join(CASES)} (got {show(name)})")


def pick(figure: Any, case: str | None) -> Any:
    """A Budget figure at `case`: a point as it is; a Span's low / expected / high, or (case None)
    the three on a trailing axis (calc/compose/ranges.py's convention)."""
    if not isinstance(figure, Span):
        return figure
    if case is not None:
        return getattr(figure, _case(case))
    return np.stack([np.asarray(v, dtype=np.float64) for v in figure.as_tuple()], axis=-1)


def _replica(job: Job) -> Any:
    """Devices in one model replica times expert parallel: the step a device count moves in."""
    return (whole("tensor_parallel", job.layout.tp) * whole("pipeline_parallel", job.layout.pp)
            * whole("context_parallel", job.layout.cp) * whole("expert_parallel", job.layout.ep))


def _memory_devices(job: Job, table: DeviceTable) -> Any:
    """Fewest devices whose per-device bytes fit the usable memory (calc.usable_bytes) on the
    job's layout and ZeRO stage: calc.devices_needed with the Budget's parameter counts."""
    usable = usable_bytes(job.cluster.device, table)
    if usable is None:
        raise TrainingBudgetError(f"device {show(job.cluster.device)} has no memory figure: a plan needs one")
    experts = stage = 0.0
    if job.model.preset is not None and job.model.preset.shape:
        b, shape = job.model.preset.params(), job.model.preset.shape
        experts = float(b.experts) if shape.get("n_experts", 1) > 1 else 0.0
        stage = float(shape["vocab"] * shape["d_model"])
        params, experts = busiest_params(float(b.total), experts, stage, shape["n_layers"],
                                         whole("pipeline_parallel", job.layout.pp))
    else:
        params = positive("params", job.model.params)
    tr = job.training
    return devices_needed(params, job.cluster.device, method=tr.method, optimizer=tr.optimizer,
                          zero_stage=job.layout.zero_stage, trainable=tr.trainable, activations=tr.activations,
                          table=table,  # usable memory: devices_needed takes the same reserve
                          tensor_parallel=job.layout.tp, pipeline_parallel=job.layout.pp,
                          expert_parallel=job.layout.ep, context_parallel=job.layout.cp,
                          expert_params=experts, stage_params=stage)


def _round_up(n: Any, step: Any) -> Any:
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(n), np.ceil(np.asarray(n, dtype=np.float64) / step) * step, np.inf)


def _meets(job: Job, n: Any, step: Any, limit_hours: Any, case: str | None, memory: bool) -> Any:
    """Where the Budget at n devices (inf: none) trains within the limit (and fits, with `memory`)."""
    finite = np.isfinite(n)
    try:
        b = budget(job.with_(devices=_out(np.where(finite, n, step))))
    except ResultUnderflowError as e:  # the count the deadline asks for makes the hours underflow
        days = float(np.min(limit_hours)) / HOURS_PER_DAY
        raise ResultUnderflowError(f"days (got {show(days)}) out of range: it needs {show(float(np.max(n)))} "
                                   f"devices, where {e}") from None
    ok = np.asarray(pick(b.hours, case)) <= np.asarray(limit_hours) * (1 + EXACT)
    if memory and b.fits is not None:
        ok = ok & np.asarray(b.fits)
    return ok & finite


def _out(x: Any) -> Any:
    return float(x) if np.ndim(x) == 0 else np.asarray(x, dtype=np.float64)


# Devices per node at most 2^31: far above any machine (an NVIDIA GB200 NVL72 rack joins 72 GPUs,
# https://www.nvidia.com/en-us/data-center/gb200-nvl72/), and small enough that the least common
# multiple of a node and a layout's replica (tensor · pipeline · context, each below 2^31 devices
# in any plan) stays exact in int64.
MAX_NODE = 2**31


def node_size(node: Any) -> Any:
    """`node` checked: whole numbers in [1, MAX_NODE] (a float, or a float array)."""
    n = whole("node", node)
    if np.any(np.asarray(n) > MAX_NODE):
        raise TrainingBudgetError(f"node must be at most 2^31 = {MAX_NODE:,} devices (got {show(node)})")
    return n


def devices_for(job: Job, days: Any, *, case: str | None = "expected", node: Any = 1,
                memory: bool = True) -> Any:
    """Fewest devices (whole, a multiple of `node` and of the layout's tensor · pipeline · context ·
    expert sizes) on which `job` trains within `days` days and fits in memory; inf where no count
    up to the closed form plus MAX_STEPS steps does (never for ZeRO-3 without activations).

    Hours at the prior's `case` ("expected", or "high" for the slow case) for a range; case None
    gives low / expected / high devices on a trailing axis. `memory` False: time only (any count
    fits). Broadcasts over the job's arrays.
    """
    if case is None and (wants_prior(job.utilization) or wants_step(job.utilization)):
        return np.stack([np.asarray(devices_for(job, days, case=c, node=node, memory=memory), dtype=np.float64)
                         for c in CASES], axis=-1)  # low devices at the low (fast) case's hours
    table = catalog() if job.cluster.table is None else job.cluster.table
    limit = HOURS_PER_DAY * positive("days", days)
    step = np.lcm(np.asarray(node_size(node), dtype=np.int64), np.asarray(_replica(job), dtype=np.int64))
    step = step.astype(np.float64)
    ref = budget(job.with_(devices=_out(step)))  # hours scale as 1 / devices
    one = np.asarray(pick(ref.hours, case)) * step
    b = _devices_exponent(job)
    if b:  # hours(n) = one / n · (step / n)^b, the job-keyed prior's expected = A · n^b: solve for n
        n_time = np.ceil((one * step ** b / limit) ** (1.0 / (1.0 + b)) * (1 - EXACT))
    else:
        with np.errstate(over="ignore"):
            n_time = np.ceil(one / limit * (1 - EXACT))
    if ref.step is not None and np.ndim(one) == 0:  # the step model: a far closer bound, from the step itself
        n_time = max(float(n_time), _step_bound(job, ref, step, limit, case))
        if n_time == np.inf:  # as when the counts tried pass the batch's data-parallel ranks
            raise TrainingBudgetError(f"no device count meets {show(float(days))} days: the part of each step that "
                                      "more devices do not shorten (bubble, exposed DP) takes longer; the global "
                                      "batch runs out of data-parallel ranks first", "global_batch_tokens")
    if not np.all(np.isfinite(n_time)):  # (inf for "never fits" comes from memory, never from time)
        raise ResultOverflowError(f"days (got {show(float(np.min(limit)) / HOURS_PER_DAY)}) out of range: the devices "
                                  "it needs overflow float64")
    n_memory = _memory_devices(job, table) if memory else 1.0
    n = _round_up(np.maximum(np.maximum(n_time, n_memory), 1.0), step)
    ok = _meets(job, n, step, limit, case, memory)
    if b and not np.all(ok | ~np.isfinite(n)):
        n, ok = _bisect(job, n, ok, np.ceil(one / limit * (1 - EXACT)), step, limit, case, memory)
    for _ in range(MAX_STEPS):  # only a prior that changes with the device count gets here
        if np.all(ok | ~np.isfinite(n)):
            break
        n = np.where(ok, n, n + _advance(n, step))
        ok = _meets(job, n, step, limit, case, memory)
    if b:  # the closed form rounded up: one step fewer must not meet it either
        fewer = ok & (n - step >= np.maximum(n_memory, 1.0)) & _meets(job, np.maximum(n - step, step), step, limit,
                                                                      case, memory)
        n = np.where(fewer, n - step, n)
    return _out(np.where(ok, n, np.inf))


def _step_bound(job: Job, ref: Any, step: Any, limit: Any, case: str | None) -> float:
    """A job at utilization "step": the fewest devices whose hours can meet `limit`, raised
    DEADLINE_BOUNDS times from the step at the last bound (calc.deadline_bound; `ref` the Budget at
    `step` devices), inf where no count can. hours / step seconds is the same at every count (the
    steps over goodput, and the case's band)."""
    r = float(_replica(job))
    n, b = float(step), ref
    for _ in range(DEADLINE_BOUNDS):
        per_second = float(pick(b.hours, case)) / float(b.step.step_seconds)
        k = deadline_bound(b.step, n / r, job.layout.zero_stage, float(limit), per_second)
        if k == np.inf:
            return np.inf
        n = k * r
        try:
            b = budget(job.with_(devices=n))
        except TrainingBudgetError:  # the count passes the batch's data-parallel ranks (ref's count took it)
            return np.inf
    return n


def _bisect(job: Job, n: Any, ok: Any, bound: Any, step: Any, limit: Any, case: str | None,
            memory: bool) -> tuple[Any, Any]:
    """Where the closed form's count n falls short (the prior capped at 100% of peak stops growing as
    devices^b, calc.UtilizationPrior), the fewest step multiples in (n, hi] that meet the
    deadline, by bisection. Meeting the deadline is monotone in the count (hours ∝ n^-(1+b) fall as
    devices rise for any b > -1, checked in _devices_exponent; capped at 100% they fall as 1 / n). For
    b >= 0 utilization never falls as devices rise, so `bound` (the count at the utilization of one
    step, hours ∝ 1 / n) meets it; for b < 0 it may not, and is doubled until it does."""
    hi = _round_up(np.maximum(bound, n), step)
    good = _meets(job, hi, step, limit, case, memory)
    for _ in range(64):  # b < 0 (utilization falling as devices rise): the bound can fall short; double it
        short = ~ok & np.isfinite(n) & ~good
        if not np.any(short):
            break
        hi = np.where(short, _round_up(hi * 2.0, step), hi)
        good = _meets(job, hi, step, limit, case, memory)
    todo = ~ok & np.isfinite(n) & good
    lo = n
    for _ in range(2100):  # a float64 interval halves at most ~2,100 times
        wide = todo & (hi - lo > _advance(hi, step))
        if not np.any(wide):
            break
        mid = _round_up(lo + np.floor((hi - lo) / (2 * step)) * step, step)
        mid = np.where(wide & (mid > lo) & (mid < hi), mid, hi)
        good = _meets(job, np.where(wide, mid, hi), step, limit, case, memory)
        hi = np.where(wide & good, mid, hi)
        lo = np.where(wide & ~good, mid, lo)
    return np.where(todo, hi, n), ok | todo


def _advance(n: Any, step: Any) -> Any:
    """The next count to try past n: one step, or (past about 1e11 devices, where the closed form's
    relative EXACT shave exceeds a step and 64 steps cannot make it up) steps worth 4 · EXACT of n."""
    return np.maximum(step, _round_up(n * (4 * EXACT), step))


def _devices_exponent(job: Job) -> float:
    """b of the job's own prior (utilization "prior": expected = A · devices^b, calc.prior.utilization
    .Coefficients.devices_exponent; every case scales alike, its band factors being constant); else 0
    (a given utilization, or a UtilizationPrior given, which does not change with the job)."""
    if not _keyed(job):
        return 0.0
    b = coefficients().devices_exponent
    if not b > -1.0:  # the closed form and the bisection need hours ∝ n^-(1+b) to fall as devices rise
        raise TrainingBudgetError(f"the prior's devices exponent (got {show(b)}) must be > -1: hours would not "
                                  "fall as devices rise, so no fewest count meets a deadline")
    return b


def _keyed(job: Job) -> bool:
    """The job's utilization is its own prior ("prior", "prior:job"), which moves with devices and tokens."""
    return isinstance(job.utilization, str) and wants_prior(job.utilization)


def _tokens_exponent(job: Job) -> float:
    """c of the job's own prior (expected = A · tokens^c at fixed active params); else 0."""
    if not _keyed(job):
        return 0.0
    c = coefficients().tokens_exponent
    if not c < 1.0:  # _keyed_tokens' closed form needs cost ∝ tokens^(1 - c) to rise with tokens
        raise TrainingBudgetError(f"the prior's tokens exponent (got {show(c)}) must be < 1: cost would not rise "
                                  "with tokens, so no most tokens fit a budget")
    return c


def _whole_tokens(job: Job, figure: str, limit: Any, case: str | None) -> Any:
    """Most whole tokens whose Budget `figure` (cost_usd or hours) is within `limit`."""
    if _tokens_exponent(job):
        return _keyed_tokens(job, figure, limit, case)
    per = getattr(budget(job.with_(tokens=1.0)), figure)
    if per is None:
        raise TrainingBudgetError(f"device {show(job.cluster.device)} has no price: give a price per device-hour")
    if isinstance(per, Span) and case is None:  # low tokens come from the high cost
        per = np.stack([np.asarray(v, dtype=np.float64) for v in (per.high, per.expected, per.low)], axis=-1)
        limit = np.asarray(limit, dtype=np.float64)[..., None]
    else:
        per = np.asarray(pick(per, {"low": "high", "high": "low"}.get(case, case)), dtype=np.float64)
    with np.errstate(over="ignore", divide="ignore"):
        tokens = np.floor(limit / per)
    _finite_tokens(tokens, figure, limit, per)
    tokens = tokens - (tokens * per > limit)  # a last-digit rounding never overspends
    if np.any(tokens < 1):
        raise TrainingBudgetError(f"{figure}: the limit {show(limit)} buys less than one token")
    return _out(tokens)


def _keyed_tokens(job: Job, figure: str, limit: Any, case: str | None) -> Any:
    """_whole_tokens for a job-keyed prior: the figure at the job's tokens D0 scales as (D / D0)^(1 - c)
    (utilization ∝ tokens^c), so D = D0 · (limit / figure(D0))^(1 / (1 - c)), floored and checked."""
    if case is None:
        return np.stack([np.asarray(_keyed_tokens(job, figure, limit, k), dtype=np.float64) for k in CASES],
                        axis=-1)
    c = _tokens_exponent(job)
    d0 = np.asarray(positive("tokens", job.tokens), dtype=np.float64)
    flipped = {"low": "high", "high": "low"}.get(case, case)  # low tokens come from the high cost
    def at(d: Any) -> Any:
        value = getattr(budget(job.with_(tokens=_out(d))), figure)
        if value is None:
            raise TrainingBudgetError(f"device {show(job.cluster.device)} has no price: give a price per device-hour")
        return np.asarray(pick(value, flipped), dtype=np.float64)
    with np.errstate(over="ignore", divide="ignore"):
        tokens = np.floor(d0 * (np.asarray(limit, dtype=np.float64) / at(d0)) ** (1.0 / (1.0 - c)))
    _finite_tokens(tokens, figure, limit)
    if np.any(tokens < 1):
        raise TrainingBudgetError(f"{figure}: the limit {show(limit)} buys less than one token")
    tokens = _capped_tokens(at, d0, tokens, np.asarray(limit, dtype=np.float64))
    for _ in range(4):  # a last-digit rounding never overspends
        over = at(tokens) > limit
        if not np.any(over):
            break
        tokens = np.where(over, tokens - np.maximum(1.0, np.floor(tokens * 1e-15)), tokens)
    return _out(tokens)


def _capped_tokens(at: Callable[[Any], Any], d0: Any, tokens: Any, limit: Any) -> Any:
    """Where the closed form's tokens overspend (the prior capped at 100% of peak stops growing as
    tokens^c, calc.UtilizationPrior), the most whole tokens within the limit by bisection from
    the count at D0's utilization held (the figure then linear in tokens: a count within the limit
    where utilization never falls as tokens rise); elsewhere the closed form's."""
    over = at(tokens) > limit * (1 + EXACT)
    if not np.any(over):
        return tokens
    lo = np.minimum(np.floor(d0 * limit / at(d0) * (1 - 4 * EXACT)), tokens)  # a last-digit rounding stays within
    todo = over & (at(np.where(over, lo, 1.0)) <= limit)
    hi = tokens
    for _ in range(2100):  # a float64 interval halves at most ~2,100 times
        wide = todo & (hi - lo > np.maximum(1.0, hi * (4 * EXACT)))
        if not np.any(wide):
            break
        mid = np.where(wide, np.floor((lo + hi) / 2), lo)
        good = at(mid) <= limit
        lo, hi = np.where(wide & good, mid, lo), np.where(wide & ~good, mid, hi)
    return np.where(todo, lo, tokens)


def _finite_tokens(tokens: Any, figure: str, limit: Any, per: Any = None) -> None:
    """Refuse a token count beyond float64 (a huge limit, or a price or hours per token near 0)."""
    if not np.all(np.isfinite(tokens)):
        name = {"cost_usd": "usd", "hours": "days"}.get(figure, figure)
        given = limit if figure != "hours" else np.asarray(limit) / HOURS_PER_DAY
        raise ResultOverflowError(f"{name} (got {show(float(np.max(given)))}) out of range: the tokens it buys "
                                  f"overflow float64 (the {figure} per token"
                                  + ("" if per is None else f", {show(float(np.min(per)))},")
                                  + " is too small for the limit)")


def tokens_for(job: Job, usd: Any, *, case: str | None = None) -> Any:
    """Most whole tokens `job` (its device, devices, price, utilization) trains for `usd` USD."""
    return _whole_tokens(job, "cost_usd", positive("usd", usd), _case(case))


def tokens_by(job: Job, days: Any, *, case: str | None = None) -> Any:
    """Most whole tokens `job` trains in `days` days on its devices."""
    return _whole_tokens(job, "hours", HOURS_PER_DAY * positive("days", days), _case(case))


# --- the Excel functions' forms (registry: TRAIN_DEVICES_FOR_DAYS, TRAIN_TOKENS_FOR_BUDGET) -------

# flat: one numpy-broadcasting argument per TRAIN_DEVICES_FOR_DAYS argument (Excel's flat call)
def devices_for_days(params: Any, tokens: Any, device: Any, days: Any, *, utilization: Any = 1.0,
                     case: str | None = None, node: Any = 1, zero_stage: Any = None, method: str = "full",
                     optimizer: str = "adamw", table: DeviceTable | None = None, active_params: Any = None) -> Any:
    """Fewest devices that train `params` on `tokens` within `days` days: ceil(device-hours /
    (24 · days)), the Excel function's answer. With `zero_stage` (0-3) also enough devices to hold
    the model states at that ZeRO stage in usable memory (3: all of them sharded). `utilization`
    a share of the device's rate, or "prior": low / expected / high on a trailing axis (calc/compose/ranges.py's
    convention), or the one `case` names. `active_params`: a mixture of experts' (Job.active_params)."""
    job = job_of(params=params, tokens=tokens, device=device, utilization=utilization,
              zero_stage=0 if zero_stage is None else zero_stage, method=method, optimizer=optimizer, table=table,
              active_params=active_params)
    return devices_for(job, days, case=case, node=node, memory=zero_stage is not None)


# flat: one numpy-broadcasting argument per TRAIN_TOKENS_FOR_BUDGET argument (Excel's flat call)
def tokens_for_budget(params: Any, device: Any, usd: Any, *, usd_per_device_hour: Any = None,
                      utilization: Any = 1.0, devices: Any = 1, case: str | None = None,
                      table: DeviceTable | None = None, active_params: Any = None, method: str = "full") -> Any:
    """Most whole tokens `usd` USD buys: cost per token = device-hours per token (FLOPs / rate /
    utilization, whatever the device count) x price per device-hour (None: the device row's).
    `active_params`: a mixture of experts' (Job.active_params); `method` the job's (inference: a
    forward pass, calc.flops_per_param_token)."""
    job = job_of(params=params, tokens=1.0, device=device, devices=devices, utilization=utilization,
              price=usd_per_device_hour, table=table, active_params=active_params, method=method)
    return tokens_for(job, usd, case=case)
