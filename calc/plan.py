"""The planner's questions the other way round: devices for a deadline, tokens for a budget, and
ranked plans (which device and price finishes by the deadline at the lowest cost, and fits).

Every answer is read off `calc.budget.budget(job)`, the one composer, so every figure a plan shows
is what `estimate` says for the same job. Hours scale as 1 / devices (hours = FLOPs / (rate ·
utilization · devices), calc.schedule.hours_at) and device-hours, cost and tokens are linear in
tokens, so each question is one Budget at a reference point, solved in closed form, rounded to a
whole count and checked with a Budget at the answer:
- devices for `days`: the fewest devices n (a multiple of `node` and of the layout's replica) with
  hours <= 24 · days and memory per device within the device's usable memory (calc.budget's
  reserve); n - node does not meet it;
- tokens for `usd`: the most whole tokens whose cost is within `usd`; tokens for `days`: the most
  whole tokens whose hours are within 24 · days on the job's devices.
A range (utilization "prior") answers each of low / expected / high; `case` picks one.
Ranked plans (`rank_plans`): for every device of the catalog (or those named) and every price of
the price table for its hardware (or the one given, or owned hardware), the devices for the deadline,
a layout that fits (calc.layouts.fit_layouts at the usable memory, for a model with a shape), and the
Budget there: days and cost low / expected / high. Units: days, hours, USD, counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import prices
from .budget import Budget, Job, Owned, Span, budget, usable_bytes
from .checks import TrainingBudgetError, positive, show, whole
from .devices import DeviceTable, catalog
from .layouts import fit_layouts
from .models import ModelPreset
from .prior import coefficients
from .ranges import prior_device, wants_prior
from .schedule import GIB, devices_needed

CASES = ("low", "expected", "high")  # of the answer's hours: "high" is the slow case (most hours)
HOURS_PER_DAY = 24.0
EXACT = 1e-12  # an exact fit is not rounded up (as calc.schedule.devices_needed)
MAX_STEPS = 64  # node-sized steps tried past the closed form when a prior depends on the device count


def _case(name: str | None) -> str | None:
    if name is None or name in CASES:
        return name
    raise TrainingBudgetError(f"case must be one of {', '.join(CASES)} (got {show(name)})")


def pick(figure: Any, case: str | None) -> Any:
    """A Budget figure at `case`: a point as it is; a Span's low / expected / high, or (case None)
    the three on a trailing axis (calc/ranges.py's convention)."""
    if not isinstance(figure, Span):
        return figure
    if case is not None:
        return getattr(figure, _case(case))
    return np.stack([np.asarray(v, dtype=np.float64) for v in figure.as_tuple()], axis=-1)


def _replica(job: Job) -> Any:
    """Devices in one model replica times expert parallel: the step a device count moves in."""
    return (whole("tensor_parallel", job.tensor_parallel) * whole("pipeline_parallel", job.pipeline_parallel)
            * whole("context_parallel", job.context_parallel) * whole("expert_parallel", job.expert_parallel))


def _memory_devices(job: Job, table: DeviceTable) -> Any:
    """Fewest devices whose per-device bytes fit the usable memory (calc.budget.usable_bytes) on the
    job's layout and ZeRO stage: calc.schedule.devices_needed with the Budget's parameter counts."""
    usable = usable_bytes(job.device, table)
    if usable is None:
        raise TrainingBudgetError(f"device {show(job.device)} has no memory figure: a plan needs one")
    experts = stage = 0.0
    if job.model is not None and job.model.shape:
        b, shape = job.model.params(), job.model.shape
        experts = float(b.experts) if shape.get("n_experts", 1) > 1 else 0.0
        stage = float(shape["vocab"] * shape["d_model"])
        params = float(b.total)
    else:
        params = positive("params", job.params)
    return devices_needed(params, job.device, method=job.method, optimizer=job.optimizer,
                          zero_stage=job.zero_stage, trainable=job.trainable, activations=job.activations,
                          table=table,  # usable memory: devices_needed takes the same reserve
                          tensor_parallel=job.tensor_parallel, pipeline_parallel=job.pipeline_parallel,
                          expert_parallel=job.expert_parallel, context_parallel=job.context_parallel,
                          expert_params=experts, stage_params=stage)


def _round_up(n: Any, step: Any) -> Any:
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(n), np.ceil(np.asarray(n, dtype=np.float64) / step) * step, np.inf)


