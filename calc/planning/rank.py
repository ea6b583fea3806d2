"""Ranked plans: which device, price and device count finishes by the deadline at the lowest cost, and fits.

For every device of the catalog (or those named) and every price offering for its hardware as it is
sold (calc.planning.offers: one option per provider, offering and plan, each priced by its own row
of prices.csv; whole instances of the offering, TPU slices in the shapes sold, a single-device
offering only for a one-device job; spot prices only when asked for; or the price given, or owned
hardware): the fewest devices for the deadline (calc/planning/inverse.py) with a layout that fits
and that the global batch allows (calc.physics.fit.fit_layouts at the usable memory, for a model
with a shape: data parallel x micro-batch x accumulation = the global batch), and the Budget there:
days and cost low / expected / high. Units: days, hours, USD, counts.

The counts considered (counts_considered()): that fewest count n and its doublings n·2^k, the same
layout with the data-parallel size doubled and the accumulation halved (a valid layout: tensor,
pipeline, context and expert sizes unchanged, so every constraint of calc/physics/fit.py still holds, bytes
per device do not grow with data parallelism, and the global batch is never exceeded: the doublings
stop where the accumulation would no longer be whole), up to max(n, MAX_PLAN_DEVICES), the largest
device count of the published runs the utilization prior was fitted on. The prior's utilization
rises with the device count across published runs (expected ∝ devices^b, b > 0 today); one job
scaled out does not gain it (every measured scale-out at a fixed model loses efficiency), so the
doublings hold the fewest count's prior (a UtilizationPrior given, which does not move with the
count): at one device and price more devices never cost less. The headline (headline()):
"fastest within budget" is the fewest days among the feasible plans whose cost fits the budget,
"cheapest by the deadline" the least paid among the feasible plans (Plan.paid: a 1- or 3-year
price's whole commitment unless the capacity is already committed), then the fewest devices.

The questions the other way round (devices for days, tokens for a budget) live in calc.planning.inverse;
this module re-exports them, so `calc.devices_for` and the rest keep working.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.checks import positive, whole
from ..base.errors import TrainingBudgetError
from ..compose.budget import Budget, Job, Owned, Span, budget, usable_bytes
from ..compose.job import job as job_of
from ..compose.layout_speed import by_speed, layout_steps
from ..compose.ranges import prior_device, wants_prior
from ..hardware.catalog import DeviceTable, catalog
from ..model.shapes import ModelPreset
from ..money.totals import GIB
from ..physics.fit import DEFAULT_GLOBAL_BATCH, DEFAULT_SEQ_LEN, MAX_FIT_DEVICES, fit_layouts
from ..prior.runs import load_runs
from . import offers
from .inverse import (
    CASES,
    EXACT,
    _case,
    devices_for,
    node_size,
    pick,
)

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
    layout: dict[str, int] | None
    budget: Budget | None
    feasible: bool
    within_budget: bool | None
    case: str
    note: str = ""
    ranged: bool = True  # figures as low / expected / high (utilization from the prior)
    at: int | None = None
    term_years: float = 0.0  # a 1- or 3-year price: a commitment of that term (calc.planning.offers)
    committed: bool = False  # the capacity is already committed: the job pays its share only

    @property
    def job(self) -> Job | None:
        """This plan's own Job (one device count), or None."""
        return None if self.budget is None else self.budget.job.with_(devices=float(self.devices))

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
                               **(self.layout or dict.fromkeys(LAYOUT_KEYS)),
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


LAYOUT_KEYS = ("tp", "pp", "cp", "ep", "dp", "zero_stage", "micro_batch", "accumulation")
SEARCH_STEPS = 48  # device counts tried past the lower bound for a layout that fits


@functools.cache
def max_plan_devices() -> float:
    """MAX_PLAN_DEVICES: the most devices of any main published run (calc/data/runs.csv; 16,384 H100s
    for Llama 3.1 405B, Llama Team 2024, arXiv:2407.21783 §3.3), the edge of the prior's data."""
    return max(r.devices for r in load_runs() if r.use == "main" and r.devices)


