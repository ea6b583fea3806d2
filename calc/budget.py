"""One job, one answer: a frozen `Job` (the inputs) and `budget(job)`, the only composer of a
frozen `Budget` (the figures and where each assumption came from).

Every door (the command line on every path, TRAIN_BUDGET, the workbook's cached values, JSON and
CSV) renders a `Budget`; none computes a figure itself. `budget` composes the point functions:
FLOPs (calc.flops.train_flops), memory per device on the layout (calc.memory.train_memory), hours
(calc.schedule.hours_at), energy (calc.schedule.kwh), and prices (calc.prices, calc.owned). A range
is a layer over the points: hours, device-hours, cost and energy are proportional to
1 / (utilization · goodput), so each is computed once at utilization 1 and scaled by the prior's
three factors (calc/ranges.py's convention: low <= expected <= high; low hours come from the
prior's high utilization).

Units: bytes, counts, hours, USD, kWh; device memory is a capacity in GiB (a vendor's "80GB" of
HBM is 80 GiB, see calc.devices). Every numeric field of a `Job` may be a numpy array; arrays
broadcast like numpy and the `Budget`'s figures are arrays of that shape.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .checks import TrainingBudgetError, at_least, divides, fraction, non_negative, positive, show, whole
from .devices import DeviceTable, catalog
from .flops import train_flops
from .memory import MemoryBreakdown, layout_data_parallel, train_memory
from .models import ModelPreset
from .owned import PUE_INDUSTRY, owned_usd_per_device_hour
from .prior import UtilizationPrior, utilization_prior
from .ranges import prior_device, wants_prior
from .schedule import GIB, hours_at, kwh

# Usable device memory. nvidia-smi reports 81,559 MiB (79.65 GiB) on an "80GB" H100 SXM and
# 143,771 MiB (140.4 GiB) on a "141GB" H200 (NVIDIA, nvidia-smi -q, as read in
# ../shared/reference/accuracy-2026.md item 3); the CUDA context, NCCL's buffers and the caching
# allocator's fragmentation take 1-5 GiB more (PyTorch docs, "CUDA semantics: memory management",
# pytorch.org/docs/stable/notes/cuda.html). Reserve: the larger of 3 GiB and 5% of the capacity.
RESERVE_GIB = 3.0
RESERVE_SHARE = 0.05


@dataclass(frozen=True)
class Span:
    """A figure as low / expected / high (low <= expected <= high), each a float or an array."""

    low: Any
    expected: Any
    high: Any

    def scaled(self, factor: Any) -> Span:
        """Each of the three times `factor`."""
        return Span(self.low * factor, self.expected * factor, self.high * factor)

    def as_tuple(self) -> tuple[Any, Any, Any]:
        return (self.low, self.expected, self.high)


@dataclass(frozen=True)
class Owned:
    """Owned hardware as a price: capex per device (USD) over `life_years`, the electricity tariff
    (USD per kWh), PUE (None: calc.owned.PUE_INDUSTRY, 1.58) and occupancy (share of the year)."""

    capex_usd: float
    life_years: float
    usd_per_kwh: float
    pue: float | None = None
    occupancy: float = 1.0

    def label(self) -> str:
        return f"owned {self.capex_usd:g} USD over {self.life_years:g} y"


@dataclass(frozen=True, eq=False)
class Job:
    """A training job's inputs (numbers may be numpy arrays; they broadcast).

    `params` total parameters (count), or `model` a ModelPreset (its counted totals, active
    parameters, routed experts and embedding: give one of the two). `tokens` (count). `device` a
    catalog name. `devices` the whole job's device count; `tensor_parallel`, `pipeline_parallel`,
    `expert_parallel`, `context_parallel` the layout (calc.memory.layout_data_parallel).
    `method`, `optimizer`, `zero_stage`, `trainable`, `activations` (bytes per device) as in
    calc.memory.train_memory. `utilization` a share of the device's rate in (0, 1], "prior" or a
    UtilizationPrior (a range). `goodput` the share of wall-clock time spent training, in (0, 1];
    None: 1.0 for a given utilization, the prior's for a range. `price` None (the device row's
    own), USD per device-hour, "provider:plan" (calc.prices) or `Owned`. `pue` >= 1 (None: 1.0,
    or PUE_INDUSTRY for owned hardware). `table` the device table (None: the packaged catalog).
    """

    params: Any = None
    tokens: Any = 1e9
    device: Any = "H100 SXM, BF16 tensor core, dense"
    devices: Any = 1
    model: ModelPreset | None = None
    active_params: Any = None
    tensor_parallel: Any = 1
    pipeline_parallel: Any = 1
    expert_parallel: Any = 1
    context_parallel: Any = 1
    method: str = "full"
    optimizer: str = "adamw"
    zero_stage: Any = 0
    trainable: Any = None
    activations: Any = 0.0
    utilization: Any = 1.0
    goodput: Any = None
    price: Any = None
    pue: Any = None
    table: DeviceTable | None = field(default=None, repr=False)
    name: str = ""
    today: dt.date | None = None

    def with_(self, **changes: Any) -> Job:
        """A copy with `changes` (dataclasses.replace)."""
        return replace(self, **changes)


@dataclass(frozen=True, eq=False)
class Budget:
    """The figures of one job (or arrays of jobs) and the provenance of every assumption.

    `hours`, `days`, `device_hours`, `cost_usd`, `energy_kwh` are points, or `Span`s when a range
    was asked. `memory` bytes per device on the layout; `usable_bytes` the device's memory less the
    reserve (None when the row has no memory); `fits` and `headroom_bytes` against it. `cost_usd`
    is None when there is no price (`price_label` says "no price"); `energy_kwh` None without
    watts. `utilization` the share used (a Span of the prior's low / expected / high utilization
    for a range: low hours come from the high utilization) and `utilization_basis` where it came
    from.
    """

    job: Job
    device: Any
    flops: Any
    params: Any
    active_params: Any
    memory: MemoryBreakdown
    layout: dict[str, Any]
    usable_bytes: Any
    fits: Any
    headroom_bytes: Any
    hours: Any
    days: Any
    device_hours: Any
    cost_usd: Any
    energy_kwh: Any
    utilization: Any
    utilization_basis: str
    goodput: Any
    goodput_basis: str
    usd_per_device_hour: Any
    price_label: str
    price_source: str | None
    price_as_of: str | None
    price_age_days: int | None
    pue: Any
    prior: UtilizationPrior | None = None

    @property
    def ranged(self) -> bool:
        return isinstance(self.hours, Span)


def usable_bytes(device: Any, table: DeviceTable | None = None) -> Any:
    """Bytes a training job may use on `device`: memory_gib · 2^30 less the reserve (the larger of
    RESERVE_GIB and RESERVE_SHARE of the capacity); None when the row has no memory."""
    t = catalog() if table is None else table
    try:
        gib = t.value(device, "memory_gib")
    except TrainingBudgetError:
        return None
    cap = gib * GIB
    return cap - np.maximum(RESERVE_GIB * GIB, RESERVE_SHARE * cap) if not isinstance(cap, float) \
        else cap - max(RESERVE_GIB * GIB, RESERVE_SHARE * cap)


# --- the prior -----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _prior_keywords() -> frozenset[str]:
    """The keywords today's `utilization_prior` accepts (the signature, inspected once)."""
    return frozenset(inspect.signature(utilization_prior).parameters)