def _meets(job: Job, n: Any, step: Any, limit_hours: Any, case: str | None, memory: bool) -> Any:
    """Where the Budget at n devices (inf: none) trains within the limit (and fits, with `memory`)."""
    finite = np.isfinite(n)
    b = budget(job.with_(devices=_out(np.where(finite, n, step))))
    ok = np.asarray(pick(b.hours, case)) <= np.asarray(limit_hours) * (1 + EXACT)
    if memory and b.fits is not None:
        ok = ok & np.asarray(b.fits)
    return ok & finite


def _out(x: Any) -> Any:
    return float(x) if np.ndim(x) == 0 else np.asarray(x, dtype=np.float64)


def devices_for(job: Job, days: Any, *, case: str | None = "expected", node: Any = 1,
                memory: bool = True) -> Any:
    """Fewest devices (whole, a multiple of `node` and of the layout's tensor · pipeline · context ·
    expert sizes) on which `job` trains within `days` days and fits in memory; inf where no count
    up to the closed form plus MAX_STEPS steps does (never for ZeRO-3 without activations).

    Hours at the prior's `case` ("expected", or "high" for the slow case) for a range; case None
    gives low / expected / high devices on a trailing axis. `memory` False: time only (any count
    fits). Broadcasts over the job's arrays.
    """
    if case is None and wants_prior(job.utilization):
        return np.stack([np.asarray(devices_for(job, days, case=c, node=node, memory=memory), dtype=np.float64)
                         for c in CASES], axis=-1)  # low devices at the low (fast) case's hours
    table = catalog() if job.table is None else job.table
    limit = HOURS_PER_DAY * positive("days", days)
    step = np.lcm(np.asarray(whole("node", node), dtype=np.int64), np.asarray(_replica(job), dtype=np.int64))
    step = step.astype(np.float64)
    ref = budget(job.with_(devices=_out(step)))  # hours scale as 1 / devices
    one = np.asarray(pick(ref.hours, case)) * step
    b = _devices_exponent(job)
    if b:  # hours(n) = one / n · (step / n)^b, the job-keyed prior's expected = A · n^b: solve for n
        n_time = np.ceil((one * step ** b / limit) ** (1.0 / (1.0 + b)) * (1 - EXACT))
    else:
        n_time = np.ceil(one / limit * (1 - EXACT))
    n_memory = _memory_devices(job, table) if memory else 1.0
    n = _round_up(np.maximum(np.maximum(n_time, n_memory), 1.0), step)
    ok = _meets(job, n, step, limit, case, memory)
    for _ in range(MAX_STEPS):  # only a prior that changes with the device count gets here
        if np.all(ok | ~np.isfinite(n)):
            break
        n = np.where(ok, n, n + step)
        ok = _meets(job, n, step, limit, case, memory)
    if b:  # the closed form rounded up: one step fewer must not meet it either
        fewer = ok & (n - step >= np.maximum(n_memory, 1.0)) & _meets(job, np.maximum(n - step, step), step, limit,
                                                                      case, memory)
        n = np.where(fewer, n - step, n)
    return _out(np.where(ok, n, np.inf))


def _devices_exponent(job: Job) -> float:
    """b of the job's own prior (utilization "prior": expected = A · devices^b, calc.prior
    .Coefficients.devices_exponent; every case scales alike, its band factors being constant); else 0
    (a given utilization, or a UtilizationPrior given, which does not change with the job)."""
    return coefficients().devices_exponent if _keyed(job) else 0.0


def _keyed(job: Job) -> bool:
    """The job's utilization is its own prior ("prior", "prior:job"), which moves with devices and tokens."""
    return isinstance(job.utilization, str) and wants_prior(job.utilization)


def _tokens_exponent(job: Job) -> float:
    """c of the job's own prior (expected = A · tokens^c at fixed active params); else 0."""
    return coefficients().tokens_exponent if _keyed(job) else 0.0


