"""The Budget's block after the results: a provider/plan price from the Prices table, the currency
(Currency, USD_rate, Rate_date), the utilization prior as named cells (Util_low, Util_expected,
Util_high, Goodput) and low / expected / high hours, device-hours, cost and energy.

Ranges follow calc.train_range: hours at 100% on the device's 16-bit row (calc.prior_device:
the prior's utilizations are shares of BF16/FP16 peaks) divided by utilization x goodput; low hours
come from the HIGH utilization. Ranges_from picks whose utilization and goodput: the step model's
(the default: the step block's whole run, as calc.budget at utilization "step" gives it; its utilization
is the one whose hours are the step block's, hours at 100% / (whole-run hours x its goodput)) or the
published runs' (the job's own prior, calc.budget at utilization "prior"). Cached values come from
calc.budget (`ranged`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ...calc import PRIOR_CAVEATS
from ..functions import input_pieces, pieces, price_pieces, prior_native
from ..functions.registry import BY_NAME
from . import prices_sheet, prior_tables, range_basis, styles
from .cached_cells import CachedCells, note_cell, style, text
from .sheet_job import (
    budget,
    device_row as _device_row,
    input_cell as _input,
    job as job,  # the sheet's inputs as a calc.Job (read by name beside budget)
    list_cell as _list,
    name_cell as _name,
)

CURRENCY_FORMAT = '#,##0'   # money in the chosen currency: the label names it
SIXTEEN_BIT = calc.SIXTEEN_BIT


def field(device: str, name: str) -> str:
    """A text field (Hardware, Kind, Precision) of the Devices row named `device`."""
    return pieces.field(device, name)


def prior_row(hardware: str, kind: str) -> str:
    """Position in Devices of the first 16-bit row of `hardware` and `kind` (>= 1E9: none)."""
    return pieces.prior_row(hardware, kind, SIXTEEN_BIT)


def prior_name(device: str, kind: str, precision: str, row: str) -> str:
    """The device row the prior applies to (calc.prior_device)."""
    return pieces.prior_name(device, kind, precision, row, SIXTEEN_BIT)


def price(v: dict[str, Any], table: calc.DeviceTable) -> tuple[float | None, str]:
    """The sheet's one price rule (pieces.price_used) as calc.budget applies it: USD per
    device-hour or None, and whose price it is in the sheet's words."""
    usd = budget(v, table).usd_per_device_hour
    if v.get("provider"):
        plan = v.get("plan") or "on_demand"
        named = f":{v['offering']}" if v.get("offering") else ""
        return (None, f"no {v['provider']} price for it") if usd is None else (
            float(usd), f"{v['provider']}:{plan}{named} price")
    if isinstance(v.get("usd_per_device_hour"), (int, float)):
        return float(usd), pieces.TYPED
    return (None, pieces.NO_PRICE) if usd is None else (float(usd), pieces.ROW_PRICE)


def money(value: Any, usd_rate: float = 1.0) -> Any:
    """A cost from calc (USD, None without a price) as the sheet's cached value."""
    return pieces.NO_PRICE if value is None else float(value) * usd_rate


def write(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable, v: dict[str, Any], last: int) -> int:
    """The block from row last + 2; returns its last row."""
    r = last + 2
    r = _price_and_currency(ws, cached, table, v, r)
    r = _prior(ws, cached, r + 1, v, table)
    return _ranges(ws, cached, table, v, r + 1)


PRICE_ROWS = ("Provider", "Plan", "Offering", "Price_spec", "Hardware", "Plan_col", "Price_date")  # the block's first


