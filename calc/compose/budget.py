"""One job, one answer: a frozen `Job` (the inputs) and `budget(job)`, the only composer of a
frozen `Budget` (the figures and where each assumption came from).

Every door (the command line on every path, TRAIN_BUDGET, the workbook's cached values, JSON and
CSV) renders a `Budget`; none computes a figure itself. `budget` composes the point functions:
FLOPs (calc.train_flops), memory per device on the layout (calc.train_memory), hours
(calc.money.totals.hours_at), energy (calc.money.totals.kwh), and prices (calc.money.prices, calc.money.owned). A range
is a layer over the points: hours, device-hours, cost and energy are proportional to
1 / (utilization · goodput), so each is computed once at utilization 1 and scaled by the prior's
three factors (calc/compose/ranges.py's convention: low <= expected <= high; low hours come from the
prior's high utilization).

Units: bytes, counts, hours, USD, kWh; device memory is a capacity in GiB (a vendor's "80GB" of
HBM is 80 GiB, see calc.hardware.catalog). The data classes live in calc/compose/job.py, the device-row and price
terms in calc/compose/terms.py. Every numeric field of a `Job` may be a numpy array; arrays broadcast like
numpy and the `Budget`'s figures are arrays of that shape.

Speed (bench/bench_budget.py): a scalar job of Python numbers is checked in one pass
(`_plain`, each test the check's own fast path; anything else takes the general checks, which word
the errors), and its prior's terms and its layout's memory are kept per job key, so the same
question asked again (a workbook recalculating) is a few look-ups; the formulas are the same ones.
Arrays of jobs: each range is checked in the call (one reduction of the hours bounds all four,
calc.compose.ranges.lazy_ranges) and its low / expected / high, the point times the prior's factors,
made when the Budget's field is first read (calc/base/fastinit.py's `Later`), as are the device-hours,
cost and energy points they come from: the same products, bit for bit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.arith import over
from ..base.checks import choice, divides, non_negative, positive, whole, whole_in
from ..base.errors import ResultOverflowError, TrainingBudgetError, show
from ..base.fastinit import Later, defer
from ..hardware.capacity import RESERVE_GIB, RESERVE_SHARE, usable_bytes_of
from ..hardware.catalog import DeviceTable, catalog
from ..model.shapes import preset_params
from ..money.totals import hours_at, kwh
from ..physics.flops import (
    FLOPS_PER_PARAM_TOKEN as _PER_TOKEN,
    FORWARD_FLOPS_PER_PARAM_TOKEN,
    FROZEN_FLOPS_PER_PARAM_TOKEN,
    TRAIN_FLOPS_PER_PARAM_TOKEN,
    dense_flops,
    flops_per_param_token,
    train_flops,
)
from ..physics.layout import check_parts, checked_layout
from ..physics.memory import (
    GRAD_BYTES,
    METHODS,
    OPTIMIZERS,
    ZERO_STAGES,
    Counts,
    MemoryBreakdown,
    Shards,
    States,
    check_trainable,
    memory_parts,
)
from ..physics.stages import busiest_params
from .job import Budget, Job, Owned, Span
from .ranges import checked_once, days_of, lazy_ranges, range_of
from .step_terms import step_activations, wants_step
from .terms import device_terms as _device, price_terms as _price, pue_terms as _pue, row_column as _column
from .utilization_terms import _PRIOR_WORDS, _step, _utilization

__all__ = ["RESERVE_GIB", "RESERVE_SHARE", "Budget", "Job", "Owned", "Span", "budget", "usable_bytes"]

# Usable device memory: one rule, calc/hardware/capacity.py (capacity less the larger of 3 GiB and 5%).
_new = object.__new__
_tuple_new = tuple.__new__  # _tuple_new(Span, (low, expected, high)): a Span in one C call (calc/compose/job.py)


def usable_bytes(device: Any, table: DeviceTable | None = None) -> Any:
    """Bytes a training job may use on `device`: memory_gib · 2^30 less the reserve (the larger of
    RESERVE_GIB and RESERVE_SHARE of the capacity, calc/hardware/capacity.py); None when the row has no memory."""
    return usable_bytes_of(_column(device, catalog() if table is None else table, "memory_gib"))


# --- the parts -----------------------------------------------------------------------------------

def _counts(job: Job) -> tuple[Any, Any, Any, Any]:
    """(total, active, routed-expert, first-stage) parameters, and the layout checked on the shape."""
    if job.model.preset is not None:
        if job.model.params is not None:
            raise TrainingBudgetError(f"give params or a model, not both (got params={show(job.model.params)}, "
                                      f"model={job.model.preset.name!r})")
        if job.model.active_params is not None:  # a model's own active count would silently win
            raise TrainingBudgetError(f"give active_params with params, not with a model (model "
                                      f"{job.model.preset.name!r} gives its own active parameters; got "
                                      f"active_params={show(job.model.active_params)})")
        b = preset_params(job.model.preset)
        # FLOPs' N: embedding-inclusive by default (Kaplan's 6·N·D; calc.physics.flops), not the published `active`
        total, active = float(b.total), float(b.active_with_embedding)
        shape = job.model.preset.shape
        if not shape:
            return total, active, 0.0, 0.0
        _check_layout(job, shape)
        experts = float(b.experts) if shape.get("n_experts", 1) > 1 else 0.0
        return total, active, experts, float(shape["vocab"] * shape["d_model"])
    if job.model.params is None:
        raise TrainingBudgetError("a job needs params (a count such as 7e9) or a model")
    total = positive("params", job.model.params)
    active = total if job.model.active_params is None else positive("active_params", job.model.active_params)
    return total, active, 0.0, 0.0


def _check_layout(job: Job, shape: dict[str, Any]) -> None:
    """A parallel size must divide what it splits: heads (tensor), experts; pipeline stages may be
    uneven (as calc.fit_layouts plans them: the busiest holds ceil(layers / stages)) but each holds
    at least one layer."""
    divides("tensor_parallel", whole("tensor_parallel", job.layout.tp), "n_heads",
            float(shape["n_heads"]))
    stages = whole("pipeline_parallel", job.layout.pp)
    if (stages > shape["n_layers"]) if type(stages) is float else np.any(stages > shape["n_layers"]):
        raise TrainingBudgetError("pipeline_parallel must be at most n_layers, every stage holding a layer (got "
                                  f"pipeline_parallel={show(job.layout.pp)}, n_layers={shape['n_layers']})")
    divides("expert_parallel", whole("expert_parallel", job.layout.ep), "n_experts",
            float(shape.get("n_experts", 1)))


# --- the composer --------------------------------------------------------------------------------

def budget(job: Job) -> Budget:
    """The one composer: `job`'s FLOPs, memory on the layout (fits, headroom), hours, days,
    device-hours, cost (USD), energy (kWh), each a point or a Span, with their provenance."""
    table = catalog() if job.cluster.table is None else job.cluster.table
    plain = _plain(job)
    if plain is None:
        total, active, experts, stage = _counts(job)
        tokens = positive("tokens", job.tokens)
        n = whole("devices", job.cluster.devices)
    else:
        total, n, tokens = plain[0], plain[1], plain[8]
        active, experts, stage = total, 0.0, 0.0
    try:  # the method's FLOPs per parameter-token: a canonical name is one look-up
        k = _PER_TOKEN[job.training.method]
    except (KeyError, TypeError):
        k = flops_per_param_token(job.training.method)  # written otherwise ("Inference"), or refused naming it
    flops = _flops(total, active, tokens, k)
    step = None
    util = job.utilization
    if util.__class__ is str and util not in _PRIOR_WORDS and wants_step(util):  # the physics of the job's step
        u, u_basis, g, g_basis, prior, factors, top, step = _step(job, flops / tokens, n, table)
    else:
        u, u_basis, g, g_basis, prior, factors, top = _utilization(job, active, total, tokens, n)
    device, chosen, usable, rate, watts = _device(job.cluster.device, table, prior is not None)
    if prior is not None and step is None and k != TRAIN_FLOPS_PER_PARAM_TOKEN:  # full runs' range, another step
        u_basis += PRIOR_CAVEATS[k]
    memory, dp = _memory(job, total, experts, stage, n, plain, None if step is None else step_activations(job))
    headroom = None if usable is None else usable - memory.total
    fits = None if usable is None else (headroom >= 0 if isinstance(headroom, float) else np.asarray(headroom) >= 0)
    # Points in the order of the point functions (train_hours, gpu_hours, train_cost,
    # train_energy_kwh); a range is each figure at utilization 1 times the prior's factors
    # 1 / (u · goodput) (UtilizationPrior.hour_factors), as calc/compose/ranges.py.
    hours1 = (hours_at(flops, rate, 1.0, n, False) if prior is not None
              else over(hours_at(flops, rate, u, n, False), g))
    # the price is the chosen row's (an FP8 row's own price, not its 16-bit prior row's): one rule
    usd, label, source, as_of, age = _price(job, chosen, table, watts)
    pue = job.pricing.pue
    if not (type(pue) is float and 1.0 <= pue < _INF):  # at_least("pue", pue, 1.0)'s fast path
        pue = _pue(job)
    hours, device_hours, cost, energy = _figures(job, hours1, n, usd, watts, pue, factors, top)
    lay = job.layout
    layout = {"tp": lay.tp, "pp": lay.pp, "ep": lay.ep, "cp": lay.cp, "dp": dp}
    # Filled by name in Budget's field order, so every Budget's __dict__ shares one key table (CPython's
    # key-sharing dicts): a third of the time of a 27-key dict literal (calc/base/fastinit.py)
    b = _new(Budget)
    d = b.__dict__
    d["job"], d["device"], d["flops"], d["params"], d["active_params"] = job, device, flops, total, active
    d["memory"], d["layout"], d["usable_bytes"], d["fits"], d["headroom_bytes"] = memory, layout, usable, fits, headroom
    d["hours"], d["days"], d["device_hours"], d["cost_usd"], d["energy_kwh"] = (hours, days_of(hours), device_hours,
                                                                                cost, energy)
    d["utilization"], d["utilization_basis"], d["goodput"], d["goodput_basis"] = u, u_basis, g, g_basis
    d["usd_per_device_hour"], d["price_label"], d["price_source"], d["price_as_of"] = usd, label, source, as_of
    d["price_age_days"], d["pue"], d["prior"], d["step"] = age, pue, prior, step
    if type(hours) is Later:  # arrays of jobs: their ranges made when read
        defer(b)
    return b


def _figures(job: Job, hours1: Any, n: Any, usd: Any, watts: Any, pue: Any, factors: Any,
             top: float) -> tuple[Any, Any, Any, Any]:
    """(hours, device-hours, cost, energy) from the hours at utilization 1 (`factors` None: the
    hours themselves): points, or ranges of the points (Spans, or for arrays of jobs `Later`s made
    when read; checked_once's one reduction checks all four where it can)."""
    if factors is not None and type(hours1) is not float:
        lazy = lazy_ranges(hours1, n, usd, watts, pue, factors, top)
        if lazy is not None:
            return lazy
    device_hours1 = hours1 * n
    if factors is not None and type(device_hours1) is not float:
        top = checked_once(device_hours1, top, usd, watts, pue)
    try:
        hours = range_of(hours1, factors, top)
        try:
            cost = None if usd is None else range_of(device_hours1 * usd, factors, top)
        except ResultOverflowError:
            raise ResultOverflowError(f"the cost overflows float64: usd_per_device_hour {show(usd)} times "
                                      "the device-hours; check the price") from None
        try:
            energy = None if watts is None else range_of(kwh(watts, device_hours1, pue, False), factors, top)
        except ResultOverflowError:
            raise ResultOverflowError(f"the energy overflows float64: pue {show(pue)} times the device-hours' "
                                      f"{show(watts)} W; check pue") from None
        return hours, range_of(device_hours1, factors, top), cost, energy
    except ResultOverflowError as e:
        raise _owned_overflow(job, usd, watts, pue) or e from None


def _owned_overflow(job: Job, usd: Any, watts: Any, pue: Any) -> ResultOverflowError | None:
    """For owned hardware whose cost overflows: the error naming the input that made its price
    huge (the tariff, or CAPEX,LIFE), not the price it was worked out into; None otherwise."""
    owned = job.pricing.price
    if not isinstance(owned, Owned) or np.ndim(usd) or np.ndim(watts) or np.ndim(pue):
        return None
    energy = float(watts) / 1000.0 * float(pue) * owned.usd_per_kwh  # owned_usd_per_device_hour's energy term
    if energy >= float(usd) / 2:
        why = (f"{show(float(watts))} W x PUE {show(float(pue))} x {owned.tariff_name} {show(owned.usd_per_kwh)}; "
               f"check {owned.tariff_name}, the electricity tariff in USD per kWh")
    else:
        why = (f"capex {show(owned.capex_usd)} USD over {show(owned.life_years)} years; check own's CAPEX,LIFE")
    return ResultOverflowError(f"the cost overflows float64: owned hardware at {show(float(usd))} USD per "
                               f"device-hour ({why})")


_INF = math.inf
_WHOLE_INT = 2 ** 53  # whole(): an int below 2^53 is a whole float exactly
_ZERO, _METHODS, _OPTIMIZERS = frozenset(ZERO_STAGES), frozenset(METHODS), frozenset(OPTIMIZERS)  # (3.0 in _ZERO)


def _plain(job: Job) -> tuple[float, ...] | None:
    """The common scalar question's checked numbers, or None (then the general path checks each
    input, in its order, and words any error). (params, devices, tensor, pipeline, context,
    expert parallel, ZeRO stage, activations bytes, tokens) as floats, for a job of `params`
    (no model, no active_params), Python numbers and canonical method / optimizer names. Each
    test is the fast path of the check that the general path runs (positive, whole, whole_in,
    non_negative, choice in calc/base/checks.py), so both give the same values."""
    m, tr, lay = job.model.__dict__, job.training.__dict__, job.layout.__dict__  # (fast_init fills __dict__)
    params, tokens, act, zero, method, opt = (m["params"], job.tokens, tr["activations"], lay["zero_stage"],
                                              tr["method"], tr["optimizer"])
    if (type(params) is not float or not 0.0 < params < _INF or type(tokens) is not float or not 0.0 < tokens < _INF
            or m["preset"] is not None or m["active_params"] is not None
            or type(act) is not float or not 0.0 <= act < _INF or type(zero) not in (int, float)
            or zero not in _ZERO or type(method) is not str or method not in _METHODS
            or type(opt) is not str or opt not in _OPTIMIZERS):
        return None
    n, t, p, c, e = job.cluster.__dict__["devices"], lay["tp"], lay["pp"], lay["cp"], lay["ep"]
    if type(n) is int and type(t) is int and type(p) is int and type(c) is int and type(e) is int:  # the usual
        if not (1 <= n < _WHOLE_INT and 1 <= t < _WHOLE_INT and 1 <= p < _WHOLE_INT and 1 <= c < _WHOLE_INT
                and 1 <= e < _WHOLE_INT):
            return None
    else:
        for x in (n, t, p, c, e):
            kind = type(x)
            if not ((kind is int and 1 <= x < _WHOLE_INT) or (kind is float and x >= 1.0 and x.is_integer())):
                return None
    return (params, float(n), float(t), float(p), float(c), float(e), float(zero), act, tokens)


PRIOR_OF_TRAINING = "; fitted on training runs, not on inference"
# LoRA, QLoRA (calc.physics.flops.FROZEN_FLOPS_PER_PARAM_TOKEN): Hu et al. 2021, arXiv:2106.09685, §4.2 footnote 5,
# 43.1 against 32.5 tokens/s per V100 on GPT-3 175B, 1.33x, where 6N / 4N is 1.5x
PRIOR_OF_FULL = "; fitted on full training runs: LoRA ran 1.33x as fast as full fine-tuning, its FLOPs 1.5x"
PRIOR_CAVEATS = {FORWARD_FLOPS_PER_PARAM_TOKEN: PRIOR_OF_TRAINING, FROZEN_FLOPS_PER_PARAM_TOKEN: PRIOR_OF_FULL}


def _flops(total: Any, active: Any, tokens: Any, k: float) -> Any:
    """FLOPs: k · N · D on the active parameters, k the method's FLOPs per parameter-token
    (calc.flops_per_param_token); calc.physics.flops' active_params check, and its overflow error
    naming the inputs out of range."""
    try:
        if active is total:
            return dense_flops(total, tokens, "none", k)
        if type(active) is float and type(total) is float and active <= total:
            return dense_flops(active, tokens, "none", k)
    except ResultOverflowError:
        pass  # train_flops says which inputs are out of range
    flops = train_flops(total, tokens, active_params=None if active is total else active)
    return flops if k == TRAIN_FLOPS_PER_PARAM_TOKEN else dense_flops(active + 0.0 * total, tokens, per_param_token=k)


# A scalar job's memory (a frozen MemoryBreakdown) and data-parallel size by (method, optimizer, trainable,
# _plain's numbers): the same layout asked again (a workbook recalculating, a sweep over tokens or prices)
# is one look-up. Only checked Python floats and names key it, so an input that would be refused never hits.
_MEMORY: dict[tuple[Any, ...], tuple[MemoryBreakdown, Any]] = {}
_LAYOUTS: dict[tuple[float, ...], tuple[Shards, float]] = {}  # a checked layout's Shards and data parallel


def _memory(job: Job, total: Any, experts: Any, stage: Any, n: Any,
            plain: tuple[float, ...] | None = None, act: Any = None) -> tuple[MemoryBreakdown, Any]:
    """Bytes per device on the layout, and the data-parallel size: calc.physics.memory's formulas
    (memory_parts) on the job (`n` its checked device count), checked as train_memory checks them;
    `plain` _plain's checked numbers (no experts, no first-stage parameters), else None; `act` the
    activation bytes (None: the job's own)."""
    training = job.training
    trainable = training.trainable
    if trainable is not None:  # a share, or a whole count at most the model's parameters
        check_trainable(trainable, total)
    key = None
    if plain is not None and act is None:
        kind, opt, act, stage_k = training.method, training.optimizer, plain[7], plain[6]
        if (trainable is None or type(trainable) is float) and (act != 0.0 or math.copysign(1.0, act) > 0.0):
            key = (kind, opt, trainable, plain[:8])  # not the tokens
            hit = _MEMORY.get(key)
            if hit is not None:
                return hit
        sizes = plain[1:7]  # (devices, tensor, pipeline, context, expert parallel, ZeRO stage): checked floats
        layout = _LAYOUTS.get(sizes)
        if layout is None:
            _, t, p, c, e, dp = checked_layout(n, plain[2], plain[3], plain[4], plain[5], devices_checked=True,
                                               sizes_checked=True)
            if len(_LAYOUTS) > 1024:
                _LAYOUTS.clear()
            layout = _LAYOUTS[sizes] = (Shards(dp * c, t, p, e, stage_k), dp)  # (never a refused layout)
        shards, dp = layout
    else:
        kind = choice("method", training.method, METHODS)
        opt = choice("optimizer", training.optimizer, OPTIMIZERS)
        act = non_negative("activations", training.activations if act is None else act)
        check_parts(experts, stage, total)
        _, t, p, c, e, dp = checked_layout(n, job.layout.tp, job.layout.pp, job.layout.cp,
                                           job.layout.ep, devices_checked=True)
        stage_k = whole_in("zero_stage", job.layout.zero_stage, ZERO_STAGES)
        if job.model.preset is not None and job.model.preset.shape:  # uneven stages: the busiest stage's bytes
            total, experts = busiest_params(total, experts, stage, job.model.preset.shape["n_layers"], p)
        shards = Shards(dp * c, t, p, e, stage_k)  # ZeRO shards over data x context ranks
    # Counts and States each in one C call (every field in its order, as Counts(...), States(...)):
    # a new question's memory is made here
    made = memory_parts(_tuple_new(Counts, (total, experts, stage)),
                        _tuple_new(States, (kind, opt, trainable, GRAD_BYTES, True, act, False)), shards), dp
    if key is not None:  # (not -0.0 activations: it equals 0.0 as a key, and its MemoryBreakdown keeps the sign)
        if len(_MEMORY) > 4096:
            _MEMORY.clear()
        _MEMORY[key] = made
    return made