def _whole_tokens(job: Job, figure: str, limit: Any, case: str | None) -> Any:
    """Most whole tokens whose Budget `figure` (cost_usd or hours) is within `limit`."""
    if _tokens_exponent(job):
        return _keyed_tokens(job, figure, limit, case)
    per = getattr(budget(job.with_(tokens=1.0)), figure)
    if per is None:
        raise TrainingBudgetError(f"device {show(job.device)} has no price: give a price per device-hour")
    if isinstance(per, Span) and case is None:  # low tokens come from the high cost
        per = np.stack([np.asarray(v, dtype=np.float64) for v in (per.high, per.expected, per.low)], axis=-1)
        limit = np.asarray(limit, dtype=np.float64)[..., None]
    else:
        per = np.asarray(pick(per, {"low": "high", "high": "low"}.get(case, case)), dtype=np.float64)
    tokens = np.floor(limit / per)
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
            raise TrainingBudgetError(f"device {show(job.device)} has no price: give a price per device-hour")
        return np.asarray(pick(value, flipped), dtype=np.float64)
    tokens = np.floor(d0 * (np.asarray(limit, dtype=np.float64) / at(d0)) ** (1.0 / (1.0 - c)))
    if np.any(tokens < 1):
        raise TrainingBudgetError(f"{figure}: the limit {show(limit)} buys less than one token")
    for _ in range(4):  # a last-digit rounding never overspends
        over = at(tokens) > limit
        if not np.any(over):
            break
        tokens = np.where(over, tokens - np.maximum(1.0, np.floor(tokens * 1e-15)), tokens)
    return _out(tokens)


def tokens_for(job: Job, usd: Any, *, case: str | None = None) -> Any:
    """Most whole tokens `job` (its device, devices, price, utilization) trains for `usd` USD."""
    return _whole_tokens(job, "cost_usd", positive("usd", usd), _case(case))


def tokens_by(job: Job, days: Any, *, case: str | None = None) -> Any:
    """Most whole tokens `job` trains in `days` days on its devices."""
    return _whole_tokens(job, "hours", HOURS_PER_DAY * positive("days", days), _case(case))


# --- the Excel functions' forms (registry: TRAIN_DEVICES_FOR_DAYS, TRAIN_TOKENS_FOR_BUDGET) -------

def devices_for_days(params: Any, tokens: Any, device: Any, days: Any, *, utilization: Any = 1.0,
                     case: str | None = None, node: Any = 1, zero_stage: Any = None, method: str = "full",
                     optimizer: str = "adamw", table: DeviceTable | None = None, active_params: Any = None) -> Any:
    """Fewest devices that train `params` on `tokens` within `days` days: ceil(device-hours /
    (24 · days)), the Excel function's answer. With `zero_stage` (0-3) also enough devices to hold
    the model states at that ZeRO stage in usable memory (3: all of them sharded). `utilization`
    a share of the device's rate, or "prior": low / expected / high on a trailing axis (calc/ranges.py's
    convention), or the one `case` names. `active_params`: a mixture of experts' (Job.active_params)."""
    job = Job(params=params, tokens=tokens, device=device, utilization=utilization,
              zero_stage=0 if zero_stage is None else zero_stage, method=method, optimizer=optimizer, table=table,
              active_params=active_params)
    return devices_for(job, days, case=case, node=node, memory=zero_stage is not None)


def tokens_for_budget(params: Any, device: Any, usd: Any, *, usd_per_device_hour: Any = None,
                      utilization: Any = 1.0, devices: Any = 1, case: str | None = None,
                      table: DeviceTable | None = None, active_params: Any = None) -> Any:
    """Most whole tokens `usd` USD buys: cost per token = device-hours per token (FLOPs / rate /
    utilization, whatever the device count) x price per device-hour (None: the device row's).
    `active_params`: a mixture of experts' (Job.active_params)."""
    job = Job(params=params, tokens=1.0, device=device, devices=devices, utilization=utilization,
              price=usd_per_device_hour, table=table, active_params=active_params)
    return tokens_for(job, usd, case=case)


