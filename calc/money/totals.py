"""Time, device-hours, cost, energy and device count of a training job.

hours = FLOPs / (rate · 1e12 · utilization · devices) / 3600, the seed's formula with
utilization and device count made explicit. Rates are TFLOP/s from the device table.
Energy: kWh = watts · device-hours · PUE / 1000 (board power from the datasheet; PUE of the
data centre, 1.0 when unknown). Cost: device-hours · price per device-hour.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.arith import over, ratio, times
from ..base.checks import at_least, fraction, non_negative, positive, whole, whole_in
from ..base.errors import TINY, ResultUnderflowError, TrainingBudgetError, agree, broadcasts, out, pick, show
from ..hardware.capacity import reserve_bytes
from ..hardware.catalog import DeviceTable, catalog
from ..physics.flops import train_flops
from ..physics.memory import train_memory

SECONDS_PER_HOUR = 3600.0
TERA = 1e12  # TFLOP/s -> FLOP/s
GB = 1e9     # the seed's GB: 10^9 bytes
GIB = 2.0 ** 30  # a binary gigabyte: what a vendor's "80GB" of HBM holds (see calc.hardware.catalog)
_INF = math.inf


def _table(table: DeviceTable | None) -> DeviceTable:
    return catalog() if table is None else table


def _points_only(utilization: Any) -> None:
    """Refuse a range request here: schedule returns points; ranges live in calc/compose/ranges.py."""
    if isinstance(utilization, str) or hasattr(utilization, "hour_factors"):
        raise TrainingBudgetError(
            f"utilization must be a number in (0, 1] (got {show(utilization)}); for low / expected / high "
            "from the published runs use calc.train_range(...) or calc.budget(Job(..., utilization='prior'))")


def hours_at(flops: Any, tflops: Any, utilization: Any, devices: Any, check: bool = True) -> Any:
    """Wall-clock hours: FLOPs / (TFLOP/s · 1e12 · utilization · devices) / 3600 (checked numbers;
    `check` False leaves the overflow check to the caller, e.g. calc.budget's ranges)."""
    if type(tflops) is float and type(utilization) is float and type(devices) in (float, int):
        rate = tflops * (TERA * SECONDS_PER_HOUR) * utilization * devices   # floats overflow to inf quietly
    else:  # numpy warns where a product overflows: the check below refuses it by name instead
        with np.errstate(over="ignore"):
            rate = tflops * (TERA * SECONDS_PER_HOUR) * utilization * devices
    hours = ratio(flops, rate, True)  # rate is a new array (or a float)
    if type(hours) is float:  # hours are > 0 by the formula: below TINY the rate overflowed or the FLOPs are tiny
        if hours < TINY:
            raise _underflow(hours, flops, tflops, utilization, devices)
    elif np.min(hours, initial=_INF) < TINY:  # (NaN compares False: out, or the caller's check, refuses it)
        raise _underflow(hours, flops, tflops, utilization, devices)
    return out(hours) if check else hours


def _underflow(hours: Any, flops: Any, tflops: Any, utilization: Any, devices: Any) -> ResultUnderflowError:
    """The refusal of hours that underflowed, naming the first such element's FLOPs, rate, utilization
    and devices (a device count near float64's largest makes the rate overflow, and hours 0)."""
    parts = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (hours, flops, tflops, utilization,
                                                                             devices)))
    flat = int(np.argmax(parts[0] < TINY)) if parts[0].ndim else 0
    h, f, r, u, n = (p.reshape(-1)[flat] for p in parts)
    where = "" if not parts[0].ndim else "[" + ", ".join(map(str, np.unravel_index(flat, parts[0].shape))) + "]"
    return ResultUnderflowError(
        f"the hours{where} underflow float64 (got {show(h)}): FLOPs {show(f)} at {show(r)} TFLOP/s x utilization "
        f"{show(u)} x devices {show(n)}; no training run is that small or that wide")


def kwh(watts: Any, device_hours: Any, pue: Any, check: bool = True) -> Any:
    """Energy in kWh: board watts · device-hours · PUE / 1000 (checked numbers; `check` as hours_at)."""
    energy = np.asarray(watts) * device_hours if not isinstance(watts, float) else watts * device_hours
    energy = over(times(energy, pue, True), 1000.0, True)  # energy is a new array (or a float)
    return out(energy) if check else energy


def device_tflops(device: Any, *, table: DeviceTable | None = None) -> np.ndarray | float:
    """TFLOP/s of `device`: a table name (case- and space-insensitive) or a number of TFLOP/s."""
    return _table(table).value(device, "tflops")