def _element(value: Any, at: int | None) -> Any:
    """`value` (a number, array or Span) at element `at` of the counts (None: as it is)."""
    if at is None or value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, Span):
        return Span(*(_element(v, at) for v in value.as_tuple()))
    return value if np.ndim(value) == 0 else np.asarray(value)[at]


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def _fastest(found: Any, preset: ModelPreset, device: Any, seq: int, table: DeviceTable) -> int:
    """The layout of `found` the step model times fastest (calc/compose/layout_speed.py); fit's first
    (memory order) where the step model cannot time the device (a row without memory bandwidth)."""
    ok = _priced(found)
    try:
        order = np.asarray(by_speed(layout_steps(found, preset, device, seq, table)))
    except TrainingBudgetError:
        return int(ok[0])
    return int(order[np.isin(order, ok)][0])


def _priced(found: Any) -> np.ndarray:
    """The rows of `found` calc.budget can price: expert parallel dividing the data-parallel size
    (calc.physics.layout.checked_layout). fit_layouts also lists expert parallel over data x context
    ranks (Megatron-Core's MoE folding), which the planner's Job cannot carry."""
    return np.flatnonzero(np.asarray(found.data) % np.asarray(found.expert) == 0)


def _fit_count(job: Job, preset: ModelPreset, n0: float, rule: tuple[int, tuple[int, ...]], table: DeviceTable,
               cache: dict[tuple[Any, ...], Any], batch: int, seq: int) -> tuple[float, Any]:
    """The first count sold from n0 (offers.sold_counts under `rule`) with a layout that fits and that
    the global batch allows, and that layout (first row of calc.fit_layouts at the usable memory, in
    its memory ranking); (inf, None) within SEARCH_STEPS counts (or past MAX_FIT_DEVICES)."""
    usable = usable_bytes(job.cluster.device, table)
    for k, n in enumerate(offers.sold_counts(n0, *rule)):
        if k >= SEARCH_STEPS or n > MAX_FIT_DEVICES:
            break
        key = (preset.name, usable, n, batch, seq)
        if key not in cache:
            cache[key] = fit_layouts(preset, job.cluster.device, int(n), memory_gib=usable / GIB, table=table,
                                     seq_len=seq, global_batch=batch, explain=False)
        if len(_priced(cache[key])):
            return n, cache[key]
    return math.inf, None


def _too_many(days: float, n0: float) -> str:
    """The note where the deadline needs more devices than the layout search considers."""
    count = f"{n0 / 1e6:,.1f}M" if n0 >= 1e6 else f"{n0:,.0f}"
    return (f"{days:g} day{'' if days == 1 else 's'} needs about {count} devices, more than the "
            f"{MAX_FIT_DEVICES:,} the planner considers")


def _device_plan(job: Job, days: float, case: str, rule: tuple[int, tuple[int, ...]], table: DeviceTable,
                 cache: dict[tuple[Any, ...], Any], batch: int = DEFAULT_GLOBAL_BATCH,
                 seq: int = DEFAULT_SEQ_LEN) -> tuple[float, Job | None, dict[str, int] | None, str]:
    """(fewest devices sold under `rule`, the job at that count and layout with its utilization held,
    the layout, a note) for one device."""
    key = ("device plan", job.cluster.device, days, case, rule, batch, seq)
    if key not in cache:
        cache[key] = _held(*_device_plan_at(job, days, case, rule, table, cache, batch, seq))
    return cache[key]


def _held(n: float, at: Job | None, layout: dict[str, int] | None, note: str) -> tuple[Any, ...]:
    """The plan with its own prior's utilization held (a UtilizationPrior given does not move with the
    device count): the doublings of its count then cost no less (the prior's rise with devices is
    across published runs, not what scaling one job out gives)."""
    if at is not None and isinstance(at.utilization, str) and wants_prior(at.utilization):
        at = at.with_(utilization=budget(at).prior)
    return n, at, layout, note


