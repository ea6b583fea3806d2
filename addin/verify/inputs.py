"""verify reads the inputs: every Budget (its step block, deadline and budget too), currency, Scenarios and Prices
input cell checked for type, range and unit, named by cell, with calc's own rules (calc/base/checks.py: the
contract every door keeps).

Positions come from the template's builders, never retyped: the Budget's inputs from
budget_sheet.INPUTS/REF, the step block's by step_block.STEP_INPUTS' and the deadline and budget by
deadline_block.INPUTS' defined names, the
currency inputs from the defined names the builder gives them (Provider, Plan, Currency,
USD_rate, Rate_date), the plans from scenarios.INPUTS/ROW/COLUMNS, the Prices table's columns by
the headers prices_sheet.COLUMNS writes. Values are the cached ones (what the formulas read), so
an input typed as a formula is checked by its result.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from openpyxl.utils import range_boundaries
from openpyxl.utils.cell import get_column_letter

from ... import calc
from ..functions import layout_pieces
from ..template import budget_sheet, deadline_block, prices_sheet, scenarios, step_block
from .problems import Problem

Rule = Callable[[str, Any], Any]  # raises calc.TrainingBudgetError naming the input and the value
CURRENCY_NAMES = ("Provider", "Plan", "Currency", "USD_rate", "Rate_date")
KIND = "input cells hold a value the formulas cannot use"


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise calc.TrainingBudgetError(f"{name} must be a text (got {calc.show_value(value)})")
    return value


def _boolean(name: str, value: Any) -> bool:
    """TRUE or FALSE as Excel holds them (a text "FALSE" reads as an error in IF)."""
    if isinstance(value, bool):
        return value
    raise calc.TrainingBudgetError(f"{name} must be TRUE or FALSE (got {calc.show_value(value)})")


def _date(name: str, value: Any) -> Any:
    if isinstance(value, dt.date) or (type(value) in (int, float) and value > 0):
        return value
    raise calc.TrainingBudgetError(f"{name} must be a date (got {calc.show_value(value)})")


BUDGET: dict[str, Rule] = {
    "params": calc.check_positive, "tokens": calc.check_positive, "device": _text, "utilization": calc.check_fraction,
    "devices": calc.check_whole, "usd_per_device_hour": calc.check_non_negative,
    "pue": lambda n, v: calc.check_at_least(n, v, 1.0),  # PUE >= 1 (The Green Grid, WP #49, 2012)
    "method": lambda n, v: calc.check_choice(n, v, calc.METHODS),
    "optimizer": lambda n, v: calc.check_choice(n, v, calc.OPTIMIZERS),
    "zero_stage": lambda n, v: calc.check_whole_in(n, v, (0, 1, 2, 3)),
    "trainable": calc.check_fraction, "activations": calc.check_non_negative,
}
# the step block's inputs (step_block.STEP_INPUTS, by their defined names): calc.step.Layout's rules
STEP: dict[str, Rule] = {
    "Step_seq_len": calc.check_whole, "Step_batch": calc.check_whole, "Step_micro_batch": calc.check_whole,
    "Step_vpp": calc.check_whole, "Step_cp": calc.check_whole,
    "Step_recompute": lambda n, v: calc.check_choice(n, v, calc.RECOMPUTE),
    "Step_flash": lambda n, v: _boolean(n, v),
}
# step inputs whose blank is calc's default (the step block reads a blank flash attention as TRUE)
BLANK_DEFAULT = ("Step_flash",)
CURRENCY: dict[str, Rule] = {
    "Plan": lambda n, v: calc.check_choice(n, v, prices_sheet.PLANS), "Currency": _text,
    "USD_rate": calc.check_positive, "Rate_date": _date,
}


def _hint(name: str, value: Any) -> str:
    """A word on the usual slip: a share typed as 40 or as the text "40%"."""
    if isinstance(value, str) and value.strip().endswith("%"):
        return f' (the text {value.strip()!r} is not a number: type 40% into the cell as a number, or 0.4)'
    if "tilization" in name and type(value) in (int, float) and 1 < value <= 100:
        shown = calc.show_value(value)
        return f" ({shown} reads as {value * 100:,.0f}%: type {shown}% or {value / 100:g})"
    return ""


def _check(where: str, label: str, rule: Rule, value: Any) -> list[Problem]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return [Problem(where, f"{label} is blank", kind=KIND, fix=FIX)]
    try:
        rule(label, value)
    except calc.TrainingBudgetError as e:
        return [Problem(where, f"{e}{_hint(label, value)}", kind=KIND, fix=FIX)]
    return []


FIX = "type a value of the kind the label and its note say (trainbudget verify --json names each)"


def _named(values: Any, names: dict[str, str], name: str) -> tuple[str, Any] | None:
    """('Sheet!A1', its cached value) of the template's defined name `name`; None where the template has no
    such name or the workbook no such sheet."""
    if name not in names:
        return None
    sheet, ref = names[name].split("!")
    return (f"{sheet}!{ref}", values[sheet][ref].value) if sheet in values.sheetnames else None


def step_refused(values: Any, names: dict[str, str]) -> str | None:
    """The step block's layout check ('Sheet!A1') where its cached value says calc's step model refuses the
    layout (Step layout taken FALSE), else None."""
    found = _named(values, names, layout_pieces.LAYOUT_OK)
    return found[0] if found and found[1] is not None and found[1] in (False, 0) else None


def _step_layout(values: Any, names: dict[str, str]) -> list[Problem]:
    """A warning where calc's step model refuses the step block's layout: its results are #N/A by design
    (check.verify does not count those as errors), and the ranges use the published runs; a budget on
    devices the layout block's layout does not fit (one device under its default TP 2) is still valid."""
    where = step_refused(values, names)
    if where is None:
        return []
    return [Problem(where, "calc's step model refuses the step block's layout (Step layout taken is FALSE): the "
                    "step's seconds, MFU and whole run are #N/A, and the ranges use the published runs",
                    severity="warning",
                    fix="to time the step, make the Budget's Devices whole replicas of TP x PP x CP (the layout "
                    "block's TP, PP, EP and the step block's CP), EP dividing data x context parallel, the global "
                    "batch at least a micro-batch per replica, VPP 1 without a pipeline, CP dividing the sequence "
                    "(and 1 without flash attention), TP dividing the heads")]