@broadcasts
def train_hours(params: Any, tokens: Any, device: Any, *, utilization: Any = 1.0,
                devices: Any = 1, table: DeviceTable | None = None,
                **flops_options: Any) -> np.ndarray | float:
    """Wall-clock hours to train on `devices` devices at `utilization` of the device's rate.

    `device` is a table name or TFLOP/s. `utilization` 1.0 reproduces the seed's "at 100%
    utilization" table; real runs reach far less: published large runs report 30-55% model
    FLOPs utilization (PaLM 46.2%, Llama 3.1 405B 38-43%; see `trainbudget runs`).
    `flops_options` are those of `train_flops` (n_layers, d_model, seq_len, recompute,
    active_params: a mixture-of-experts model's FLOPs follow its active parameters).
    """
    _points_only(utilization)
    flops = train_flops(params, tokens, **flops_options)
    rate = device_tflops(device, table=table)
    u = fraction("utilization", utilization)
    n = whole("devices", devices)
    return hours_at(flops, rate, u, n)


@broadcasts
def gpu_hours(params: Any, tokens: Any, device: Any, *, utilization: Any = 1.0, devices: Any = 1,
              table: DeviceTable | None = None, **flops_options: Any) -> np.ndarray | float:
    """Device-hours (GPU-hours): wall-clock hours times `devices`; arguments as `train_hours`."""
    hours = train_hours(params, tokens, device, utilization=utilization, devices=devices, table=table,
                        **flops_options)
    return out(hours * whole("devices", devices))


def price_per_device_hour(device: Any, usd_per_device_hour: Any = None, *,
                          table: DeviceTable | None = None) -> np.ndarray | float:
    """USD per device-hour for `device`: a number as given (>= 0), a "provider:plan" text looked
    up in the sourced prices (calc/money/prices.py), or, for None, the device row's own price."""
    if isinstance(device, str):
        _table(table).get(device)  # an unknown device is named as such, not blamed on the price
    if isinstance(usd_per_device_hour, str):
        from .prices import check_text, usd_per_device_hour as priced
        return priced(check_text("usd_per_device_hour", usd_per_device_hour), device, table=table)
    if usd_per_device_hour is None:
        try:
            return _table(table).value(device, "usd_per_device_hour")
        except TrainingBudgetError as e:
            raise TrainingBudgetError(f"{e}; pass usd_per_device_hour") from None
    return non_negative("usd_per_device_hour", usd_per_device_hour)


@broadcasts
def train_cost(params: Any, tokens: Any, device: Any, *, usd_per_device_hour: Any = None,
               utilization: Any = 1.0, devices: Any = 1, table: DeviceTable | None = None,
               **flops_options: Any) -> np.ndarray | float:
    """US dollars: device-hours times `usd_per_device_hour`.

    An explicit `usd_per_device_hour` (the user's contract price) wins; else the device row's
    price; else an error. Cloud list prices vary by provider, region and date, so the packaged
    catalog carries none.
    """
    if isinstance(usd_per_device_hour, str):  # "provider:plan", priced for the device as named
        usd_per_device_hour = price_per_device_hour(device, usd_per_device_hour, table=table)
    price = price_per_device_hour(device, usd_per_device_hour, table=table)
    dh = gpu_hours(params, tokens, device, utilization=utilization, devices=devices, table=table,
                   **flops_options)
    return out(dh * price)


# flat: one numpy-broadcasting argument per TRAIN_ENERGY_KWH argument (Excel's flat call)
@broadcasts
def train_energy_kwh(params: Any, tokens: Any, device: Any, *, pue: Any = 1.0, watts: Any = None,
                     utilization: Any = 1.0, devices: Any = 1, table: DeviceTable | None = None,
                     **flops_options: Any) -> np.ndarray | float:
    """Energy in kWh: board watts · device-hours · PUE / 1000.

    `watts` overrides the device row's board power (needed for a device given as a number).
    `pue` (power usage effectiveness, >= 1) scales for cooling and power delivery.
    """
    w = _table(table).value(device, "watts") if watts is None else positive("watts", watts)
    p = at_least("pue", pue, 1.0)
    dh = gpu_hours(params, tokens, device, utilization=utilization, devices=devices, table=table,
                   **flops_options)
    return kwh(w, dh, p)