# --- ranked plans: every device x every price ----------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """One option: `devices` of `device` at one price, on `layout`; `budget` is its Budget (None
    when no count fits). `feasible`: it fits and finishes by the deadline at the case asked;
    `within_budget`: its cost at that case is within the budget (None: no budget given)."""

    device: str
    price_label: str
    devices: float
    layout: dict[str, int] | None
    budget: Budget | None
    feasible: bool
    within_budget: bool | None
    case: str
    note: str = ""
    ranged: bool = True  # figures as low / expected / high (utilization from the prior)

    def figure(self, name: str) -> float | None:
        """days or cost_usd at the plan's case (None where the plan has none)."""
        value = None if self.budget is None else getattr(self.budget, name)
        return None if value is None else float(pick(value, self.case if isinstance(value, Span) else None))

    def row(self) -> dict[str, Any]:
        """Flat keys with units for a table, JSON or CSV; ranges as <figure>_low/_expected/_high."""
        b = self.budget
        row: dict[str, Any] = {"device": self.device, "price": self.price_label,
                               "usd_per_device_hour": None if b is None else _num(b.usd_per_device_hour),
                               "price_as_of": None if b is None else b.price_as_of,
                               "devices": None if not math.isfinite(self.devices) else int(self.devices),
                               **(self.layout or dict.fromkeys(LAYOUT_KEYS)),
                               "memory_per_device_gib": None if b is None else float(b.memory.total) / GIB,
                               "fits": None if b is None or b.fits is None else bool(b.fits)}
        for name in ("days", "cost_usd", "utilization"):
            value = None if b is None else getattr(b, name)
            if self.ranged:
                three = value.as_tuple() if isinstance(value, Span) else (None, None, None)
                row.update({f"{name}_{c}": _num(v) for c, v in zip(CASES, three, strict=True)})
            else:
                row[name] = _num(value)
        return {**row, "feasible": self.feasible, "within_budget": self.within_budget, "note": self.note}


LAYOUT_KEYS = ("tensor_parallel", "pipeline_parallel", "context_parallel", "expert_parallel", "data_parallel",
               "zero_stage")
SEARCH_STEPS = 48  # device counts tried past the lower bound for a layout that fits


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def price_options(device: str, price: Any = None, own: Owned | None = None,
                  table: DeviceTable | None = None) -> list[tuple[Any, str]]:
    """(price for a Job, label) pairs for `device`: the one given (a number or PROVIDER:PLAN), else
    the device row's own price and every plan of every price row for its hardware; owned last."""
    table = catalog() if table is None else table
    if isinstance(price, str) and ":" not in price:
        price = float(price) if _is_number(price) else f"{price}:on_demand"
    if price is not None and not isinstance(price, str):
        found = [(float(positive("price", price)), f"{float(price):g} USD per device-hour (given)")]
    elif isinstance(price, str):
        provider, plan = prices.parse_spec(price)
        found = [(f"{r.provider}:{plan}", f"{r.provider}:{plan} {r.offering}")
                 for r in [prices.lookup(price, device, table)[0]]] if prices.find(device, provider, plan, table) \
            else []
    else:
        own_price = table.get(device).usd_per_device_hour
        found = [] if own_price is None else [(None, "the device row's own price")]
        for r in prices.find(device, table=table):
            found += [(f"{r.provider}:{p}", f"{r.provider}:{p} {r.offering}") for p in prices.PLANS if p in r.usd]
        found = list(dict.fromkeys(found))  # one option per provider and plan (lookup picks the row)
    if own is not None and table.get(device).watts is not None:
        found.append((own, own.label()))
    return found


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _fit_count(job: Job, preset: ModelPreset, n0: float, step: float, table: DeviceTable,
               cache: dict[tuple[Any, ...], Any]) -> tuple[float, Any]:
    """The first count from n0 (in `step`s) with a layout that fits, and that layout (first row of
    calc.fit_layouts at the usable memory: the most headroom); (inf, None) within SEARCH_STEPS."""
    usable = usable_bytes(job.device, table)
    for k in range(SEARCH_STEPS):
        n = n0 + k * step
        key = (preset.name, usable, n)
        if key not in cache:
            cache[key] = fit_layouts(preset, job.device, int(n), memory_gib=usable / GIB, table=table)
        if len(cache[key]):
            return n, cache[key]
    return math.inf, None