def budget(values: Any, names: dict[str, str]) -> list[Problem]:
    """The Budget's inputs (budget_sheet.INPUTS) and the currency inputs (their defined names);
    `values` is the workbook of cached values, `names` the template's name -> 'Sheet!A1'."""
    ws, problems = values["Budget"], []
    for name, label, *_ in budget_sheet.INPUTS:
        ref = budget_sheet.REF[name].replace("$", "")
        if name == "active_params":  # blank: all parameters (dense), the input's note says so
            if ws[ref].value not in (None, ""):
                params = ws[budget_sheet.REF["params"].replace("$", "")].value
                problems += _active(f"Budget!{ref}", label, ws[ref].value, params, "the model parameters")
            continue
        problems += _check(f"Budget!{ref}", label, BUDGET[name], ws[ref].value)
    for name, label, *_ in step_block.STEP_INPUTS:
        found = _named(values, names, name)
        if found and not (name in BLANK_DEFAULT and found[1] is None):
            problems += _check(found[0], label, STEP[name], found[1])
    for name, label, *_ in deadline_block.INPUTS:  # the Deadline and budget block: days and USD, > 0
        found = _named(values, names, name)
        if found:
            problems += _check(found[0], label, calc.check_positive, found[1])
    problems += _step_layout(values, names)
    providers = _providers(values)
    for name in CURRENCY_NAMES:
        found = _named(values, names, name)
        if not found:
            continue
        where, value = found
        if name == "Provider":
            if value not in (None, "") and str(value).strip().casefold() not in providers:
                problems.append(Problem(where, f"Provider {calc.show_value(value)} is not in the Prices "
                                        "sheet: the results show calc's refusal of it", kind=KIND, fix=FIX))
            continue
        problems += _check(where, name, CURRENCY[name], value)
    return problems


def _providers(values: Any) -> set[str]:
    if "Prices" not in values.sheetnames:
        return set()
    ws = values["Prices"]
    return {str(c.value).strip().casefold() for c in ws["A"][prices_sheet.FIRST_ROW:] if c.value not in (None, "")}


PLAN_RULES: dict[str, Rule] = {"params": calc.check_positive, "tokens": calc.check_positive, "device": _text,
                               "devices": calc.check_whole, "pue": lambda n, v: calc.check_at_least(n, v, 1.0)}


