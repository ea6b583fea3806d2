"""Ranked plans: which device, price and device count finishes by the deadline at the lowest cost, and fits.

For every device of the catalog (or those named) and every price offering for its hardware as it is
sold (calc.planning.offers: one option per provider, offering and plan, each priced by its own row
of prices.csv; whole instances of the offering, TPU slices in the shapes sold, a single-device
offering only for a one-device job; spot prices only when asked for; or the price given, or owned
hardware), at every count calc.planning.search considers (whole instances doubled, up to
max_plan_devices(), 16,384): the layout the step model times fastest among those that fit and that
the global batch allows, and the Budget there, its hours from the step model (calc.budget at
utilization "step": the layout's own step time, so a count whose replicas take fewer sequences each
pays the bigger pipeline bubble and exposed data-parallel traffic, and cost rises with scale where
efficiency falls). Units: days, hours, USD, counts.

Plans of one device and price: the counts from the fewest that meets the deadline up to the cap; a
count whose device-hours exceed a larger count's is left out (the larger is then both faster and
cheaper: more devices hold a faster layout), so at one device and price more devices never cost
less. Where the step model cannot time a job (a model of parameters alone, a QLoRA fine-tune, a row
without memory bandwidth) or the published runs' prior is asked for, utilization is the prior's at
the fewest count that meets the deadline, held for the larger counts (the prior's rise with devices
is across published runs; one job scaled out does not gain it).

The headline (headline()): "fastest within budget" is the fewest days among the feasible plans whose
cost fits the budget, "cheapest by the deadline" the least paid among the feasible plans (Plan.paid:
a 1- or 3-year price's whole commitment unless the capacity is already committed), then the fewest
devices. The questions the other way round (devices for days, tokens for a budget) live in
calc.planning.inverse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..base.errors import TrainingBudgetError
from ..compose.budget import Budget, Job, Owned, Span, budget
from ..compose.job import job as make_job
from ..compose.ranges import prior_device, wants_prior
from ..compose.step_terms import STEP_METHODS, wants_step
from ..hardware.catalog import DeviceTable
from ..money.totals import GIB
from ..physics.fit import DEFAULT_GLOBAL_BATCH
from ..step import hardware as step_hardware
from . import offers
from .inverse import CASES, EXACT, pick
from .question import Asked, PlanQuestion
from .search import (
    LAYOUT_KEYS,
    fewest_at_full_rate,
    job_names,
    layout_at,
    max_plan_devices,
    plan_counts,
    states_layout,
    too_many,
)

__all__ = ["Plan", "PlanQuestion", "headline", "max_plan_devices", "rank_plans"]

# --- ranked plans: every device x every price x the counts considered ------------------------------

@dataclass(frozen=True)
class Plan:
    """One option: `devices` of `device` at one price, on `layout`; `budget` is the Budget of its
    device and price over the counts considered (arrays), `at` this plan's element of it (None: a
    scalar Budget; `budget` None when no count fits). `feasible`: it fits and finishes by the
    deadline at the case asked, with a price; `within_budget`: its cost at that case is within the
    budget (None: no budget given)."""

    device: str
    price_label: str
    devices: float
    layout: dict[str, Any] | None
    budget: Budget | None
    feasible: bool
    within_budget: bool | None
    case: str
    note: str = ""
    ranged: bool = True  # figures as low / expected / high (the step model's band, or the prior's)
    at: int | None = None
    term_years: float = 0.0  # a 1- or 3-year price: a commitment of that term (calc.planning.offers)
    committed: bool = False  # the capacity is already committed: the job pays its share only
    names: dict[str, Any] | None = field(default=None, repr=False)  # calc.job's names for this plan's own job

    @property
    def job(self) -> Job | None:
        """This plan's own Job (its one device count, layout and utilization), or None."""
        return None if self.budget is None or self.names is None else make_job(**self.names)

    def value(self, name: str) -> Any:
        """The Budget's `name` at this plan's count (a Span stays a Span)."""
        return None if self.budget is None else _element(getattr(self.budget, name), self.at)

    def figure(self, name: str) -> float | None:
        """days or cost_usd at the plan's case (None where the plan has none)."""
        value = self.value(name)
        return None if value is None else float(pick(value, self.case if isinstance(value, Span) else None))

    def commitment(self) -> float | None:
        """USD the commitment of a 1- or 3-year price costs at the plan's case (offers.commitment_usd:
        devices x rate x the term's hours); None without a term or a price."""
        b, hours = self.budget, self.figure("hours")
        if not self.term_years or b is None or b.usd_per_device_hour is None or hours is None:
            return None
        return offers.commitment_usd(self.devices, float(b.usd_per_device_hour), self.term_years, hours)

    def paid(self) -> float | None:
        """What the team pays at the plan's case: the commitment where the price is one (unless the
        capacity is already committed), else the job's cost."""
        held = None if self.committed else self.commitment()
        return self.figure("cost_usd") if held is None else held

    def row(self) -> dict[str, Any]:
        """Flat keys with units for a table, JSON or CSV; ranges as <figure>_low/_expected/_high."""
        b = self.budget
        fits = self.value("fits")
        row: dict[str, Any] = {"device": self.device, "price": self.price_label,
                               "usd_per_device_hour": None if b is None else _num(b.usd_per_device_hour),
                               "price_as_of": None if b is None else b.price_as_of,
                               "price_age_days": None if b is None else b.price_age_days,
                               "devices": None if not math.isfinite(self.devices) else int(self.devices),
                               **{k: (self.layout or {}).get(k) for k in LAYOUT_KEYS},
                               "memory_per_device_gib": None if b is None else
                               float(_element(b.memory.total, self.at)) / GIB,
                               "fits": None if fits is None else bool(fits)}
        for name in ("days", "cost_usd", "utilization"):
            value = self.value(name)
            if self.ranged:
                three = value.as_tuple() if isinstance(value, Span) else (None, None, None)
                row.update({f"{name}_{c}": _num(v) for c, v in zip(CASES, three, strict=True)})
            else:
                row[name] = _num(value)
        row.update(commitment_years=self.term_years or None, commitment_usd=self.commitment(),
                   committed=self.committed, paid_usd=self.paid())
        return {**row, "feasible": self.feasible, "within_budget": self.within_budget, "note": self.note}