def _device_plan_at(job: Job, days: float, case: str, rule: tuple[int, tuple[int, ...]], table: DeviceTable,
                    cache: dict[tuple[Any, ...], Any], batch: int,
                    seq: int) -> tuple[float, Job | None, dict[str, int] | None, str]:
    states = job.with_(zero_stage=3)  # model states only, all sharded: a lower bound for any layout
    n0 = devices_for(states, days, case=case, node=rule[0])
    if math.isfinite(n0) and rule[1]:  # a TPU: the first slice shape sold at or above it
        n0 = next(offers.sold_counts(n0, *rule))
    if not math.isfinite(n0):
        return math.inf, None, None, "does not fit in memory"
    if n0 > MAX_FIT_DEVICES:  # with a shape or without: the same bound (a params-only job had none)
        return math.inf, None, None, _too_many(days, n0)
    preset = job.model.preset
    if preset is None or not preset.has_shape:
        layout = {"tp": 1, "pp": 1, "cp": 1, "ep": 1, "dp": int(n0), "zero_stage": 3, "micro_batch": None,
                  "accumulation": None}
        over = "" if n0 <= batch else f"; {n0:,.0f} devices exceed the global batch's {batch:,} sequences"
        return n0, states.with_(devices=n0), layout, ("model states only (no shape: no activations; doublings up "
                                                      f"to one sequence per device a step{over})")
    n, found = _fit_count(job, preset, n0, rule, table, cache, batch, seq)
    if found is None:
        return math.inf, None, None, (f"no layout fits and divides the global batch of {batch:,} sequences on "
                                      f"{SEARCH_STEPS} counts sold from {n0:,.0f} devices")
    i = _fastest(found, preset, job.cluster.device, seq, table)
    layout = {"tp": int(found.tensor[i]), "pp": int(found.pipeline[i]), "cp": int(found.context[i]),
              "ep": int(found.expert[i]), "dp": int(found.data[i]), "zero_stage": int(found.zero[i]),
              "micro_batch": int(found.micro_batch[i]), "accumulation": int(found.accumulation[i])}
    at = job.with_(devices=n, tp=float(found.tensor[i]), pp=float(found.pipeline[i]),
                   cp=float(found.context[i]), ep=float(found.expert[i]),
                   zero_stage=float(found.zero[i]),
                   activations=float(found.activations[i]))
    return n, at, layout, ""


def counts_considered(n: float, accumulation: int | None = None) -> np.ndarray:
    """The device counts planned from the deadline's fewest n: n·2^k up to max(n, MAX_PLAN_DEVICES),
    data parallelism doubled; with the layout's `accumulation`, only while it halves to a whole number
    (the global batch never exceeded)."""
    top = max(n, max_plan_devices())
    k = math.floor(math.log2(top / n) + 1e-9)
    if accumulation:
        k = min(k, (accumulation & -accumulation).bit_length() - 1)  # the power of two in the accumulation
    return n * 2.0 ** np.arange(k + 1)


def _candidates(names: Any, table: DeviceTable) -> list[str]:
    """The devices to plan: those named, else one row per hardware with memory: its 16-bit peak
    (calc.prior_device), the rate published utilizations are shares of (FP8, TF32 and FP32
    rows are planned when named)."""
    if names:  # each device once, however often (or in whatever spelling) it is named
        return list(dict.fromkeys(table.get(n).name for n in names))
    return list(dict.fromkeys(prior_device(d.name, table) for d in table if d.memory_gib))