def _price_and_currency(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable, v: dict[str, Any],
                        r: int) -> int:
    """Provider and plan (blank provider: the typed price), the price used, and the currency."""
    text(ws, f"A{r}", "Price and currency", styles.HEADING)
    providers = sorted({p.provider for p in calc.load_prices()})
    d = _device_row(v["device"], table)
    own = table.get(v["device"]).usd_per_device_hour
    usd, source = price(v, table)
    # the cheapest row's lookup, the sheet's longest formula, reads its plan column and date by cell (the
    # two rows above it), so that it stays short (test_scenarios' readability limit)
    at = {name: f"B{r + 1 + i}" for i, name in enumerate(PRICE_ROWS)}
    rows: list[tuple[str, str, str, Any, Any, str | None, str]] = [
        # (name, label, kind: input|formula, formula or default, cached value, format, note)
        ("Provider", "Price from provider", "input", "", None, None,
         "blank: the typed price above; else a provider of the Prices sheet"),
        ("Plan", "Plan", "input", "on_demand", None, None, " | ".join(prices_sheet.PLANS)),
        ("Offering", "Offering", "input", "", None, None,
         "blank: any; else an Offering of the Prices sheet (any case)"),
        ("Price_spec", "Price spec (as --price on the command line)", "formula",
         price_pieces.joined_spec("Provider", "Plan", "Offering"), "", None, "blank: no provider"),
        ("Hardware", "Device hardware", "formula", field("Device", "hardware"), d.hardware, None,
         "prices are per hardware (Devices sheet, Hardware column)"),
        ("Plan_col", "Plan column in Prices", "formula", prices_sheet.plan_column("Plan"), 1, "0", ""),
        ("Price_date", "Newest price of the provider (as of)", "formula",
         price_pieces.provider_date("Provider", "Hardware", "Plan_col", "Offering"), 0,
         '[=0]"none";yyyy-mm-dd', "none: no price of that provider and plan for this hardware"),
        ("Price_found", "Provider's price (USD per device-hour)", "formula",
         price_pieces.provider_price("Provider", "Hardware", at["Plan_col"], at["Price_date"], "Offering"), "",
         styles.USD_RATE,
         "the cheapest row of that date"),
        ("Row_price", "The device row's price (USD per device-hour)", "formula", pieces.row_price("Device"),
         "" if own is None else own, styles.USD_RATE, "blank: the Devices sheet has none for it"),
        ("Price_used", "Price used (USD per device-hour)", "formula",
         pieces.price_used("Provider", "Price_found", "Price_per_hour", "Row_price"),
         pieces.NO_PRICE if usd is None else usd, styles.USD_RATE,
         "the provider's price; else the typed price above; else the device row's"),
        ("Price_source", "Price from", "formula",
         pieces.price_source("Provider", "Price_spec", "Price_found", "Price_per_hour", "Row_price"), source, None,
         "whose price every cost on this sheet uses"),
        ("Currency", "Currency (code)", "input", "USD", None, None, "every money figure is shown in it"),
        ("USD_rate", "Currency units per USD", "input", 1.0, None, "0.0000", "1 for USD"),
        ("Rate_date", "Date of the rate and prices", "input", prices_sheet.budget_date(), None, "yyyy-mm-dd",
         "the Prices sheet counts each price's age to this date"),
    ]
    assert tuple(row[0] for row in rows[:len(PRICE_ROWS)]) == PRICE_ROWS
    for i, (name, label, kind, body, value, fmt, note) in enumerate(rows, start=r + 1):
        text(ws, f"A{i}", label)
        if kind == "input":
            _input(ws, f"B{i}", dt.datetime.combine(body, dt.time()) if isinstance(body, dt.date) else body, fmt)
        else:
            cached.formula(ws, f"B{i}", body, value, fmt)
        note_cell(ws, f"C{i}", note)
        _name(ws, name, f"B{i}")
    _list(ws, f"B{r + 1}", providers)
    _list(ws, f"B{r + 2}", prices_sheet.PLANS)
    return r + len(rows)


def _prior(ws: Worksheet, cached: CachedCells, r: int, v: dict[str, Any], table: calc.DeviceTable) -> int:
    """The job's own prior (calc.job_prior, as calc.budget's ranges use it): the sourced
    coefficients as named constant cells, then Util_expected / Util_low / Util_high as native
    formulas of the Budget's inputs (prior_native's pieces), its basis in one line, and Goodput."""
    p = budget(v, table, utilization="prior").prior
    c = calc.prior_coefficients()
    fam = calc.device_families(v["device"], table)
    hardware = table.get(v["device"]).hardware or v["device"]
    long, pos = prior_native.positions(hardware)
    p_moe = v.get("active_params") is not None and v["active_params"] < v["params"]
    text(ws, f"A{r}", "Utilization from published runs (this job's own prior)", styles.HEADING)
    rows: list[tuple[str, str, str, Any, str | None, str]] = [  # (name, label, formula, cached value, format, note)
        ("Prior_hardware", "Hardware the prior reads", prior_native.hardware_or_name("Hardware", "Device"),
         hardware, None, "its family by calc.FAMILIES' name prefixes"),
        ("Prior_pos_long", "Its longest family prefix (position; 0: none)",
         prior_native.prefix_position_long("Prior_hardware"), long, "0", ""),
        ("Prior_pos", "Its family prefix (position below; 0: none)",
         prior_native.prefix_position("Prior_hardware", "Prior_pos_long"), pos, "0",
         "the longest prefix of the table below it starts with"),
        ("Prior_family", "Device family", prior_native.family_label("Prior_pos", "Device"),
         prior_native.prefix_rows()[pos - 1][2] if pos else f"Published (family of {v['device']} unknown)", None,
         "no family: the runs' mean, a wider band"),
        ("Prior_is_moe", "Mixture of experts (1: yes)",
         pieces.moe_flag("Active_used", "Params"), int(p_moe), "0",
         "1: fewer active than total parameters (the prior's MoE term)"),
        ("Prior_effect", "Family effect (log utilization vs Ampere)", prior_native.family_effect("Prior_pos"),
         c.effect(fam), "0.0000", "the table below"),
        ("Util_expected", "Utilization, expected",
         prior_native.expected("Prior_effect", "Active_used", "Devices_count", "Tokens", "Prior_is_moe"), p.expected,
         "0.0%", "the job's active parameters, MoE or not, devices and tokens per active parameter"),
        ("Util_low", "Utilization, low (the band's slow edge)",
         prior_native.edge("Util_expected", "Prior_pos", "low"), p.low, "0.0%", "the slow case: most hours"),
        ("Util_high", "Utilization, high (the band's fast edge)",
         prior_native.edge("Util_expected", "Prior_pos", "high"), p.high, "0.0%", "the fast case: fewest hours"),
        *_basis_rows(p, PRIOR_CAVEATS.get(calc.flops_per_param_token(v["method"]), "")),
    ]
    for i, (name, label, formula, value, fmt, note) in enumerate(rows, start=r + 1):
        text(ws, f"A{i}", label)
        cell = cached.formula(ws, f"B{i}", formula, value, fmt)
        note_cell(ws, f"C{i}", note)
        _name(ws, name, f"B{i}")
        if name == "Prior_basis":  # one long line: over B and C, wrapped, the row as tall as it needs
            prior_tables.wrap_over_b_c(ws, i, value)
        elif name.startswith(("Prior_basis_", "Prior_out_", "Prior_beyond", "Prior_caveat")):
            cell.alignment = styles.SHRINK
    g = r + len(rows) + 1
    text(ws, f"A{g}", "Goodput (effective training time)")
    style(ws[f"B{g}"], "0.0%").value = p.goodput
    note_cell(ws, f"C{g}", calc.GOODPUT_BASIS)
    _name(ws, "Goodput", f"B{g}")
    text(ws, f"A{g + 1}", "The prior's coefficients, spans and tables: below the architecture (How the prior "
                          "is made), not printed.", styles.NOTE)
    return g + 1


