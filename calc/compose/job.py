"""The frozen data of one job: `Job` (inputs), `Budget` (the figures and their provenance), `Span`
(low / expected / high) and `Owned` (owned hardware as a price). calc/compose/budget.py composes a Budget
from a Job; nothing else makes one. Units are in the names and docstrings (bytes, counts, hours,
USD, kWh; device memory in GiB)."""

from __future__ import annotations

import datetime as dt
from dataclasses import FrozenInstanceError, dataclass, field, fields as dataclass_fields, replace
from operator import itemgetter
from typing import Any

from ..base.fastinit import fast_init
from ..model.shapes import ModelPreset
from ..physics.memory import MemoryBreakdown
from ..prior.utilization import UtilizationPrior
from .parts import Cluster, Model, Parallel, Pricing, Training, _resolve


class Span(tuple):
    """A figure as low / expected / high (low <= expected <= high), each a float or an array.

    Tuple-backed, so calc.budget builds one in a single C call (tuple.__new__(Span, three): the
    scalar question's speed) rather than through an __init__: frozen (assignment raises
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


# The parts' defaults (frozen, so one instance serves every job)
MODEL, TRAINING, LAYOUT, CLUSTER, PRICING = Model(), Training(), Parallel(), Cluster(), Pricing()


@fast_init
@dataclass(frozen=True, eq=False)
class Job:
    """A training job's inputs: named frozen parts (calc/compose/parts.py) and the job's own
    numbers (each may be a numpy array; they broadcast).

    `model` what is trained (Model), `training` how (Training), `layout` how the devices split it
    (Parallel), `cluster` which devices (Cluster), `pricing` what they cost (Pricing). `tokens`
    (count). `utilization` a share of the device's rate in (0, 1], "prior" or a UtilizationPrior
    (a range), or "step" (the step model on the layout). `goodput` the share of wall-clock time
    spent training, in (0, 1]; None: 1.0 for a given utilization, the prior's for a range.
    `calc.job(**flat)` builds one from flat names (FLAT, the one table of them).
    """

    model: Model = MODEL
    training: Training = TRAINING
    layout: Parallel = LAYOUT
    cluster: Cluster = CLUSTER
    pricing: Pricing = PRICING
    tokens: Any = 1e9
    utilization: Any = 1.0
    goodput: Any = None
    name: str = ""
    today: dt.date | None = None

    def with_(self, **changes: Any) -> Job:
        """A copy with `changes`, given by flat name (FLAT) or by part."""
        return replace(self, **_grouped(self, changes))


# The one table of a job's flat names: flat name -> (part, field); part None: the Job's own field.
FLAT: dict[str, tuple[str | None, str]] = {
    "params": ("model", "params"), "active_params": ("model", "active_params"), "model": ("model", "preset"),
    "method": ("training", "method"), "optimizer": ("training", "optimizer"),
    "trainable": ("training", "trainable"), "activations": ("training", "activations"),
    **{name: ("layout", name) for name in ("tp", "pp", "cp", "ep", "zero_stage", "vpp", "micro_batch", "seq_len",
                                           "global_batch_tokens", "recompute", "flash_attention")},
    "device": ("cluster", "device"), "devices": ("cluster", "devices"), "table": ("cluster", "table"),
    "calibration": ("cluster", "calibration"),
    "price": ("pricing", "price"), "pue": ("pricing", "pue"),
    **{name: (None, name) for name in ("tokens", "utilization", "goodput", "name", "today")},
}
PARTS = {"model": Model, "training": Training, "layout": Parallel, "cluster": Cluster, "pricing": Pricing}


def _grouped(base: Job | None, names: dict[str, Any]) -> dict[str, Any]:
    """Flat names gathered into the parts they belong to (a part given whole is kept), each part
    made over `base`'s (or the defaults)."""
    parts: dict[str, dict[str, Any]] = {}
    out: dict[str, Any] = {}
    for name, value in names.items():
        if name in PARTS and isinstance(value, PARTS[name]):
            out[name] = value  # a part given whole (anything else under "model" is the preset)
            continue
        try:
            part, key = FLAT[name]
        except KeyError:
            raise TypeError(f"a job has no field {name!r} (known: {', '.join(FLAT)})") from None
        if part is None:
            out[key] = value
        else:
            parts.setdefault(part, {})[key] = value
    for part, fields in parts.items():
        if part in out:
            raise TypeError(f"give {part} whole or by its fields, not both ({', '.join(fields)})")
        if base is not None:
            out[part] = replace(getattr(base, part), **fields)
        else:  # the model resolves a preset's name (its __post_init__); the rest are plain fields: `of`
            out[part] = Model(**fields) if part == "model" else PARTS[part].of(fields)
    return out