def plans(values: Any) -> list[Problem]:
    """Each used Scenarios column (any input but the name filled): every input of the plan."""
    if "Scenarios" not in values.sheetnames:
        return []
    ws, problems, providers = values["Scenarios"], [], _providers(values)
    for c in scenarios.COLUMNS:
        got = {name: ws[f"{c}{scenarios.ROW[name]}"].value for name, *_ in scenarios.INPUTS}
        if all(v in (None, "") for k, v in got.items() if k != "name"):
            continue
        for name, label, _ in scenarios.INPUTS:
            where, value = f"Scenarios!{c}{scenarios.ROW[name]}", got[name]
            if name in PLAN_RULES:
                problems += _check(where, label, PLAN_RULES[name], value)
            elif name == "utilization":
                problems += _utilization(where, value)
            elif name == "price":
                problems += _price(where, value, providers)
            elif name == "active_params" and value not in (None, ""):  # blank: all parameters (dense)
                problems += _active(where, label, value, got["params"])
        problems += _plan_method(f"Scenarios!{c}{scenarios.ROW['method']}", ws[f"{c}{scenarios.ROW['method']}"].value)
    return problems


def _plan_method(where: str, value: Any) -> list[Problem]:
    """A plan's Method: blank (full) or one of calc.METHODS as the sheet compares it (any case, no
    spaces); anything else the sheet would cost as a training step."""
    if value in (None, "") or (isinstance(value, str) and value.casefold() in calc.METHODS):
        return []
    return [Problem(where, f"Method must be blank or one of {', '.join(calc.METHODS)} (got {calc.show_value(value)}): "
                           "the sheet costs any other as a training step", kind=KIND, fix=FIX)]


def _active(where: str, label: str, value: Any, params: Any, whose: str = "the plan's parameters") -> list[Problem]:
    """Active parameters (the Budget's or a plan's): a positive count, at most `whose` total (the sheet
    shows #N/A beyond them, as calc.train_flops refuses)."""
    problems = _check(where, label, calc.check_positive, value)
    if not problems and isinstance(value, (int, float)) and isinstance(params, (int, float)) and value > params:
        problems.append(Problem(where, f"{label} {value:g} is more than {whose} {params:g}",
                                kind=KIND, fix=FIX))
    return problems


def _utilization(where: str, value: Any) -> list[Problem]:
    label = "Utilization"
    if isinstance(value, str) and value.strip().casefold() == "prior":
        return []
    if isinstance(value, str) or value is None:  # the sheet reads any non-number as "prior": say so
        shown = "blank" if value in (None, "") else f"the text {value.strip()!r}"
        return [Problem(where, f"{label} is {shown}: the sheet silently uses the prior instead; type a share "
                               f'(40% or 0.4) or "prior"{_hint(label, value) if value else ""}', kind=KIND, fix=FIX)]
    return _check(where, label, calc.check_fraction, value)


def _price(where: str, value: Any, providers: set[str]) -> list[Problem]:
    label = "Price"
    if value in (None, ""):
        return [Problem(where, f"{label} is blank: the plan's cost stays blank", "warning")]
    if not isinstance(value, str):
        return _check(where, label, calc.check_non_negative, value)
    provider, _, plan = value.strip().partition(":")
    plan = plan.partition(":")[0].strip()  # "provider:plan:offering": the workbook's formulas read the offering too
    if provider.strip().casefold() not in providers:
        return [Problem(where, f"{label} {value!r} names no provider of the Prices sheet", kind=KIND, fix=FIX)]
    return _check(where, label, lambda n, v: calc.check_choice(n, v, prices_sheet.PLANS), plan or "on_demand")


def prices(values: Any, wb: Any) -> list[Problem]:
    """Each row of the Prices table: devices per instance a whole number, prices >= 0 or blank,
    'As of' a date. Columns found by the headers prices_sheet.COLUMNS writes."""
    if "Prices" not in wb.sheetnames or prices_sheet.TABLE not in wb["Prices"].tables:
        return []
    ws = values["Prices"]
    lo_col, lo_row, hi_col, hi_row = range_boundaries(wb["Prices"].tables[prices_sheet.TABLE].ref)
    header = {ws.cell(lo_row, c).value: get_column_letter(c) for c in range(lo_col, hi_col + 1)}
    rules: dict[str, Rule] = {"Devices per instance": calc.check_whole, "As of": _date}
    rules |= {h: calc.check_non_negative for h in prices_sheet.PLAN_HEADERS.values()}
    problems = []
    for r in range(lo_row + 1, hi_row + 1):
        if all(ws.cell(r, c).value in (None, "") for c in range(lo_col, hi_col + 1)):
            continue
        for head, rule in rules.items():
            col = header.get(head)
            value = ws[f"{col}{r}"].value if col else None
            if col is None or (value in (None, "") and head in prices_sheet.PLAN_HEADERS.values()):
                continue  # a provider need not publish every plan
            problems += _check(f"Prices!{col}{r}", head, rule, value)
    return problems