def _candidates(names: Any, table: DeviceTable) -> list[str]:
    """The devices to plan: those named, else one row per hardware with memory: its 16-bit peak
    (calc.prior_device), the rate published utilizations are shares of (FP8, TF32 and FP32
    rows are planned when named)."""
    if names:  # each device once, however often (or in whatever spelling) it is named
        return list(dict.fromkeys(table.get(n).name for n in names))
    return list(dict.fromkeys(prior_device(d.name, table) for d in table if d.memory_gib))


def _element(value: Any, at: int | None) -> Any:
    """`value` (a number, array or Span) at element `at` of the counts (None: as it is)."""
    if at is None or value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, Span):
        return Span(*(_element(v, at) for v in value.as_tuple()))
    return value if np.ndim(value) == 0 else np.asarray(value)[at]


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def rank_plans(question: PlanQuestion) -> list[Plan]:
    """Every device (the 16-bit row of each catalog hardware with memory, or the devices named) x every price
    option as sold (calc.planning.offers; spot prices only when asked) x the counts considered (module doc), each on
    its fastest layout for the question's global batch, at its utilization ("step": the step model; "prior"; or a
    share): feasible plans first, then by what the team pays at the question's case (Plan.paid: a 1- or 3-year
    price's whole commitment unless committed; no price last), then the fewest devices (calc.PlanQuestion: the
    question, checked when made; a QLoRA fine-tune takes the prior's utilization, which the step model does not
    time)."""
    q, ask = question, question.checked
    table = ask.base["table"]
    cache: dict[tuple[Any, ...], Any] = {}
    plans: list[Plan] = []
    names = _candidates(q.devices, table)
    unpriced = offers.unpriced(q.price, names, table)
    for name in names:
        sold = offers.price_options(name, q.price, q.own, table)
        options = [offers.offer(spec, label, name, table) for spec, label in sold]
        options = [o for o in options if q.spot or o.plan != "spot"] or [offers.Offer(None, "no price")]
        for o in options:
            plans += _offer_plans(ask, name, o, o.rule(ask.node), cache, unpriced.get(name, "no price"))
        if q.own is not None and table.get(name).watts is None:  # not costed: say why, in calc.budget's words
            o = offers.Offer(q.own, q.own.label())
            plans.append(_plan(ask, name, o, _Count(math.inf), _unowned(ask.base, name, q.own), ""))
    return sorted(plans, key=_rank)


class _Count(NamedTuple):
    """One count of a device and price: `n` devices, element `at` of `b`, the Budget over the counts
    considered (None: a scalar Budget; `b` None where no count is costed), on `layout`."""

    n: float
    b: Budget | None = None
    at: int | None = None
    layout: dict[str, Any] | None = None