# flat: one numpy-broadcasting argument per TRAIN_DEVICES_NEEDED argument (Excel's flat call)
@broadcasts
def devices_needed(params: Any, device: Any, *, method: str = "full", optimizer: str = "adamw",
                   zero_stage: Any = 0, trainable: Any = None, activations: Any = 0.0,
                   memory_gib: Any = None, table: DeviceTable | None = None,
                   tensor_parallel: Any = 1, pipeline_parallel: Any = 1, expert_parallel: Any = 1,
                   context_parallel: Any = 1, reserve_gib: Any = None,
                   **memory_options: Any) -> np.ndarray | float:
    """Smallest device count whose per-device bytes fit the device's usable memory (inf: never
    fits): the capacity less the reserve, the one rule of calc/hardware/capacity.py that budget().fits, fit
    and plan use (the larger of 3 GiB and 5% of the capacity; `reserve_gib` GiB when given, 0 for
    the whole capacity), so the count returned is the smallest at which budget() says it fits.

    On a layout (tensor, pipeline, context, expert parallel) the count is
    data_parallel · tensor · pipeline · context with data_parallel a multiple of
    expert_parallel. Per device = fixed + sharded / data_parallel (ZeRO `zero_stage` decides
    what is sharded, ZeRO §5; expert states shard over data / expert, which also scales as
    1 / data_parallel), so data_parallel = ceil(sharded / (memory - fixed)) rounded up to a
    multiple of expert_parallel. Memory: the catalog's `memory_gib` figures are the vendors'
    "80GB" labels, and HBM/GDDR capacities are binary, so the device holds memory_gib · 2^30
    bytes (GiB; see calc.hardware.catalog); `memory_gib` given here is a capacity in GiB too, and the
    reserve is taken from it as from the row's. The other
    options are those of `train_memory` (grad_bytes, master, expert_params, stage_params,
    zero3_buffers).
    """
    cap = (GIB * _table(table).value(device, "memory_gib") if memory_gib is None
           else GIB * positive("memory_gib", memory_gib))
    agree(("params", "zero_stage", "trainable", "activations", "memory_gib", "tensor_parallel", "pipeline_parallel",
           "expert_parallel", "context_parallel", "reserve_gib"),
          (params, zero_stage, trainable, activations, memory_gib, tensor_parallel, pipeline_parallel,
           expert_parallel, context_parallel, reserve_gib))
    e = whole("expert_parallel", expert_parallel)
    split = (whole("tensor_parallel", tensor_parallel) * whole("pipeline_parallel", pipeline_parallel)
             * whole("context_parallel", context_parallel))
    layout = {"tensor_parallel": tensor_parallel, "pipeline_parallel": pipeline_parallel,
              "expert_parallel": expert_parallel, "context_parallel": context_parallel}

    def total(dp: np.ndarray) -> np.ndarray | float:
        return train_memory(params, method=method, optimizer=optimizer, trainable=trainable,
                            activations=activations, zero_stage=zero_stage,
                            devices=dp * split, **layout, **memory_options).total

    if memory_options.get("zero3_buffers"):  # buffers do not scale with data parallel: two points
        at_e, at_2e = total(e), total(2 * e)
        sharded = 2 * e * (at_e - at_2e)      # bytes that divide by data_parallel
        fixed = at_e - sharded / e
    else:  # one point: the parts ZeRO shards at this stage scale as 1 / data_parallel (ZeRO §5)
        m = train_memory(params, method=method, optimizer=optimizer, trainable=trainable,
                         activations=activations, zero_stage=zero_stage, devices=e * split,
                         **layout, **memory_options)
        stage = whole_in("zero_stage", zero_stage, (0, 1, 2, 3))
        at_e = (pick(stage >= 3, m.weights, 0.0) + pick(stage >= 2, m.gradients, 0.0)
                + pick(stage >= 1, m.optimizer + m.master, 0.0))
        sharded, fixed = at_e * e, m.total - at_e
    room = cap - reserve_bytes(cap, reserve_gib) - fixed  # usable memory less what stays whole
    return out(_data_parallel(sharded, room, e) * split, finite=False)  # inf: never fits


def _data_parallel(sharded: Any, room: Any, e: Any) -> Any:
    """The fewest data-parallel ranks (a multiple of the expert-parallel size `e`, at least `e`)
    whose share of the `sharded` bytes fits in `room`; inf where nothing fits."""
    if type(room) is float and type(sharded) is float and type(e) is float:  # a scalar call: no numpy
        steps = sharded / room / e * (1 - 1e-12) if room > 0 else math.inf
        return max(math.ceil(steps) * e, e) if steps < math.inf else math.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        dp = np.ceil(sharded / room / e * (1 - 1e-12)) * e  # 1e-12 keeps exact fits from rounding up
    return np.where(room <= 0, math.inf, np.maximum(dp, e))
