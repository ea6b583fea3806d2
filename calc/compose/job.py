"""The frozen data of one job: `Job` (inputs), `Budget` (the figures and their provenance), `Span`
(low / expected / high) and `Owned` (owned hardware as a price). calc/compose/budget.py composes a Budget
from a Job; nothing else makes one. Units are in the names and docstrings (bytes, counts, hours,
USD, kWh; device memory in GiB)."""

from __future__ import annotations

import datetime as dt
from dataclasses import FrozenInstanceError, dataclass, field, replace
from operator import itemgetter
from typing import Any

from ..base.errors import TrainingBudgetError, show
from ..base.fastinit import fast_init
from ..hardware.catalog import DeviceTable
from ..model.shapes import ModelPreset, model_preset
from ..physics.memory import MemoryBreakdown
from ..prior.utilization import UtilizationPrior


class Span(tuple):
    """A figure as low / expected / high (low <= expected <= high), each a float or an array.

    Tuple-backed, so calc.budget builds one in a single C call (tuple.__new__(Span, three), issue
    17's scalar speed goal) rather than through an __init__: frozen (assignment raises
    dataclasses.FrozenInstanceError, as a frozen dataclass does), equal only to a Span of equal
    three, hashed, copied and pickled by its three."""

    __slots__ = ()

    def __new__(cls, low: Any, expected: Any, high: Any) -> Span:
        return _tuple_new(cls, (low, expected, high))

    low = property(itemgetter(0), doc="The low figure.")
    expected = property(itemgetter(1), doc="The expected figure.")
    high = property(itemgetter(2), doc="The high figure.")

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is Span:
            return tuple.__eq__(self, other)
        return False if isinstance(other, tuple) else NotImplemented  # as a dataclass: not a tuple

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return f"Span(low={self[0]!r}, expected={self[1]!r}, high={self[2]!r})"

    def __getnewargs__(self) -> tuple[Any, Any, Any]:
        return (self[0], self[1], self[2])

    def scaled(self, factor: Any) -> Span:
        """Each of the three times `factor`."""
        return Span(self[0] * factor, self[1] * factor, self[2] * factor)

    def as_tuple(self) -> tuple[Any, Any, Any]:
        return (self[0], self[1], self[2])


_tuple_new = tuple.__new__


@dataclass(frozen=True)
class Owned:
    """Owned hardware as a price: capex per device (USD) over `life_years`, the electricity tariff
    (USD per kWh), PUE (None: calc.money.owned.PUE_INDUSTRY, 1.58) and occupancy (share of the year)."""

    capex_usd: float
    life_years: float
    usd_per_kwh: float
    pue: float | None = None
    occupancy: float = 1.0
    tariff_name: str = field(default="usd_per_kwh", compare=False)  # how messages name the tariff (--usd-per-kwh)

    def label(self) -> str:
        return f"owned {self.capex_usd:g} USD over {self.life_years:g} y"


@fast_init
@dataclass(frozen=True, eq=False)
class Job:
    """A training job's inputs (numbers may be numpy arrays; they broadcast).

    `params` total parameters (count), or `model` a ModelPreset (its counted totals, active
    parameters, routed experts and embedding: give one of the two). `tokens` (count). `device` a
    catalog name. `devices` the whole job's device count; `tensor_parallel`, `pipeline_parallel`,
    `expert_parallel`, `context_parallel` the layout (calc.layout_data_parallel).
    `method`, `optimizer`, `zero_stage`, `trainable`, `activations` (bytes per device) as in
    calc.train_memory. `utilization` a share of the device's rate in (0, 1], "prior" or a
    UtilizationPrior (a range). `goodput` the share of wall-clock time spent training, in (0, 1];
    None: 1.0 for a given utilization, the prior's for a range. `price` None (the device row's
    own), USD per device-hour, "provider:plan" (calc.money.prices) or `Owned`. `pue` >= 1 (None: 1.0,
    or PUE_INDUSTRY for owned hardware). `table` the device table (None: the packaged catalog).
    """

    params: Any = None
    tokens: Any = 1e9
    device: Any = "H100 SXM, BF16 tensor core, dense"
    devices: Any = 1
    model: ModelPreset | str | None = None  # a preset or its name (resolved in __post_init__)
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
    batch: Any = None  # a calc.Batch: the step model's batch and schedule (utilization="step")
    table: DeviceTable | None = field(default=None, repr=False)
    name: str = ""
    today: dt.date | None = None

    def __post_init__(self) -> None:
        """`model` given by name is resolved once, here, as the command line's --model is
        (calc.model_preset: an unknown name is refused naming `model` and the known ones);
        anything else but a ModelPreset or None is refused."""
        model = self.__dict__["model"]
        if model is not None and model.__class__ is not ModelPreset:
            self.__dict__["model"] = _resolve_model(model)

    def with_(self, **changes: Any) -> Job:
        """A copy with `changes` (dataclasses.replace)."""
        return replace(self, **changes)


def _resolve_model(model: Any) -> ModelPreset:
    """A ModelPreset (or subclass) as it is, a preset's name resolved; any other type refused."""
    if isinstance(model, ModelPreset):
        return model
    if isinstance(model, str):
        return model_preset(model)
    raise TrainingBudgetError(f"model must be a preset name such as 'Llama 3.1 70B' or a ModelPreset "
                              f"(got {show(model)} of type {type(model).__name__})")


@fast_init(lazy=("hours", "days", "device_hours", "cost_usd", "energy_kwh"))  # ranges of arrays: made when read
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
    step: Any = None  # a calc.Step when the utilization came from the step model

    @property
    def ranged(self) -> bool:
        return isinstance(self.hours, Span)


# The one table of a job's flat names: each names a Job field today (the layout's in Megatron's words).
_FLAT = {"tp": "tensor_parallel", "pp": "pipeline_parallel", "cp": "context_parallel", "ep": "expert_parallel"}
_BATCH = ("seq_len", "global_batch_tokens", "micro_batch", "vpp", "recompute")


def job(**names: Any) -> Job:
    """A Job from flat names: params, active_params, model, method, optimizer, trainable, activations,
    tp, pp, vpp, cp, ep, zero_stage, micro_batch, seq_len, global_batch_tokens, recompute, device,
    devices, table, price, pue, tokens, utilization, goodput, name, today (units as in Job)."""
    batch = {k: names.pop(k) for k in _BATCH if k in names}
    if batch:
        from ..step.layout import Batch
        names["batch"] = Batch(**batch)
    return Job(**{_FLAT.get(k, k): v for k, v in names.items()})
