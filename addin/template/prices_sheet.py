"""The Prices sheet: the `Prices` table of cloud prices per device-hour (calc/data/prices.csv),
sourced and dated like Devices, editable, with each price's age in days at the Budget's date.

Lookups (Budget and Scenarios) go through defined names over the table's columns, so a row the
user adds or edits is found: the newest row of the provider and device hardware (and offering,
where the spec names one, any case) that publishes the plan, then the cheapest, as
calc.lookup_price picks (functions/price_pieces.py).
"""

from __future__ import annotations

import datetime as dt

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import pieces, price_pieces
from . import styles
from .cached_cells import CachedCells, fit_rows, landscape_fit_width, style, text, widths

TABLE = "Prices"
PLAN_HEADERS = {"on_demand": "On-demand USD per device-hour", "1yr": "1-year USD per device-hour",
                "3yr": "3-year USD per device-hour", "spot": "Spot USD per device-hour"}
# (header, width, number format)
COLUMNS = (("Provider", 13, None), ("Offering", 18, None), ("Device (hardware)", 16, None),
           ("Devices per instance", 10, "0"),
           *((h, 12, styles.USD_RATE) for h in PLAN_HEADERS.values()),
           ("Region", 16, None), ("Source", 48, None), ("As of", 11, "yyyy-mm-dd"),
           ("Age (days, at the Budget's date)", 11, "0"), ("Note", 36, None))
AS_OF_COL, AGE_COL = "K", "L"
PLANS = tuple(PLAN_HEADERS)  # the plan list, in the order of the price columns
# Defined names over the table's columns (short formulas; rows added to the table are included).
NAMES = {"Price_provider": f"{TABLE}[Provider]", "Price_offering": f"{TABLE}[Offering]",
         "Price_device": f"{TABLE}[Device (hardware)]",
         "Price_as_of": f"{TABLE}[As of]",
         "Price_plans": f"{TABLE}[[{PLAN_HEADERS['on_demand']}]:[{PLAN_HEADERS['spot']}]]"}
FIRST_ROW = 4  # the table's header row
# The plan names calc reads (calc.PRICE_PLANS, then calc.plan_name's aliases: "od", "1y", ...)
# with each one's price column, beside the table (columns O and P): Plan_names, Plan_columns.
PLAN_NAMES = (*((p, i + 1) for i, p in enumerate(PLANS)),
              *((alias, PLANS.index(plan) + 1) for alias, plan in calc.PLAN_ALIASES.items()))
PLAN_NAMES_COL = "O"


def budget_date() -> dt.date:
    """The default date of the Budget's prices and exchange rate: the newest price's as_of."""
    return max(dt.date.fromisoformat(p.as_of) for p in calc.load_prices())


def row_values(p: calc.Price) -> tuple:
    """A price as the table's first eleven cells (the age is a formula)."""
    return (p.provider, p.offering, p.device, p.devices_per_instance,
            *(p.usd.get(plan) for plan in PLANS), p.region, p.source, dt.date.fromisoformat(p.as_of))


def write(ws: Worksheet, cached: CachedCells) -> None:
    """The Prices table filled from prices.csv, its age column a native formula over Rate_date."""
    text(ws, "A1", "Cloud prices per device-hour", styles.TITLE)
    text(ws, "A2", "USD per device-hour of one device (instance price / devices per instance), read on the "
                   "'As of' date from the source named. Edit or add rows: the Budget and Scenarios sheets "
                   "look prices up here by provider, device hardware (the Devices sheet's Hardware), plan and "
                   "offering (where one is named, any case); where a provider has several rows, the newest "
                   "that publishes the plan wins, then the "
                   "cheapest. Age counts to the Budget's date (Rate_date), shown here.", styles.NOTE)
    text(ws, "A3", "Ages counted to", styles.BOLD)
    serial = (budget_date() - dt.date(1899, 12, 30)).days  # the cached value: Excel's day serial (1900 system)
    cached.formula(ws, "B3", pieces.blank_if("Rate_date", "Rate_date"), serial, "yyyy-mm-dd", styles.BOLD, fill=None)
    for col, (header, width, _) in enumerate(COLUMNS, start=1):
        cell = style(ws.cell(FIRST_ROW, col, header), font=styles.BOLD)
        cell.alignment = styles.WRAP
        ws.column_dimensions[cell.column_letter].width = width
    rows = calc.load_prices()
    when = budget_date()
    for r, p in enumerate(rows, start=FIRST_ROW + 1):
        for col, value in enumerate(row_values(p), start=1):
            cell = ws.cell(r, col, value)
            if isinstance(value, str):
                cell.data_type = "s"
            style(cell, COLUMNS[col - 1][2]).alignment = styles.WRAP
        cached.formula(ws, f"{AGE_COL}{r}", pieces.age_days("Rate_date", f"{AS_OF_COL}{r}"),
                       (when - dt.date.fromisoformat(p.as_of)).days, "0", fill=None).alignment = styles.WRAP
        text(ws, f"M{r}", p.note).alignment = styles.WRAP
    last = FIRST_ROW + len(rows)
    _plan_names(ws)
    from .sheets import _table  # the Devices table's style
    _table(ws, TABLE, f"A{FIRST_ROW}:M{last}")
    widths(ws, A=13)
    ws.freeze_panes = f"B{FIRST_ROW + 1}"
    ws.print_title_rows = f"{FIRST_ROW}:{FIRST_ROW}"
    ws.merge_cells("A2:M2")
    ws["A2"].alignment = styles.WRAP
    fit_rows(ws)
    ws.row_dimensions[2].height = 30
    landscape_fit_width(ws)


def _plan_names(ws: Worksheet) -> None:
    """The plan names a price spec may use and the price column each reads (calc.plan_name)."""
    text(ws, f"{PLAN_NAMES_COL}{FIRST_ROW - 1}", "Plan names (calc.money.prices: plans, then aliases)", styles.BOLD)
    for col, header in ((PLAN_NAMES_COL, "Plan name"), ("P", "Price column (1 on-demand ... 4 spot)")):
        style(ws[f"{col}{FIRST_ROW}"], font=styles.BOLD).value = header
        ws[f"{col}{FIRST_ROW}"].alignment = styles.WRAP
    for r, (name, column) in enumerate(PLAN_NAMES, start=FIRST_ROW + 1):
        text(ws, f"{PLAN_NAMES_COL}{r}", name)
        ws[f"P{r}"] = column
    widths(ws, **{PLAN_NAMES_COL: 16, "P": 12})


def add_names(wb: Workbook) -> None:
    """The column names the price lookups use, and the plan names' two columns."""
    for name, ref in NAMES.items():
        wb.defined_names[name] = DefinedName(name, attr_text=ref)
    last = FIRST_ROW + len(PLAN_NAMES)
    for name, col in (("Plan_names", PLAN_NAMES_COL), ("Plan_columns", "P")):
        wb.defined_names[name] = DefinedName(name, attr_text=f"'Prices'!${col}${FIRST_ROW + 1}:${col}${last}")


def plan_column(plan: str) -> str:
    """The plan's position among the price columns (1 on-demand ... 4 spot)."""
    return pieces.plan_column(plan)


def newest(provider: str, hardware: str, column: str, offering: str) -> str:
    """As-of date of the newest row of `provider`, `hardware` and `offering` publishing the plan (0: none)."""
    return price_pieces.newest(provider, hardware, column, offering)


def cheapest(provider: str, hardware: str, column: str, date: str, offering: str) -> str:
    """The cheapest plan price among the rows of `provider`, `hardware` and `offering` as of `date`."""
    return price_pieces.cheapest(provider, hardware, column, date, offering)
