"""The terms calc.budget takes from tables: a job's device row (the figures' row, the chosen row,
usable bytes, TFLOP/s, watts) and its price (USD per device-hour, label, source, as of, age) and
PUE. Device tables are frozen rows, so a name's terms are looked up once per table; a given
price's label is worded once per price. Units: bytes, TFLOP/s, watts, USD per device-hour."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.checks import at_least, non_negative
from ..base.errors import TrainingBudgetError, show
from ..hardware.capacity import usable_bytes_of
from ..hardware.catalog import DeviceTable
from ..money.owned import PUE_INDUSTRY, owned_usd_per_device_hour
from .job import Job, Owned
from .ranges import prior_device


def row_column(device: Any, table: DeviceTable, column: str) -> Any:
    """A device row's `column` (arrays of names too), or None where the row has none."""
    if isinstance(device, str):
        return getattr(table.get(device), column)
    try:
        return table.value(device, column)
    except TrainingBudgetError:
        return None


_LABELS: dict[float, str] = {}  # a given price's label, worded once per price


def price_terms(job: Job, device: Any, table: DeviceTable, watts: Any
                ) -> tuple[Any, str, str | None, str | None, int | None]:
    """(USD per device-hour or None, label, source, as_of, age in days) for `job`'s price."""
    price = job.pricing.price
    if type(price) is float and 0.0 <= price < math.inf:  # the common case: a number, as given
        label = _LABELS.get(price)
        if label is None:
            if len(_LABELS) > 1024:
                _LABELS.clear()
            label = _LABELS[price] = f"{price:g} USD per device-hour (given)"
        return price, label, "given", None, None
    if isinstance(price, Owned):
        if watts is None:
            raise TrainingBudgetError(f"owned hardware: device {show(device)} has no watts for the energy share")
        pue = PUE_INDUSTRY if price.pue is None else price.pue
        usd = owned_usd_per_device_hour(price.capex_usd, life_years=price.life_years, watts=watts,
                                        usd_per_kwh=price.usd_per_kwh, pue=pue, occupancy=price.occupancy)
        return usd, price.label(), "owned: calc/money/owned.py", None, None
    if price is None:
        usd = row_column(device, table, "usd_per_device_hour")
        if usd is None:
            return None, "no price", None, None, None
        return usd, "the device row's own price", "device row", _as_of(device, table), None
    if isinstance(price, str):
        from ..money.prices import check_text, lookup
        check_text("usd_per_device_hour", price)
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


def pue_terms(job: Job) -> Any:
    """The job's PUE, checked (>= 1); None: PUE_INDUSTRY for owned hardware, else 1.0."""
    if job.pricing.pue is None:
        if isinstance(job.pricing.price, Owned):
            return PUE_INDUSTRY if job.pricing.price.pue is None else job.pricing.price.pue
        return 1.0
    return at_least("pue", job.pricing.pue, 1.0)


_DEVICES: dict[tuple[int, str, bool], tuple[DeviceTable, Any, Any, Any, Any, Any]] = {}


def device_terms(device: Any, table: DeviceTable, ranged: bool) -> tuple[Any, Any, Any, Any, Any]:
    """(the device the figures are for, the chosen row (its price is the job's), usable bytes,
    TFLOP/s, watts) of `job.cluster.device` in `table`; for a range the figures' row is the prior's
    16-bit row (prior_device). A name is looked up once per table (device
    tables are frozen rows); numbers and arrays of names go through the table each time."""
    if not isinstance(device, str):
        named = prior_device(device, table) if ranged else device
        usable = usable_bytes_of(row_column(device, table, "memory_gib"))
        return named, device, usable, table.value(named, "tflops"), row_column(named, table, "watts")
    key = (id(table), device, ranged)
    hit = _DEVICES.get(key)
    if hit is None or hit[0] is not table:
        if len(_DEVICES) > 1024:
            _DEVICES.clear()
        given = table.get(device)
        row = table.get(prior_device(device, table)) if ranged else given
        hit = _DEVICES[key] = (table, row.name, given.name, usable_bytes_of(given.memory_gib), row.tflops,
                               row.watts)
    return hit[1], hit[2], hit[3], hit[4], hit[5]
