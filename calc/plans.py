"""Plans side by side: one row per (model, tokens, device, price) with point figures or ranges.

Report data for `trainbudget estimate --range / --price / --own / --scenarios`: plain dicts
(flat keys, so the same rows print as a table, JSON or CSV). A range gives `<figure>_low`,
`<figure>_expected` and `<figure>_high` (low <= expected <= high, see calc/ranges.py); a point
estimate gives `<figure>`. Prices carry their source, `as_of` and age in days.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .checks import TrainingBudgetError, fraction, whole
from .devices import DeviceTable, catalog
from .owned import PUE_INDUSTRY, owned_usd_per_device_hour
from .prices import lookup, parse_spec
from .prior import utilization_prior
from .ranges import prior_device
from .schedule import train_energy_kwh, train_hours
from .units import parse_count

FIGURES = ("hours", "device_hours", "usd", "kwh")
SCENARIO_COLUMNS = ("name", "params", "tokens", "device", "devices", "utilization", "price", "own")


@dataclass(frozen=True)
class Owned:
    """Owned-hardware terms for a price: capex per device (USD), life (years), energy terms."""

    capex_usd: float
    life_years: float
    usd_per_kwh: float
    pue: float = PUE_INDUSTRY
    occupancy: float = 1.0


def parse_own(text: str, usd_per_kwh: float | None, pue: float = PUE_INDUSTRY, occupancy: float = 1.0) -> Owned:
    """"CAPEX,LIFE" (USD per device, years) with the energy terms; usd_per_kwh is required."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2:
        raise TrainingBudgetError(f"own must be CAPEX,LIFE such as 33819,5 (got {text!r})")
    try:
        capex, life = float(parts[0]), float(parts[1])
    except ValueError:
        raise TrainingBudgetError(f"own must be CAPEX,LIFE such as 33819,5 (got {text!r})") from None
    if usd_per_kwh is None:
        raise TrainingBudgetError("own needs usd_per_kwh (the electricity tariff, USD per kWh)")
    return Owned(capex, life, usd_per_kwh, pue, occupancy)


def price_info(device: str, price: str | float | None, own: Owned | None, table: DeviceTable,
               today: dt.date | None = None) -> dict[str, Any]:
    """USD per device-hour with where it comes from: a number, a provider:plan row, or owned terms."""
    if own is not None:
        watts = table.get(device).watts
        if watts is None:
            raise TrainingBudgetError(f"own: device {device!r} has no watts for the energy share")
        usd = owned_usd_per_device_hour(own.capex_usd, life_years=own.life_years, watts=watts,
                                        usd_per_kwh=own.usd_per_kwh, pue=own.pue, occupancy=own.occupancy)
        return {"usd_per_device_hour": usd, "price": f"owned {own.capex_usd:g} USD over {own.life_years:g} y",
                "price_as_of": None, "price_age_days": None, "price_source": "owned: calc/owned.py"}
    if price is None or price == "":
        return {}
    spec = parse_spec(price) if isinstance(price, str) else float(price)
    if isinstance(spec, float):
        return {"usd_per_device_hour": spec, "price": f"{spec:g} USD", "price_as_of": None,
                "price_age_days": None, "price_source": "given"}
    row, plan = lookup(str(price), device, table)
    return {"usd_per_device_hour": row.usd[plan], "price": f"{row.provider}:{plan} {row.offering}",
            "price_as_of": row.as_of, "price_age_days": row.age_days(today), "price_source": row.source}


def plan_row(params: float, tokens: float, device: str, *, devices: int = 1, utilization: Any = "prior",
             price: str | float | None = None, own: Owned | None = None, pue: float = 1.0,
             table: DeviceTable | None = None, name: str = "", today: dt.date | None = None) -> dict[str, Any]:
    """One plan's figures: ranges when utilization is "prior", else points at that utilization."""
    table = catalog() if table is None else table
    ranged = isinstance(utilization, str)
    d = table.get(prior_device(device, table) if ranged else device)
    u = 1.0 if ranged else float(fraction("utilization", utilization))
    n = int(whole("devices", devices))
    factors = utilization_prior().hour_factors() if ranged else None
    hours = float(train_hours(params, tokens, d.tflops, utilization=u, devices=n))
    info = price_info(d.name, price, own, table, today)
    base = {"hours": hours, "device_hours": hours * n,
            "usd": hours * n * info["usd_per_device_hour"] if info else None,
            "kwh": float(train_energy_kwh(params, tokens, d.name, pue=pue, utilization=u, devices=n, table=table))
            if d.watts else None}
    row: dict[str, Any] = {"name": name or table.get(device).name, "device": d.name, "params": params, "tokens": tokens,
                           "devices": n, "utilization": "prior" if ranged else u}
    for fig in FIGURES:
        if not ranged:
            row[fig] = base[fig]
            continue
        for label, f in zip(("low", "expected", "high"), factors, strict=True):
            row[f"{fig}_{label}"] = None if base[fig] is None else base[fig] * float(f)
    return {**row, **info}


def scenario_rows(records: Iterable[Mapping[str, Any]], *, defaults: Mapping[str, Any] | None = None,
                  usd_per_kwh: float | None = None, table: DeviceTable | None = None,
                  today: dt.date | None = None) -> list[dict[str, Any]]:
    """One plan row per scenario record (CSV columns SCENARIO_COLUMNS; blanks take `defaults`)."""
    base = dict(defaults or {})
    rows = []
    for i, rec in enumerate(records, start=1):
        r = {**base, **{k: v for k, v in rec.items() if k and v not in (None, "")}}
        unknown = sorted(set(rec) - set(SCENARIO_COLUMNS) - {None})
        if unknown:
            raise TrainingBudgetError(f"scenario {i}: unknown column(s) {', '.join(unknown)} "
                                      f"(known: {', '.join(SCENARIO_COLUMNS)})")
        for need in ("params", "tokens", "device"):
            if need not in r:
                raise TrainingBudgetError(f"scenario {i}: {need} is required")
        util = r.get("utilization", "prior")
        util = "prior" if str(util).strip().lower() == "prior" else _number(f"scenario {i}: utilization", util)
        own = parse_own(r["own"], usd_per_kwh) if r.get("own") else None
        rows.append(plan_row(parse_count(f"scenario {i}: params", r["params"]),
                             parse_count(f"scenario {i}: tokens", r["tokens"]), str(r["device"]),
                             devices=_number(f"scenario {i}: devices", r.get("devices", 1)), utilization=util,
                             price=r.get("price"), own=own, table=table, name=str(r.get("name", "")),
                             today=today))
    return rows


def _number(name: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TrainingBudgetError(f"{name} must be a number (got {value!r})") from None