# The Budget's helper rows for the job's FLOPs (budget_sheet.HELPERS): the method's factor and the
# product, read by name by the hours of every block of the Budget (ranges, deadline, every device).
FLOPS_HELPERS = {"_flops_per_param_token": "FLOPs_per_token", "_job_flops": "Job_FLOPs"}
def _basis_rows(p: calc.UtilizationPrior, caveat: str) -> list[tuple[str, str, str, Any, str | None, str]]:
    """The basis line's rows (prior_native's pieces, each cell short) with calc's text as cached values;
    `caveat` the job's method's words on the prior (calc.PRIOR_CAVEATS; "" for full training)."""
    tail = prior_native.TAIL.format(n=p.n_runs)
    head = p.basis[:-len(": " + tail)]
    note = head[head.index(" (extrapolated:"):] if " (extrapolated:" in head else ""
    runs, scale = head[:len(head) - len(note)].rsplit(" on ", 1)
    args = ("Active_used", "Devices_count", "Tokens")
    rows = [("Prior_basis_runs", "Basis: the runs like this job",
             prior_native.basis_runs("Prior_family", "Active_used", "Prior_is_moe"), runs, None,
             "family, dense or MoE, the active parameters' decade"),
            ("Prior_basis_scale", "Basis: devices and tokens per parameter", prior_native.basis_scale(*args),
             " on " + scale, None, "their decades (the table below)")]
    outs, spans = [], note[len(" (extrapolated: the runs span "):-1].split(", ")
    for key, _ in prior_native.SPAN_KEYS:
        name = f"Prior_out_{key.split('/')[0]}"
        outs.append(name)
        words = prior_native.outside_words(key)
        rows.append((name, f"Basis: {key} outside the runs' span", prior_native.outside(key, *args),
                     ", " + words if words in spans else "", None, "the runs' span where the job lies outside it"))
    rows += [("Prior_beyond", "Basis: the extrapolation note", prior_native.beyond(outs), note, None,
              "blank: the job lies within the runs"),
             ("Prior_caveat", "Basis: the method's note", pieces.prior_caveat("FLOPs_per_token", PRIOR_CAVEATS),
              caveat, None, "blank: a full training step, as the runs"),
             ("Prior_basis", "Basis: which runs the prior describes",
              prior_native.basis("Prior_basis_runs", "Prior_basis_scale", "Prior_beyond", "Prior_caveat"),
              p.basis + caveat, None, "")]
    return rows