def rank_plans(tokens: Any, days: Any, *, params: Any = None, model: ModelPreset | None = None,
               devices: Any = None, price: Any = None, own: Owned | None = None, utilization: Any = "prior",
               case: str = "expected", node: Any = None, budget_usd: Any = None, goodput: Any = None,
               table: DeviceTable | None = None, global_batch: Any = DEFAULT_GLOBAL_BATCH,
               seq_len: Any = DEFAULT_SEQ_LEN, spot: bool = False, committed: bool = False) -> list[Plan]:
    """Every device (the 16-bit row of each catalog hardware with memory, or `devices` named) x every price option
    as sold (price_options, calc.planning.offers: whole instances, TPU slices; spot prices only with `spot`) x the
    counts considered (module doc: the fewest devices that meet `days` at `case` on a layout that fits and that
    `global_batch` sequences of `seq_len` tokens allow, and its doublings at that count's utilization), one
    calc.budget call over the counts per device and price: feasible plans first, then by what the team pays at
    `case` (Plan.paid: a 1- or 3-year price's whole commitment unless `committed`; no price last), then the
    fewest devices. `node` (None: each offering's instance) makes counts multiples of it too. `goodput` as
    Job.goodput (None: the prior's)."""
    table = catalog() if table is None else table
    days = float(positive("days", days))
    node = None if node is None else int(node_size(node))
    batch, seq = int(whole("global_batch", global_batch)), int(whole("seq_len", seq_len))
    case = _case(case) or "expected"
    budget_usd = None if budget_usd is None else float(positive("budget_usd", budget_usd))
    base = job_of(params=None if model is not None else params, model=model, tokens=tokens,
               utilization=utilization, goodput=goodput, table=table)
    cache: dict[tuple[Any, ...], Any] = {}
    plans: list[Plan] = []
    ranged = wants_prior(utilization)
    names = _candidates(devices, table)
    unpriced = offers.unpriced(price, names, table)
    for name in names:
        job = base.with_(device=name)
        options = [offers.offer(spec, label, name, table)
                   for spec, label in offers.price_options(name, price, own, table)]
        options = [o for o in options if spot or o.plan != "spot"] or [offers.Offer(None, "no price")]
        for o in options:
            n, at, layout, note = _device_plan(job, days, case, o.rule(node), table, cache, batch, seq)
            if o.single and at is not None and n > 1:  # sold one device per instance: no multi-node job
                plans += _plans(name, o, np.array([n]), layout, None, days, case, budget_usd,
                                f"{o.label} is sold one device per instance (prices.csv devices_per_instance 1): "
                                f"not for a job of {n:,.0f} devices", ranged, committed=committed)
                continue
            counts = counts_considered(n, _accumulation(layout, n, batch)) if at is not None else np.array([n])
            counts = counts[[offers.is_sold(c, *o.rule(node)) for c in counts]] if len(counts) > 1 else counts
            b = None if at is None else budget(at.with_(devices=counts if len(counts) > 1 else float(n), price=o.spec))
            plans += _plans(name, o, counts, layout, b, days, case, budget_usd, note, ranged,
                            unpriced.get(name, "no price"), committed)
        if own is not None and table.get(name).watts is None:  # not costed: say why, in calc.budget's words
            plans += _plans(name, offers.Offer(own, own.label()), np.array([math.inf]), None, None, days, case,
                            budget_usd, _unowned(base.with_(device=name, price=own)), ranged)
    return sorted(plans, key=_rank)


def _accumulation(layout: dict[str, Any] | None, n: float, batch: int) -> int | None:
    """The accumulation the doublings may halve: the layout's; for a model without a shape (data parallel
    n, no micro-batch known) the sequences per device at micro-batch 1, batch / n (at least 1: each
    device takes a sequence a step), rounded down to a power of two."""
    if layout is None or layout.get("accumulation"):
        return None if layout is None else layout["accumulation"]
    return 1 << max(0, int(batch // n).bit_length() - 1) if n <= batch else 1


def _unowned(job: Job) -> str:
    """Why owned hardware cannot price `job`'s device (no watts: no energy share): calc.budget's refusal."""
    try:
        budget(job)
    except TrainingBudgetError as e:
        return str(e)
    return "owned hardware: not priced"  # not reached: a device without watts is refused


def _plans(name: str, o: offers.Offer, counts: np.ndarray, layout: dict[str, int] | None, b: Budget | None,
           days: float, case: str, budget_usd: float | None, note: str, ranged: bool,
           no_price: str = "no price", committed: bool = False) -> list[Plan]:
    """One Plan per count of one device and price option `o`, from the Budget over the counts; a plan
    without a price says so first (`no_price`: why), before the device's note. The k-th count doubles
    the layout's data parallelism and halves its accumulation."""
    out = []
    for k, n in enumerate(counts):
        at = k if len(counts) > 1 else None
        lay = None if layout is None else {**layout, "dp": layout["dp"] * 2 ** k}
        if lay is not None and lay.get("accumulation"):
            lay["accumulation"] = lay["accumulation"] // 2 ** k
        plan = Plan(name, o.label, float(n), lay, b, False, None, case, note, ranged, at, o.term_years, committed)
        fits, hours, cost = plan.value("fits"), plan.value("hours"), plan.figure("cost_usd")
        ok = b is not None and bool(fits is not False) and float(pick(hours, case)) <= 24 * days * (1 + EXACT)
        paid = plan.paid()
        within = None if budget_usd is None else paid is not None and paid <= budget_usd
        why = note if cost is not None or b is None else "; ".join(filter(None, (no_price, note)))
        out.append(Plan(name, o.label, float(n), lay, b, ok and cost is not None, within, case, why, ranged, at,
                        o.term_years, committed))
    return out


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