def _mode(ask: Asked, name: str) -> tuple[Any, str]:
    """(the utilization the plans of `name` take, why the step model was not used where asked): "step"
    where the step model times the job, else the prior (held at the fewest count), or the share given."""
    if ask.preset is None or not ask.preset.has_shape:
        states = "model states only (no shape: no activations; data parallel up to one sequence per device a step)"
        return ("prior", f"{states}; the prior's utilization (the step model needs a shape)") if wants_step(
            ask.utilization) else (ask.utilization, states)
    if not wants_step(ask.utilization):
        return ask.utilization, ""
    if ask.search.method not in STEP_METHODS:
        return "prior", f"the prior's utilization (the step model does not time a {ask.search.method} fine-tune)"
    try:
        step_hardware(name, ask.base["table"])
    except TrainingBudgetError as e:
        return "prior", f"the prior's utilization (the step model cannot time it: {e})"
    return "step", ""


def _counts(ask: Asked, name: str, rule: tuple[int, tuple[int, ...]],
            cache: dict[tuple[Any, ...], Any]) -> tuple[list[float], list[dict[str, Any]], str]:
    """(the counts sold under `rule` that hold a layout, those layouts, a note when there are none)."""
    key = ("counts", name, rule)
    if key in cache:
        return cache[key]
    try:
        one = budget(make_job(**{**ask.base, "goodput": 1.0}, device=name, devices=1.0, utilization=1.0))
    except TrainingBudgetError as e:
        cache[key] = [], [], str(e)
        return cache[key]
    low = fewest_at_full_rate(float(one.hours), ask.days)
    if low > ask.cap:
        cache[key] = [], [], too_many(ask.days, low, ask.cap)
        return cache[key]
    sold = plan_counts(rule[0], rule[1], low, ask.cap)
    pairs = [(n, lay) for n in sold if (lay := _layout(ask, name, n, cache)) is not None]
    note = "" if pairs else (f"no layout fits and divides the global batch of {ask.search.batch:,} sequences on the "
                             f"counts sold from {low:,.0f} to {ask.cap:,.0f} devices")
    cache[key] = [n for n, _ in pairs], [lay for _, lay in pairs], note
    return cache[key]


def _layout(ask: Asked, name: str, n: float, cache: dict[tuple[Any, ...], Any]) -> dict[str, Any] | None:
    if ask.preset is None or not ask.preset.has_shape:
        return states_layout(n, ask.search.batch or DEFAULT_GLOBAL_BATCH)
    return layout_at(ask.preset, name, n, ask.search, ask.base["table"], cache)


def _offer_plans(ask: Asked, name: str, o: offers.Offer, rule: tuple[int, tuple[int, ...]],
                 cache: dict[tuple[Any, ...], Any], no_price: str) -> list[Plan]:
    """The plans of one device and price option: the counts from the fewest that meets the deadline,
    each not costing more than a larger one (module doc); one plan saying why where there are none."""
    counts, layouts, note = _counts(ask, name, rule, cache)
    if not counts:
        return [_plan(ask, name, o, _Count(math.inf), note, no_price)]
    util, why = _mode(ask, name)
    names = {**ask.base, "device": name, "price": o.spec}
    b, kept, util = _costed(ask, names, counts, layouts, util)
    if not kept:  # not met at the most devices considered: that count, not feasible, says so
        last = len(counts) - 1
        days = float(pick(_element(b.days, last if len(counts) > 1 else None), ask.case))
        miss = (f"{days:,.1f} days at {counts[last]:,.0f} devices, the most the planner considers "
                f"({ask.cap:,.0f})")
        return [_plan(ask, name, o, _Count(counts[last], b, last if len(counts) > 1 else None, layouts[last]),
                      "; ".join(filter(None, (miss, why))), no_price, names, util)]
    if o.single and counts[kept[0]] > 1:  # sold one device per instance: no multi-node job
        return [_plan(ask, name, o, _Count(counts[kept[0]], layout=layouts[kept[0]]),
                      f"{o.label} is sold one device per instance (prices.csv devices_per_instance 1): "
                      f"not for a job of {counts[kept[0]]:,.0f} devices", no_price)]
    fewer = [i for i in range(kept[0]) if _meets(b, ask, len(counts))[i]]  # met, but a larger count costs less
    left = (f"{counts[fewer[0]]:,.0f} devices also meet the deadline but cost more (the layouts that fit fewer "
            "devices' memory are slower): left out") if fewer else ""
    return [_plan(ask, name, o, _Count(counts[i], b, i if len(counts) > 1 else None, layouts[i]),
                  "; ".join(filter(None, (why, left if i == kept[0] else ""))), no_price, names, util) for i in kept]


