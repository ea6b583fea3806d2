"""A scenario's cells read as the command line reads its options, and the defaults its blank cells take.

A price cell (or --price) is a number of USD per device-hour or a PROVIDER:PLAN text; an own cell
(or --own) is CAPEX,LIFE with the electricity terms (calc.money.owned). ScenarioBlanks holds what
the command line gives every blank cell of a scenarios file (calc.planning.scenarios).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..base.errors import TrainingBudgetError, show
from ..base.units import parse_number, parse_share
from ..compose.budget import Owned
from ..money.owned import PUE_INDUSTRY

__all__ = ["ScenarioBlanks", "parse_own", "parse_price"]


@dataclass(frozen=True)
class ScenarioBlanks:
    """The defaults a scenarios file's blank cells take (the command line's options; None: none given).

    `utilization` a share or "prior" for blank utilization cells (None: a blank one is refused);
    `price` a parsed price (parse_price) for blank price cells; `own` "CAPEX,LIFE" for rows with
    neither price nor own; `usd_per_kwh` (USD per kWh), `occupancy` (0-1) and `pue` (>= 1; a row's
    own pue cell wins) price every owned row; `tariff_name` names the tariff in messages (the
    command line's --usd-per-kwh)."""

    utilization: Any = None
    price: Any = None
    own: str | None = None
    usd_per_kwh: float | None = None
    occupancy: float = 1.0
    pue: float | None = None
    tariff_name: str = "usd_per_kwh"


def parse_own(text: str, usd_per_kwh: float | None, pue: float | None = PUE_INDUSTRY,
              occupancy: float = 1.0, tariff_name: str = "usd_per_kwh") -> Owned:
    """"CAPEX,LIFE" (USD per device, years) with the energy terms; usd_per_kwh is required.
    `tariff_name` is how messages name the tariff (the command line's --usd-per-kwh)."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2 or not all(parts):
        raise TrainingBudgetError(f"own must be CAPEX,LIFE such as 33819,5 (got {show(text)})")
    capex = parse_number("own: CAPEX", parts[0])
    life = parse_number("own: LIFE", parts[1])
    if life <= 0:
        raise TrainingBudgetError(f"own: LIFE must be > 0 years (got {show(text)})")
    if usd_per_kwh is None:
        raise TrainingBudgetError(f"own needs {tariff_name} (the electricity tariff, USD per kWh)")
    kwh_price = parse_number(tariff_name, usd_per_kwh)
    occ = parse_share("occupancy", occupancy)
    p = None if pue is None else parse_number("pue", pue, 1.0)
    return Owned(capex, life, kwh_price, p, occ, tariff_name)


_NUMERIC = re.compile(r"[+-]?[\d.,]*\d[\d.,]*(?:[eE][+-]?\d+)?")


def parse_price(name: str, value: Any) -> Any:
    """A price cell or option: None/blank (the device row's own), a number of USD per device-hour
    (finite, >= 0; "2.5" as text too) or a PROVIDER:PLAN text, kept as text."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return parse_number(name, value)
    text = str(value).strip()
    if _NUMERIC.fullmatch(text):  # digits, thousands separators and a decimal point: a number, "2,5" refused
        return parse_number(name, text)
    try:
        float(text)
    except ValueError:
        if ":" not in text and not text.replace("_", "").replace("-", "").isalnum():
            raise TrainingBudgetError(
                f"{name} must be USD per device-hour or PROVIDER:PLAN (got {show(value)})") from None
        return text
    return parse_number(name, text)