def _device_plan(job: Job, days: float, case: str, node: float, table: DeviceTable,
                 cache: dict[tuple[Any, ...], Any]) -> tuple[float, Job | None, dict[str, int] | None, str]:
    """(devices, the job at that count and layout, the layout, a note) for one device."""
    states = job.with_(zero_stage=3)  # model states only, all sharded: a lower bound for any layout
    n0 = devices_for(states, days, case=case, node=node)
    if not math.isfinite(n0):
        return math.inf, None, None, "does not fit in memory"
    preset = job.model
    if preset is None or not preset.has_shape:
        layout = {"tensor_parallel": 1, "pipeline_parallel": 1, "context_parallel": 1, "expert_parallel": 1,
                  "data_parallel": int(n0), "zero_stage": 3}
        return n0, states.with_(devices=n0), layout, "model states only (no shape: no activations)"
    n, found = _fit_count(job, preset, n0, float(node), table, cache)
    if found is None:
        return math.inf, None, None, f"no layout fits on {n0:g} to {n0 + (SEARCH_STEPS - 1) * node:g} devices"
    i = 0  # the layout with the most headroom
    layout = {"tensor_parallel": int(found.tensor[i]), "pipeline_parallel": int(found.pipeline[i]),
              "context_parallel": int(found.context[i]), "expert_parallel": int(found.expert[i]),
              "data_parallel": int(found.data[i]), "zero_stage": int(found.zero[i])}
    at = job.with_(devices=n, tensor_parallel=float(found.tensor[i]), pipeline_parallel=float(found.pipeline[i]),
                   context_parallel=float(found.context[i]), expert_parallel=float(found.expert[i]),
                   zero_stage=float(found.zero[i]),
                   activations=float(found.activations[i]))
    return n, at, layout, ""


def _candidates(names: Any, table: DeviceTable) -> list[str]:
    """The devices to plan: those named, else one row per hardware with memory: its 16-bit peak
    (calc.ranges.prior_device), the rate published utilizations are shares of (FP8, TF32 and FP32
    rows are planned when named)."""
    if names:
        return [table.get(n).name for n in names]
    return list(dict.fromkeys(prior_device(d.name, table) for d in table if d.memory_gib))


def rank_plans(tokens: Any, days: Any, *, params: Any = None, model: ModelPreset | None = None,
               devices: Any = None, price: Any = None, own: Owned | None = None, utilization: Any = "prior",
               case: str = "expected", node: Any = 1, budget_usd: Any = None,
               table: DeviceTable | None = None) -> list[Plan]:
    """Every device (the 16-bit row of each catalog hardware with memory, or `devices` named) x every price option
    (price_options), each at the fewest devices that meet `days` at `case` on a layout that fits:
    feasible plans first, then by cost at `case` (no price last), then days."""
    table = catalog() if table is None else table
    days = float(positive("days", days))
    node = float(whole("node", node))
    case = _case(case) or "expected"
    budget_usd = None if budget_usd is None else float(positive("budget_usd", budget_usd))
    base = Job(params=None if model is not None else params, model=model, tokens=tokens,
               utilization=utilization, table=table)
    cache: dict[tuple[Any, ...], Any] = {}
    plans = []
    ranged = wants_prior(utilization)
    for name in _candidates(devices, table):
        n, at, layout, note = _device_plan(base.with_(device=name), days, case, node, table, cache)
        options = price_options(name, price, own, table) or [(None, "no price")]
        for spec, label in options:
            b = None if at is None else budget(at.with_(price=spec))
            ok = b is not None and bool(b.fits is not False) and float(pick(b.hours, case)) <= 24 * days * (1 + EXACT)
            plan = Plan(name, label, n, layout, b, ok, None, case, note)
            cost = plan.figure("cost_usd")
            within = None if budget_usd is None else cost is not None and cost <= budget_usd
            plans.append(Plan(name, label, n, layout, b, ok and cost is not None, within, case,
                              note or ("" if cost is not None else "no price"), ranged))
    return sorted(plans, key=_rank)


def _rank(p: Plan) -> tuple[Any, ...]:
    cost, days = p.figure("cost_usd"), p.figure("days")
    return (not p.feasible, cost is None, cost or 0.0, days if days is not None else math.inf, p.device)


def headline(plans: list[Plan], budget_usd: float | None = None) -> dict[str, Plan | None]:
    """The fastest feasible plan within the budget (all feasible plans without one) and the cheapest
    feasible plan by the deadline."""
    ok = [p for p in plans if p.feasible]
    within = [p for p in ok if p.within_budget] if budget_usd is not None else ok
    fastest = min(within, key=lambda p: (p.figure("days"), p.figure("cost_usd"))) if within else None
    return {"fastest": fastest, "cheapest": min(ok, key=_rank) if ok else None}