def _ranges(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable, v: dict[str, Any], r: int) -> int:
    """Low / expected / high hours, device-hours, cost and energy (columns B, C, D of the header)."""
    d = _device_row(v["device"], table)
    chosen = range_basis.ranged(v, table)
    text(ws, f"A{r}", "Ranges (published runs' utilization or the step model's)", styles.HEADING)
    helpers = (
        ("Kind_of_device", "Device kind", field("Device", "kind"), table.get(v["device"]).kind, None),
        ("Precision_of_device", "Device precision", field("Device", "precision"), table.get(v["device"]).precision,
         None),
        ("Prior_row", "Devices row number of its BF16/FP16 rate", prior_row("Hardware", "Kind_of_device"),
         position(d, table), "0"),
        ("Prior_device", "Device row the ranges use", prior_name("Device", "Kind_of_device", "Precision_of_device",
                                                                  "Prior_row"), d.name, None),
        ("Hours_at_100", "Hours at 100% on that row", BY_NAME["TRAIN_HOURS"].native_formula(
            {"params": "Params", "tokens": "Tokens", "device": "Prior_device", "utilization": "1",
             "devices": "Devices_count", "active_params": "Active_used"}, blank_means_default=False,
            helpers=FLOPS_HELPERS),
         float(budget(v, table, device=d.name, utilization=1.0).hours), styles.HOURS),
    )  # the ranges' cost is at Price_used: the chosen row's price, not its 16-bit row's (as calc.budget)
    for i, (name, label, formula, value, fmt) in enumerate(helpers, start=r + 1):
        text(ws, f"A{i}", label)
        cached.formula(ws, f"B{i}", formula, value, fmt)
        _name(ws, name, f"B{i}")
    return _range_rows(ws, cached, chosen, range_basis.write(ws, cached, chosen, v, r + len(helpers) + 1) + 1)


def position(d: calc.Device, table: calc.DeviceTable) -> float:
    """calc's answer to prior_row: the first 16-bit row of d's hardware and kind (1-based), else 1E9."""
    same = [i for i, row in enumerate(table, start=1) if row.hardware == d.hardware and row.kind == d.kind
            and row.precision in SIXTEEN_BIT]
    return same[0] if same else 1e9


COST_TO_BUDGET = "Cost to budget (expected)"  # the one cost to budget: Budget, Summary and the CLI say it so
RANGE_NAMES = {"hours": "Hours", "device_hours": "Fleet_hours", "usd": "Cost", "kwh": "Energy"}


def cost_label(case: str) -> str:
    """The range's cost rows: the expected one is the cost to budget, named so wherever it shows."""
    return COST_TO_BUDGET if case == "expected" else f"Cost, {case}"


def range_name(key: str, case: str) -> str:
    """The defined name of a range row: Cost_expected, Hours_low, Fleet_hours_high (device-hours, as the
    deadline's Fleet_hours_at_100; no name starts with a function's prefix such as DEVICE_), Energy_expected."""
    return f"{RANGE_NAMES[key]}_{case}"


def _range_rows(ws: Worksheet, cached: CachedCells, b: calc.Budget, first: int) -> int:
    """Three rows (low, expected, high) for each of hours, device-hours, cost and energy."""
    utilization = {"low": "Range_u_high", "expected": "Range_u_expected", "high": "Range_u_low"}  # low hours: high u
    figures = (("hours", "Hours", styles.HOURS), ("device_hours", "Device-hours", styles.DEVICE_HOURS),
               ("usd", "Cost", CURRENCY_FORMAT), ("kwh", "Energy", styles.KWH))
    rows = {}
    for k, (key, label, fmt) in enumerate(figures):
        for j, case in enumerate(calc.RANGE_LABELS):
            i = first + 3 * k + j
            rows[key, case] = i
            dh = f"B{rows.get(('device_hours', case))}"
            formula = {"hours": pieces.at_utilization("Hours_at_100", pieces.times(utilization[case], "Range_goodput")),
                       "device_hours": pieces.times(f"B{rows.get(('hours', case))}", "Devices_count"),
                       "usd": pieces.money(pieces.cost(dh, "Price_used")),
                       "kwh": pieces.with_watts("Board_watts", pieces.energy_kwh("Board_watts", dh, "PUE_ratio"))}[key]
            span = {"hours": b.hours, "device_hours": b.device_hours, "usd": b.cost_usd, "kwh": b.energy_kwh}[key]
            value = money(None if span is None else span.as_tuple()[j]) if key == "usd" else (
                pieces.NO_WATTS if span is None else float(span.as_tuple()[j]))
            if key == "usd":
                words = cost_label(case)
                cached.formula(ws, f"A{i}", pieces.with_currency(words), f"{words} (USD)", font=styles.BOLD, fill=None)
            else:
                text(ws, f"A{i}", f"{label}, {case}", styles.BOLD)
            cell = cached.formula(ws, f"B{i}", input_pieces.unless_error(formula), value, fmt, styles.BOLD)
            cell.border = styles.BOX
            _name(ws, range_name(key, case), f"B{i}")  # the Summary sheet reads them by name
    return first + 3 * len(figures) - 1