def _compile_job() -> Any:
    """calc.job, written out from FLAT once at import: each flat name a keyword whose default is its
    part's default (matched by the interpreter, not looked up one by one), each part made from its
    fields straight into its __dict__, or taken whole when given so (then none of its fields may
    be). The same Jobs as Job(**_grouped(None, names)), built in about a third of the time (the
    scalar question builds one per call)."""
    owned: dict[str | None, list[tuple[str, str]]] = {}
    for name, (part, key) in FLAT.items():
        owned.setdefault(part, []).append((name, key))
    ns: dict[str, Any] = {"_U": _UNSET, "_new": object.__new__, "_Job": Job, "_unknown": _unknown,
                          "_not_a_part": _not_a_part, "_resolve": _resolve, "_ModelPreset": ModelPreset,
                          **{f"_{k}": v for k, v in PARTS.items()}}
    for part, names in owned.items():
        base = _Job_defaults if part is None else getattr(Job, part)
        ns.update({f"_D_{n}": getattr(base, k) if part is not None else base[k] for n, k in names})
        if part is not None:
            ns[f"_P_{part}"] = base  # the Job's default part (frozen: one instance serves every job)
    body = ["    if model.__class__ is _model:\n        model_part, model = model, _D_model\n"
            "    elif model is not None and model.__class__ is not _ModelPreset:\n        model = _resolve(model)\n"]
    for part, names in owned.items():
        if part is None:
            continue
        whole = "model_part" if part == "model" else part
        mixed = " or ".join(f"{n} is not _D_{n}" for n, _ in names)
        same = " and ".join(f"{n} is _D_{n}" for n, _ in names)  # every field its default: the default part
        body.append(f"    if {whole} is not _U:\n"
                    f"        if not isinstance({whole}, _{part}):\n            _not_a_part({part!r})\n"
                    f"        if {mixed}:\n            _unknown({part!r})\n        {part}_ = {whole}\n"
                    f"    elif {same}:\n        {part}_ = _P_{part}\n"
                    f"    else:\n        {part}_ = _new(_{part})\n        d = {part}_.__dict__\n"
                    + _stores(PARTS[part], names, "        "))
    job_stores = _stores(Job, [(f"{p}_", p) for p in PARTS] + owned[None], "    ")
    params = ", ".join([f"{n}=_D_{n}" for n in FLAT] + [f"{p}=_U" for p in PARTS if p != "model"])
    src = (f"def job(*, {params}, **extra):\n    if extra:\n        _unknown(next(iter(extra)))\n"
           "    model_part = _U\n" + "".join(body)
           + f"    j = _new(_Job)\n    d = j.__dict__\n{job_stores}    return j\n")
    exec(src, ns)
    return ns["job"]


def _stores(cls: type, names: list[tuple[str, str]], indent: str) -> str:
    """Source lines (at `indent`) storing each (variable, field) into `d`, a new `cls` instance's __dict__, in
    the order of cls's fields: instances that fill their fields in one order share one key table
    (CPython's key-sharing dicts), which makes each part a third quicker to build than from a
    dict literal."""
    order = [f.name for f in dataclass_fields(cls)]
    return "".join(f"{indent}d[{k!r}] = {n}\n"
                   for n, k in sorted(names, key=lambda pair: order.index(pair[1])))


_UNSET = object()  # a part calc.job was not given whole
_Job_defaults = {f.name: f.default for f in dataclass_fields(Job)}


def _unknown(name: str) -> None:
    """Refuse a name calc.job does not know, or a part given both whole and by its fields."""
    if name in PARTS:
        raise TypeError(f"give {name} whole or by its fields, not both")
    _not_a_part(name)


def _not_a_part(name: str) -> None:
    """Refuse a name that is no flat field (a part's name given something other than that part)."""
    raise TypeError(f"a job has no field {name!r} (known: {', '.join(FLAT)})")


job = _compile_job()
job.__doc__ = """A Job from flat names (FLAT): params, active_params, model (a preset or its name), method,
optimizer, trainable, activations, tp, pp, cp, ep, zero_stage, vpp, micro_batch, seq_len,
global_batch_tokens, recompute, device, devices, table, calibration, price, pue, tokens, utilization,
goodput, name, today (units as in calc/compose/parts.py); a part may be given whole by its name."""


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