def _costed(ask: Asked, names: dict[str, Any], counts: list[float], layouts: list[dict[str, Any]],
            util: Any) -> tuple[Budget, list[int], Any]:
    """(the Budget over `counts`, the counts kept, the utilization taken): from the fewest that meets
    the deadline, those whose device-hours no larger count beats; the prior held at the fewest."""
    laid = job_names(layouts, counts, util == "step")
    b = budget(make_job(**names, **laid, utilization=util))
    met = _meets(b, ask, len(counts))
    if not met.any():
        return b, [], util
    first = int(np.argmax(met))
    if wants_prior(util):  # the prior at the fewest count, held for the larger ones
        one = job_names([layouts[first]], [counts[first]], False)
        util = budget(make_job(**names, **one, utilization=util)).prior
        b = budget(make_job(**names, **laid, utilization=util))
        met = _meets(b, ask, len(counts)) & (np.arange(len(counts)) >= first)
    hours = np.atleast_1d(np.asarray(pick(b.device_hours, ask.case), dtype=np.float64))
    beaten = np.minimum.accumulate(hours[::-1])[::-1]  # the least device-hours at this count or above
    later = np.append(beaten[1:], np.inf)
    kept = [i for i in range(first, len(counts)) if met[i] and hours[i] <= later[i] * (1 + EXACT)]
    return b, kept, util


def _meets(b: Budget, ask: Asked, k: int) -> np.ndarray:
    """Where the Budget's counts fit and train within the deadline at the case asked."""
    hours = np.broadcast_to(np.asarray(pick(b.hours, ask.case), dtype=np.float64), (k,))
    fits = np.broadcast_to(np.asarray(True if b.fits is None else b.fits), (k,))
    return fits & (hours <= 24.0 * ask.days * (1 + EXACT))


def _plan(ask: Asked, name: str, o: offers.Offer, count: _Count, note: str, no_price: str,
          names: dict[str, Any] | None = None, util: Any = None) -> Plan:
    """One Plan of `count.n` devices at element `count.at` of `count.b`; feasible where it fits, meets the
    deadline and has a price; a plan without a price says so first (`no_price`: why), before its note;
    `names` and `util`: calc.job's names and the utilization of the plan's own job."""
    n, b, at, layout = count
    ranged = wants_prior(ask.utilization) or wants_step(ask.utilization)
    plan = Plan(name, o.label, float(n), layout, b, False, None, ask.case, note, ranged, at, o.term_years,
                ask.committed)
    if b is None:
        return plan
    own = {**(names or {}), **job_names([layout], [n], util == "step"), "utilization": util} if layout else None
    fits, cost = plan.value("fits"), plan.figure("cost_usd")
    ok = bool(fits is not False) and float(pick(plan.value("hours"), ask.case)) <= 24 * ask.days * (1 + EXACT)
    paid = plan.paid()
    within = None if ask.budget_usd is None else paid is not None and paid <= ask.budget_usd
    why = note if cost is not None else "; ".join(filter(None, (no_price, note)))
    return Plan(name, o.label, float(n), layout, b, ok and cost is not None, within, ask.case, why, ranged, at,
                o.term_years, ask.committed, own)


def _unowned(base: dict[str, Any], name: str, own: Owned) -> str:
    """Why owned hardware cannot price `name` (no watts: no energy share): calc.budget's refusal."""
    try:
        budget(make_job(**base, device=name, price=own))
    except TrainingBudgetError as e:
        return str(e)
    return "owned hardware: not priced"  # not reached: a device without watts is refused


def _rank(p: Plan) -> tuple[Any, ...]:
    """Feasible first, then what the team pays (to 9 significant digits: costs that differ only by
    rounding tie), then the fewest devices, then the fewest days."""
    paid, days = p.paid(), p.figure("days")
    return (not p.feasible, paid is None, float(f"{paid:.9g}") if paid is not None else 0.0, p.devices,
            days if days is not None else math.inf, p.device)


def headline(plans: list[Plan], budget_usd: float | None = None) -> dict[str, Plan | None]:
    """"fastest": the fewest days among the feasible plans whose cost is within the budget (all feasible
    plans without one), then the least cost; "cheapest": the least cost among the feasible plans (all meet
    the deadline), then the fewest days; "fewest": the fewest devices that meet the deadline on the
    cheapest plan's device and price. Over every plan given (every count considered), so both hold
    whichever way utilization moves with the device count."""
    ok = [p for p in plans if p.feasible]
    within = [p for p in ok if p.within_budget] if budget_usd is not None else ok
    fastest = min(within, key=lambda p: (p.figure("days"), p.figure("cost_usd"), p.device)) if within else None
    cheapest = min(ok, key=_rank) if ok else None
    # "fewest": "how many devices for the deadline" on the cheapest plan's device and price
    key = None if cheapest is None else (cheapest.device, cheapest.price_label)
    same = [p for p in ok if (p.device, p.price_label) == key]
    fewest = min(same, key=lambda p: p.devices) if same else None
    return {"fastest": fastest, "cheapest": cheapest, "fewest": fewest}