_PRIOR_WANTS = ("device", "active_params", "devices", "moe")


@functools.lru_cache(maxsize=256)
def _cached_prior(**keywords: Any) -> UtilizationPrior:
    return utilization_prior(**keywords)


def _scalar_or_none(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return float(value)
    return None


def _prior_for(job: Job, active: Any) -> UtilizationPrior:
    """The utilization prior for `job`: the one given, else calc.prior.utilization_prior() with
    whatever of device / active_params / devices / moe its signature accepts (scalars only)."""
    if isinstance(job.utilization, UtilizationPrior):
        return job.utilization
    accepted = _prior_keywords()
    wanted = {"device": job.device if isinstance(job.device, str) else None,
              "active_params": _scalar_or_none(active), "devices": _scalar_or_none(job.devices),
              "moe": None if job.model is None else bool(job.model.shape.get("n_experts", 1) > 1)}
    keywords = {k: v for k, v in wanted.items() if k in accepted and k in _PRIOR_WANTS and v is not None}
    return _cached_prior(**keywords)


# --- the parts -----------------------------------------------------------------------------------

def _counts(job: Job) -> tuple[Any, Any, Any, Any]:
    """(total, active, routed-expert, first-stage) parameters, and the layout checked on the shape."""
    if job.model is not None:
        if job.params is not None:
            raise TrainingBudgetError(f"give params or a model, not both (got params={show(job.params)}, "
                                      f"model={job.model.name!r})")
        b = job.model.params()
        total, active = float(b.total), float(b.active)
        shape = job.model.shape
        if not shape:
            return total, active, 0.0, 0.0
        _check_layout(job, shape)
        experts = float(b.experts) if shape.get("n_experts", 1) > 1 else 0.0
        return total, active, experts, float(shape["vocab"] * shape["d_model"])
    if job.params is None:
        raise TrainingBudgetError("a job needs params (a count such as 7e9) or a model")
    total = positive("params", job.params)
    active = total if job.active_params is None else positive("active_params", job.active_params)
    return total, active, 0.0, 0.0


def _check_layout(job: Job, shape: dict[str, Any]) -> None:
    """A parallel size must divide what it splits: heads (tensor), layers (pipeline), experts."""
    divides("tensor_parallel", whole("tensor_parallel", job.tensor_parallel), "n_heads",
            float(shape["n_heads"]))
    divides("pipeline_parallel", whole("pipeline_parallel", job.pipeline_parallel), "n_layers",
            float(shape["n_layers"]))
    divides("expert_parallel", whole("expert_parallel", job.expert_parallel), "n_experts",
            float(shape.get("n_experts", 1)))


def _utilization(job: Job, active: Any) -> tuple[Any, str, Any, str, UtilizationPrior | None]:
    """(utilization or Span, basis, goodput, goodput basis, prior) for `job`."""
    if wants_prior(job.utilization):
        prior = _prior_for(job, active)
        g = prior.goodput if job.goodput is None else fraction("goodput", job.goodput)
        basis = (f"prior: {prior.n_runs} published runs, {prior.basis} (10th / 50th / 90th percentiles)")
        gb = "Llama 3 paper, arXiv:2407.21783 §3.3.4" if job.goodput is None else "given"
        return Span(prior.low, prior.expected, prior.high), basis, g, gb, prior
    if isinstance(job.utilization, str):
        raise TrainingBudgetError(f"utilization must be a number in (0, 1] or 'prior' (got {show(job.utilization)})")
    u = fraction("utilization", job.utilization)
    if job.goodput is None:
        return u, "given", 1.0, "not counted: restarts and failures excluded; give goodput (--goodput) to count them", None
    return u, "given", fraction("goodput", job.goodput), "given", None


def _price(job: Job, device: Any, table: DeviceTable) -> tuple[Any, str, str | None, str | None, int | None]:
    """(USD per device-hour or None, label, source, as_of, age in days) for `job`'s price."""
    price = job.price
    if isinstance(price, Owned):
        watts = table.value(device, "watts")
        pue = PUE_INDUSTRY if price.pue is None else price.pue
        usd = owned_usd_per_device_hour(price.capex_usd, life_years=price.life_years, watts=watts,
                                        usd_per_kwh=price.usd_per_kwh, pue=pue, occupancy=price.occupancy)
        return usd, price.label(), "owned: calc/owned.py", None, None
    if price is None:
        try:
            usd = table.value(device, "usd_per_device_hour")
        except TrainingBudgetError:
            return None, "no price", None, None, None
        return usd, "the device row's own price", "device row", _as_of(device, table), None
    if isinstance(price, str):
        from .prices import lookup
        if not isinstance(device, str):
            raise TrainingBudgetError(f"price {show(price)} needs one device name, not {show(device)}")
        table.get(device)  # an unknown device is named as such, not blamed on the price
        row, plan = lookup(price, device, table)
        return (row.usd[plan], f"{row.provider}:{plan} {row.offering}", row.source, row.as_of,
                row.age_days(job.today))
    if isinstance(price, (bool, np.bool_)):
        raise TrainingBudgetError(f"price must be USD per device-hour or PROVIDER:PLAN (got {show(price)})")
    usd = non_negative("usd_per_device_hour", price)
    return usd, f"{show(usd) if isinstance(usd, float) else 'given'} USD per device-hour (given)", "given", None, None


def _as_of(device: Any, table: DeviceTable) -> str | None:
    return table.get(device).as_of or None if isinstance(device, str) else None


def _watts(device: Any, table: DeviceTable) -> Any:
    try:
        return table.value(device, "watts")
    except TrainingBudgetError:
        return None


def _pue(job: Job) -> Any:
    if job.pue is None:
        if isinstance(job.price, Owned):
            return PUE_INDUSTRY if job.price.pue is None else job.price.pue
        return 1.0
    return at_least("pue", job.pue, 1.0)


# --- the composer --------------------------------------------------------------------------------

def budget(job: Job) -> Budget:
    """The one composer: `job`'s FLOPs, memory on the layout (fits, headroom), hours, days,
    device-hours, cost (USD), energy (kWh), each a point or a Span, with their provenance."""
    table = catalog() if job.table is None else job.table
    total, active, experts, stage = _counts(job)
    tokens = positive("tokens", job.tokens)
    n = whole("devices", job.devices)
    u, u_basis, g, g_basis, prior = _utilization(job, active)
    device = prior_device(job.device, table) if prior is not None else job.device
    device = table.get(device).name if isinstance(device, str) else device
    flops = train_flops(total, tokens, active_params=None if active is total else active)
    layout = {"tensor_parallel": job.tensor_parallel, "pipeline_parallel": job.pipeline_parallel,
              "expert_parallel": job.expert_parallel, "context_parallel": job.context_parallel}
    memory = train_memory(total, method=job.method, optimizer=job.optimizer, trainable=job.trainable,
                          zero_stage=job.zero_stage, devices=n, activations=job.activations,
                          expert_params=experts, stage_params=stage, **layout)
    layout["data_parallel"] = layout_data_parallel(n, job.tensor_parallel, job.pipeline_parallel,
                                                   job.context_parallel, job.expert_parallel)
    usable = usable_bytes(job.device, table)
    headroom = None if usable is None else usable - memory.total
    fits = None if usable is None else (headroom >= 0 if isinstance(headroom, float) else np.asarray(headroom) >= 0)
    rate = table.value(device, "tflops")
    base = hours_at(flops, rate, 1.0, n) / g  # wall-clock hours at utilization 1, downtime counted
    hours = Span(base / u.high, base / u.expected, base / u.low) if prior is not None else base / u
    device_hours = _times(hours, n)
    usd, label, source, as_of, age = _price(job, device, table)
    pue = _pue(job)
    watts = _watts(device, table)
    return Budget(job=job, device=device, flops=flops, params=total, active_params=active, memory=memory,
                  layout=layout, usable_bytes=usable, fits=fits, headroom_bytes=headroom, hours=hours,
                  days=_times(hours, 1 / 24), device_hours=device_hours,
                  cost_usd=None if usd is None else _times(device_hours, usd),
                  energy_kwh=None if watts is None else _apply(device_hours, lambda dh: kwh(watts, dh, pue)),
                  utilization=u, utilization_basis=u_basis, goodput=g, goodput_basis=g_basis,
                  usd_per_device_hour=usd, price_label=label, price_source=source, price_as_of=as_of,
                  price_age_days=age, pue=pue, prior=prior)


def _times(x: Any, factor: Any) -> Any:
    return x.scaled(factor) if isinstance(x, Span) else x * factor


def _apply(x: Any, fn: Any) -> Any:
    return Span(fn(x.low), fn(x.expected), fn(x.high)) if isinstance(x, Span) else fn(x)


def finite_or_none(value: Any) -> Any:
    """A float as it is when finite, else None (a figure that would be NaN or infinite)."""
    if value is None:
        return None
    f = float(value)
    return f if math.isfinite(f) else None
