"""Cloud prices per device-hour: sourced, dated rows in `data/prices.csv`, looked up by provider and plan.

Each row is one offering of one provider read on one date (`as_of`, the date its source read the
price): USD per device-hour on demand and, where published, with a 1-year or 3-year commitment
and on spot. `device` is the catalog's hardware name (devices.csv `hardware`), so any precision
row of that hardware (e.g. "H100 SXM, BF16 tensor core, dense") finds its prices. Prices move
fast: every output carries `as_of` and its age in days.

A price spec is "provider:plan" (plan: on_demand, 1yr, 3yr, spot; on_demand when left out),
"provider:plan:offering" (one offering's row, as `offering` is written in prices.csv, any case:
what the planner prices each option by, spec_for()), or a number ("2.5"). When a provider has several
rows for a device (and the offering), the newest row that publishes the plan wins (then the
cheapest). An unknown provider is refused as such.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..base.errors import TrainingBudgetError, show
from ..hardware.catalog import DeviceTable, catalog

PLANS = ("on_demand", "1yr", "3yr", "spot")
PLAN_ALIASES = {"ondemand": "on_demand", "on-demand": "on_demand", "od": "on_demand", "1y": "1yr",
            "3y": "3yr", "1-year": "1yr", "3-year": "3yr", "reserved_1yr": "1yr", "reserved_3yr": "3yr"}


@dataclass(frozen=True)
class Price:
    """One provider offering of one device, as read on `as_of` (ISO date)."""

    provider: str
    offering: str
    device: str
    devices_per_instance: int
    usd: dict[str, float]   # plan -> USD per device-hour, only the plans published
    region: str
    source: str
    as_of: str
    note: str

    def age_days(self, today: dt.date | None = None) -> int:
        """Days from `as_of` to `today` (default: today's date)."""
        return ((today or dt.date.today()) - dt.date.fromisoformat(self.as_of)).days

    def row(self, today: dt.date | None = None) -> dict[str, Any]:
        """Plain row for tables: every plan column (None where not published) and the age."""
        return {"provider": self.provider, "offering": self.offering, "device": self.device,
                "devices_per_instance": self.devices_per_instance,
                **{f"usd_per_device_hour_{p}": self.usd.get(p) for p in PLANS},
                "region": self.region, "as_of": self.as_of, "age_days": self.age_days(today),
                "source": self.source, "note": self.note}


def _price(r: dict[str, str], line: int) -> Price:
    usd = {p: float(v) for p in PLANS if (v := r[f"usd_per_device_hour_{p}"].strip())}
    if not r["source"].strip() or not r["as_of"].strip() or "on_demand" not in usd:
        raise TrainingBudgetError(f"prices.csv line {line}: source, as_of and the on-demand price are required")
    dt.date.fromisoformat(r["as_of"])
    if ":" in r["offering"]:
        raise TrainingBudgetError(f"prices.csv line {line}: an offering may not contain ':' (a spec's separator)")
    return Price(r["provider"].strip().lower(), r["offering"], r["device"], int(r["devices_per_instance"]), usd,
                 r["region"], r["source"], r["as_of"], r["note"])


@functools.lru_cache(maxsize=1)
def load_prices() -> tuple[Price, ...]:
    """The packaged prices, in file order."""
    text = resources.files(__name__.rsplit(".", 2)[0]).joinpath("data/prices.csv").read_text("utf-8")
    return tuple(_price(r, i) for i, r in enumerate(csv.DictReader(text.splitlines()), start=2))


def plan_name(plan: str) -> str:
    """The canonical plan name (on_demand, 1yr, 3yr, spot) for `plan` or an alias."""
    p = plan.strip().lower().replace(" ", "_")
    p = PLAN_ALIASES.get(p, p)
    if p not in PLANS:
        raise TrainingBudgetError(f"plan must be one of {', '.join(PLANS)} (got {show(plan)})")
    return p


def hardware(device: str, table: DeviceTable | None = None) -> str:
    """The hardware name prices use for a catalog device name (or a hardware name as given)."""
    t = catalog() if table is None else table
    if device in t:
        return t.get(device).hardware or device
    return device


def find(device: str | None = None, provider: str | None = None, plan: str | None = None,
         table: DeviceTable | None = None) -> list[Price]:
    """Price rows for `device` (catalog or hardware name), `provider`, and publishing `plan`."""
    hw = None if device is None else hardware(device, table).lower()
    prov = None if provider is None else provider.strip().lower()
    p = None if plan is None else plan_name(plan)
    return [r for r in load_prices() if (hw is None or r.device.lower() == hw)
            and (prov is None or r.provider == prov) and (p is None or p in r.usd)]


@functools.lru_cache(maxsize=1)
def providers() -> tuple[str, ...]:
    """The providers of the packaged prices, sorted."""
    return tuple(sorted({r.provider for r in load_prices()}))


def _parts(text: str) -> tuple[str, str, str]:
    """"provider:plan:offering" -> its three parts (provider lower case; blanks where left out)."""
    provider, _, rest = text.strip().partition(":")
    plan, _, offering = rest.partition(":")
    return provider.strip().lower(), plan.strip(), offering.strip()


def parse_spec(spec: str) -> tuple[str, str] | float:
    """"provider:plan" -> (provider, plan); "provider" -> (provider, "on_demand"); "2.5" -> 2.5;
    "provider:plan:offering" -> (provider, plan) (offering() reads the offering)."""
    text = spec.strip()
    try:
        return float(text)
    except ValueError:
        pass
    provider, plan, _ = _parts(text)
    if not provider:
        raise TrainingBudgetError(f"price must be a number or PROVIDER:PLAN (got {show(spec)})")
    if provider not in providers():
        shown = provider if len(provider) <= 40 else provider[:39] + "…"
        raise TrainingBudgetError(f"price: no {shown} prices, unknown provider (got {show(spec)}; "
                                  f"providers: {', '.join(providers())})")
    return provider, plan_name(plan or "on_demand")


def offering(spec: str) -> str:
    """The offering a "provider:plan:offering" spec names ("" where it names none)."""
    return _parts(spec)[2]


def _what_there_is(provider: str, named: str, device: str, table: DeviceTable | None) -> str:
    """lookup's refusal, continued: the plans `provider` publishes for the device (of the offering
    named), or the hardware the named offering prices. Kept free of ')' (the workbook's copy of the
    refusal ends at the parenthesis)."""
    own = [r for r in find(device, provider, table=table) if not named or r.offering.lower() == named]
    if own:
        hint = f"; {provider} publishes {', '.join(p for p in PLANS if any(p in r.usd for r in own))} for it"
    elif other := sorted({r.device for r in load_prices() if named and r.provider == provider
                          and r.offering.lower() == named}):
        hint = f"; that {provider} offering prices {' and '.join(other)}"
    else:
        offerings = sorted({r.offering for r in find(device, provider, table=table)})
        hint = f"; {provider}'s offerings for it: {', '.join(offerings)}" if named and offerings else ""
    return "" if ")" in hint else hint


def spec_words(spec: str) -> str:
    """A provider spec in lookup's refusal words: "aws spot", "lambda on_demand '8x H100 SXM'"."""
    provider, plan = parse_spec(spec)  # type: ignore[misc]  (a number is never looked up)
    named = offering(spec)
    return f"{provider} {plan}" + (f" {named!r}" if named else "")


def spec_for(row: Price, plan: str) -> str:
    """The spec that prices by exactly `row` at `plan`: "provider:plan:offering"."""
    return f"{row.provider}:{plan_name(plan)}:{row.offering}"


def check_text(name: str, spec: str) -> str:
    """A price given as text must be PROVIDER:PLAN; a number written as text ('7e9') is refused,
    so a typed figure is never silently read as a price (pass the number itself)."""
    if isinstance(parse_spec(spec), float):
        raise TrainingBudgetError(f"{name} must be a number or PROVIDER:PLAN text such as 'aws:on_demand' "
                                  f"(got the text {show(spec)}: pass it as a number)")
    return spec


def lookup(spec: str, device: str, table: DeviceTable | None = None) -> tuple[Price, str]:
    """The price row and plan a "provider:plan[:offering]" spec picks for `device`: newest, then cheapest
    (of the offering's rows, where one is named)."""
    parsed = parse_spec(spec)
    if isinstance(parsed, float):
        raise TrainingBudgetError(f"price {show(spec)} is a number, not a provider:plan")
    provider, plan = parsed
    named = offering(spec).lower()
    rows = [r for r in find(device, provider, plan, table) if not named or r.offering.lower() == named]
    if not rows:
        known = sorted({r.provider for r in find(device, table=table)})
        raise TrainingBudgetError(f"price: no {spec_words(spec)} price for {show(device)} "
                                  f"(providers with prices for it: {', '.join(known) or 'none'}"
                                  f"{_what_there_is(provider, named, device, table)})")
    best = max(rows, key=lambda r: (r.as_of, -r.usd[plan]))
    return best, plan


def usd_per_device_hour(spec: Any, device: Any, table: DeviceTable | None = None) -> float:
    """USD per device-hour for a spec: a number, "2.5", or "provider:plan" looked up for `device`."""
    if not isinstance(spec, str):
        return float(spec)
    parsed = parse_spec(spec)
    if isinstance(parsed, float):
        return parsed
    if not isinstance(device, str):
        raise TrainingBudgetError(f"price {show(spec)} needs a device name, not {show(device)}")
    row, plan = lookup(spec, device, table)
    return row.usd[plan]


def price_rows(device: str | None = None, today: dt.date | None = None,
               table: DeviceTable | None = None) -> list[dict[str, Any]]:
    """Rows for the `prices` command: every price (or those of `device`) with its age in days."""
    if today is not None and not isinstance(today, dt.date):
        raise TrainingBudgetError(f"today must be a date (got {show(today)})", "today")
    return [r.row(today) for r in find(device, table=table)]
