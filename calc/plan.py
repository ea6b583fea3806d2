"""Ranked plans: which device and price finishes by the deadline at the lowest cost, and fits.

For every device of the catalog (or those named) and every price of the price table for its
hardware (or the one given, or owned hardware), the devices for the deadline (calc.inverse
.devices_for), a layout that fits (calc.layouts.fit_layouts at the usable memory, for a model with
a shape), and the Budget there: days and cost low / expected / high. Units: days, hours, USD, counts.

The questions the other way round (devices for days, tokens for a budget) live in calc.inverse;
this module re-exports them, so `calc.plan.devices_for` and the rest keep working.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from . import prices
from .budget import Budget, Job, Owned, Span, budget, usable_bytes
from .checks import positive, whole
from .devices import DeviceTable, catalog
from .inverse import CASES as CASES  # re-exported (with the next names): moved to calc.inverse
from .inverse import EXACT as EXACT
from .inverse import HOURS_PER_DAY as HOURS_PER_DAY
from .inverse import MAX_STEPS as MAX_STEPS
from .inverse import _case
from .inverse import devices_for as devices_for
from .inverse import devices_for_days as devices_for_days
from .inverse import pick as pick
from .inverse import tokens_by as tokens_by
from .inverse import tokens_for as tokens_for
from .inverse import tokens_for_budget as tokens_for_budget
from .layouts import fit_layouts
from .models import ModelPreset
from .ranges import prior_device, wants_prior
from .schedule import GIB

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
