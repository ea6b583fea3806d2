"""Owned hardware: USD per delivered device-hour, usable wherever a price is.

    usd/device-hour = capex_usd · (1 − residual) / (life_years · 8760 · occupancy)   depreciation
                    + hosting_usd_per_year / (8760 · occupancy)                       space, staff
                    + watts / 1000 · pue · usd_per_kwh                                 energy

Straight-line depreciation over `life_years` (the accounting convention for servers), spread over
the hours the device actually works (8,760 hours a year × `occupancy`); energy is charged for
working hours at board power times the data centre's PUE (idle draw is not counted). Units:
capex_usd USD per device (its share of the server included where known), residual a fraction of
capex recovered at the end, watts W per device, usd_per_kwh USD per kWh, result USD per device-hour.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.checks import at_least, fraction, non_negative, positive
from ..base.errors import TrainingBudgetError, broadcasts, out, show

HOURS_PER_YEAR = 8760.0  # 365 × 24

# Useful-life presets (years) with their sources: hyperscalers' published server useful lives.
LIFE_YEARS_PRESETS: dict[int, str] = {
    3: "Amazon's servers before 2020 (3 years; lengthened to 4 in 2020); a GPU generation is about 2-3 years",
    5: "Amazon shortened part of its server fleet from 6 to 5 years in Feb 2025 (Amazon 10-K for 2024)",
    6: "Microsoft and Alphabet servers and network equipment: 6 years (10-K filings for FY2022/2023)",
}
LIFE_YEARS_SOURCE = ("company filings as reported in https://nate-clark.io/2026/01/03/lets-depreciate-gpus "
                     "(Meta moved to 5.5 years in 2025)")

# Uptime Institute Global Data Center Survey: industry-average PUE 1.58 in 2023
# (https://intelligence.uptimeinstitute.com/resource/large-data-centers-are-mostly-more-efficient-analysis-confirms).
PUE_INDUSTRY = 1.58

# Purchase prices per GPU, Epoch AI hardware prices dataset (https://epoch.ai/data, prices.csv):
# (USD, date, Epoch's cited source).
PURCHASE_USD: dict[str, tuple[float, str, str]] = {
    "H100 SXM": (33_819.0, "2024-03-27", "https://archive.ph/D6Dub"),
    "H200 SXM": (39_083.0, "2025-01-31", "https://archive.ph/TxlLv"),
    "B200": (47_409.0, "2024-12-17", "Epoch AI hardware prices (DGX, EUR converted to USD)"),
    "MI300X": (25_734.0, "2025-02-10", "Epoch AI hardware prices (8-OAM platform, per GPU)"),
}


@broadcasts
def owned_usd_per_device_hour(capex_usd: Any, *, life_years: Any = 5, residual: Any = 0.0, watts: Any,
                              usd_per_kwh: Any, pue: Any = PUE_INDUSTRY, occupancy: Any = 1.0,
                              hosting_usd_per_year: Any = 0.0) -> Any:
    """USD per delivered device-hour of an owned device (formula and units in the module docstring).

    `life_years`: 3, 5 or 6 are the sourced presets (LIFE_YEARS_PRESETS), any positive number works.
    `occupancy` in (0, 1]: share of the year's hours the device trains (1.0: every hour, the best case).
    Broadcasts like numpy; scalars give a float.
    """
    capex = non_negative("capex_usd", capex_usd)
    life = positive("life_years", life_years)
    res = non_negative("residual", residual)
    if np.any(np.asarray(res) > 1):
        raise TrainingBudgetError(f"residual must be a fraction of capex in [0, 1] (got {show(residual)})")
    occ = fraction("occupancy", occupancy)
    p = at_least("pue", pue, 1.0)
    hours = HOURS_PER_YEAR * occ
    capital = capex * (1.0 - res) / (life * hours)
    hosting = non_negative("hosting_usd_per_year", hosting_usd_per_year) / hours
    energy = non_negative("watts", watts) / 1000.0 * p * non_negative("usd_per_kwh", usd_per_kwh)
    return out(capital + hosting + energy)


def owned_price(capex_usd: Any, watts: Any, usd_per_kwh: Any, life_years: Any = 5, residual: Any = 0.0,
                pue: Any = PUE_INDUSTRY, occupancy: Any = 1.0) -> Any:
    """`owned_usd_per_device_hour` with positional energy terms (the Excel OWNED_PRICE order)."""
    return owned_usd_per_device_hour(capex_usd, life_years=life_years, residual=residual, watts=watts,
                                     usd_per_kwh=usd_per_kwh, pue=pue, occupancy=occupancy)
