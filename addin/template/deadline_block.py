"""The Budget's "Deadline and budget" block, after the ranges: a deadline in days and money in USD
in, the devices that finish by the deadline and the tokens the money buys out, each at the Budget's
utilization and as low / expected / high at the ranges' basis (Ranges from). Where the step model
gives the ranges (Range_is_step), the devices are the step block's tables' (step_deadline: the
layout timed at each count, calc.deadline_devices per case) and the tokens the step's costs (its
utilization does not move with the tokens); else the job's own prior's (Util_high, Util_expected,
Util_low and Goodput of ranges_block, on the device's 16-bit row, Prior_device), which moves with
the devices and the tokens (calc.Coefficients): prior_native's closed forms, in helper rows
(Prior_devices_<case>, Prior_tokens_<case>) so each shown row's formula stays short.

Formulas are the registry's TRAIN_DEVICES_FOR_DAYS and TRAIN_TOKENS_FOR_BUDGET native forms over
the named inputs; the devices that hold the model states are the Results' "Devices needed to fit"
(Devices_needed: the job's method, optimizer, ZeRO stage, LoRA share and activations, in usable
memory), and each deadline row takes the larger of the two, as calc.devices_for does for the
Budget's job. Where the states fit on no count, Deadline_error says so (input_checks.FITS) and the
rows show it. Cached values come from calc.plan and calc.deadline_devices.
"""

from __future__ import annotations

import math
from typing import Any

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import input_pieces, native, pieces, plan_native, prior_native
from ..functions.registry import BY_NAME
from . import input_checks, range_basis, ranges_block, sheet_job, step_block, step_deadline, styles
from .cached_cells import CachedCells, style, text
from .input_checks import DAYS_DEFAULT, USD_DEFAULT

# (name, label, default, format, note)
INPUTS = (("Deadline_days", "Deadline (days)", DAYS_DEFAULT, "#,##0.0", "days of wall-clock training"),
          ("Budget_USD", "Budget (USD)", USD_DEFAULT, styles.USD, "money for device-hours, in USD"))
FLIP = {"low": "high", "high": "low"}  # the fewest tokens come from the highest cost
BY_CASE = {"low": "Util_high", "expected": "Util_expected", "high": "Util_low"}  # low devices: high utilization
DEADLINE_CHECK = "Deadline check (blank: all pass)"
ONE_DEVICE_HOURS = "Fleet_hours_at_100"  # device-hours at 100% on the prior's row (a helper row below)
EXPRS = {"params": "Params", "active_params": "Active_used",
         "tokens": "Tokens", "device": "Device", "days": "Deadline_days", "usd": "Budget_USD",
         "usd_per_device_hour": "Price_used", "devices": "Devices_count"}


def _name(ws: Worksheet, name: str, row: int) -> None:
    ws.parent.defined_names[name] = DefinedName(name, attr_text=f"'{ws.title}'!$B${row}")


def _native(fn: str, utilization: str, tflops: str) -> str:
    spec = BY_NAME[fn]
    exprs = {**EXPRS, "utilization": utilization}
    return spec.native_formula({a.name: exprs[a.name] for a in spec.args}, blank_means_default=False,
                               helpers={"device:tflops": tflops, "device:memory_gib": "Memory_GiB",
                                        **ranges_block.FLOPS_HELPERS})


def write(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable, v: dict[str, Any], last: int) -> int:
    """The block from row last + 2; returns its last row."""
    r = last + 2
    text(ws, f"A{r}", "Deadline and budget", styles.HEADING)
    for i, (name, label, default, fmt, note) in enumerate(INPUTS, start=r + 1):
        text(ws, f"A{i}", label)
        cell = style(ws[f"B{i}"], fmt, styles.INPUT_FONT, styles.INPUT_FILL)
        cell.value, cell.protection, cell.border = default, styles.UNLOCKED, styles.BOX
        text(ws, f"C{i}", note, styles.NOTE)
        _name(ws, name, i)
    input_checks.validate(ws, {name: f"$B${i}" for i, (name, *_) in enumerate(INPUTS, start=r + 1)},
                          input_checks.DEADLINE_RULES)
    check = r + 1 + len(INPUTS)
    input_checks.check_row(ws, cached, check, DEADLINE_CHECK, input_checks.DEADLINE_ERROR)
    rows = _rows(table, v)
    first = check + 1
    for i, (name, label, formula, value, fmt, note) in enumerate(rows, start=first):
        text(ws, f"A{i}", label, styles.BOLD)
        cell = cached.formula(ws, f"B{i}", input_pieces.unless_error(formula, input_checks.DEADLINE_ERROR), value, fmt,
                              styles.BOLD if name != "Prior_TFLOPS" else styles.BODY)
        cell.border = styles.BOX
        if note:
            text(ws, f"C{i}", note, styles.NOTE)
        if name:
            _name(ws, name, i)
    return first + len(rows) - 1


def _ranged_tokens(job: calc.Job, v: dict[str, Any], table: calc.DeviceTable, usd: float, prior: Any) -> Any:
    """calc.tokens_for at the ranges' basis: the step model's utilization range (range_basis.step_prior)
    where it applies, else `prior` (the job's own prior's); low / expected / high."""
    if range_basis.step_applies(v):
        return calc.tokens_for(job.with_(utilization=range_basis.step_prior(v, table)), usd)
    return prior


def _ranged_devices(prior: Any, v: dict[str, Any], table: calc.DeviceTable, states: float) -> list[Any]:
    """The deadline's low / expected / high devices at the ranges' basis: the step block's tables
    (calc.deadline_devices per case, at least `states`) where the step model applies, else `prior`'s."""
    if not range_basis.step_applies(v):
        return [float(n) for n in prior]
    want = step_block.at_defaults(v, table)[3]
    return [step_deadline.NONE if math.isinf(want[c]) else max(want[c], states) for c in calc.RANGE_LABELS]


def _step_devices(v: dict[str, Any], table: calc.DeviceTable) -> Any:
    """The step block's deadline answer (step_block.at_defaults), its words where none meets it."""
    want = step_block.at_defaults(v, table)[3]["expected"]
    return step_deadline.NONE if math.isinf(want) else want


def _rows(table: calc.DeviceTable, v: dict[str, Any]) -> list[tuple[str | None, str, str, Any, str, str]]:
    """(name, label, formula, cached value, format, note) for each result row."""
    days = DAYS_DEFAULT
    prior_rate = "Prior_TFLOPS"
    # the Budget's job (its method, optimizer, ZeRO stage, LoRA share, activations): calc.devices_for
    # counts the devices that hold its model states as the Results' "Devices needed to fit" does
    the_job = sheet_job.job(v, table)
    states = calc.devices_needed(v["params"], v["device"], method=v["method"], optimizer=v["optimizer"],
                                 zero_stage=v["zero_stage"], trainable=v["trainable"],
                                 activations=v["activations"] * calc.GB, table=table)
    rows: list[tuple[str | None, str, str, Any, str, str]] = [
        (prior_rate, "Rate of the row the ranges use (TFLOP/s)", native.lookup("Prior_device", "tflops"),
         table.value(calc.prior_device(v["device"], table), "tflops"), styles.TFLOPS, "Prior_device above"),
        ("Deadline_states", "Devices that hold the model states", input_pieces.DEVICES_NEEDED, states,
         styles.COUNT, "Devices needed to fit above: the job's method, optimizer, ZeRO stage, activations"),
        (None, "Devices for the deadline",
         f"MAX({_native('TRAIN_DEVICES_FOR_DAYS', 'Utilization', 'Rate_TFLOPS')},Deadline_states)",
         calc.devices_for(the_job, days), styles.COUNT, "at the utilization above; and enough to fit"),
        (None, "Devices for the deadline, step model", "Step_deadline_devices", _step_devices(v, table),
         styles.COUNT, "the step block's layout and batch below, time only (its architecture's model)"),
    ]
    three = calc.devices_for(the_job.with_(utilization="prior"), days, case=None)
    d = sheet_job.device_row(v["device"], table)
    at_100 = float(ranges_block.budget(v, table, device=d.name, utilization=1.0).device_hours)
    goodput = ranges_block.budget(v, table, utilization="prior").prior.goodput  # the Goodput cell's value
    price = ranges_block.price(v, table)[0]
    rows += [(ONE_DEVICE_HOURS, "Device-hours at 100% on the ranges' row", "Hours_at_100*Devices_count", at_100,
              styles.HOURS, "the prior's figures below scale these"),
             ("Devices_at_100", "Devices for the deadline at 100%", f"{ONE_DEVICE_HOURS}/(Goodput*24*Deadline_days)",
              at_100 / (goodput * 24 * days), "#,##0.00", "device-hours at 100% / (goodput x 24 x days)"),
             ("Cost_at_100", "Cost at 100% on that row (USD)",
              pieces.priced("Price_used", f"Price_used*{ONE_DEVICE_HOURS}/Goodput"),
              pieces.NO_PRICE if price is None else price * at_100 / goodput, styles.USD, "goodput counted")]
    return rows + _ranged_rows(v, table, the_job, three, states)


def _ranged_rows(v: dict[str, Any], table: calc.DeviceTable, the_job: calc.Job, three: Any,
                 states: float) -> list[tuple[str | None, str, str, Any, str, str]]:
    """The deadline's and the budget's low / expected / high rows at the ranges' basis (Range_is_step: the
    step block's tables and the step's costs, else the job's own prior, whose closed forms sit in the
    helper rows above them, named Prior_devices_<case> and Prior_tokens_<case>)."""
    usd = USD_DEFAULT
    tokens_prior = calc.tokens_for_budget(v["params"], v["device"], usd, usd_per_device_hour=v["usd_per_device_hour"],
                                          utilization="prior", devices=v["devices"], table=table,
                                          active_params=v.get("active_params"), method=v["method"])
    by_tokens = {"low": "Util_low", "expected": "Util_expected", "high": "Util_high"}  # most tokens: high u
    helpers, chosen = [], []
    devices, tokens = _ranged_devices(three, v, table, states), _ranged_tokens(the_job, v, table, usd, tokens_prior)
    for j, case in enumerate(calc.RANGE_LABELS):  # the job's own prior moves with the device count: closed form
        helpers.append((f"Prior_devices_{case}", f"Devices, {case} (published runs)",
                        prior_native.devices_for_days("Devices_at_100", BY_CASE[case], "Devices_count",
                                                      prior_native.cap(BY_CASE[case]), "Deadline_states"),
                        float(three[j]), styles.COUNT,
                        "the job's own prior x goodput, its utilization moving with the devices" if j == 0 else ""))
        chosen.append((None, f"Devices for the deadline, {case}",
                       pieces.either(range_basis.STEP_CHOSEN, step_deadline.at_least(case, "Deadline_states"),
                                     f"Prior_devices_{case}"), devices[j], styles.COUNT,
                       "at the ranges' basis (Ranges from): the step block's tables at each count, or the published "
                       "runs' rows above" if j == 0 else ""))
    for j, case in enumerate(calc.RANGE_LABELS):  # and with the tokens per parameter: closed form
        helpers.append((f"Prior_tokens_{case}", f"Tokens, {case} (published runs)",
                        pieces.priced("Price_used", prior_native.tokens_for_budget(
                            "Budget_USD", "Cost_at_100", by_tokens[case], "Tokens", prior_native.cap(by_tokens[case]))),
                        float(tokens_prior[j]), styles.COUNT,
                        "the job's own prior x goodput, its utilization moving with the tokens" if j == 0 else ""))
    typed = (None, "Tokens for the budget",
             pieces.priced("Price_used", _native("TRAIN_TOKENS_FOR_BUDGET", "Utilization", "Rate_TFLOPS")),
             calc.tokens_for_budget(v["params"], v["device"], usd, usd_per_device_hour=v["usd_per_device_hour"],
                                    utilization=v["utilization"], devices=v["devices"], table=table,
                                    active_params=v.get("active_params"), method=v["method"]),
             styles.COUNT, "at the utilization above and the price used")
    for j, case in enumerate(calc.RANGE_LABELS):
        cost = ranges_block.range_name("usd", FLIP.get(case, case))  # the fewest tokens: the highest cost
        chosen.append((None, f"Tokens for the budget, {case}",
                       pieces.priced("Price_used", pieces.either(range_basis.STEP_CHOSEN, plan_native.tokens_at_cost(
                           "Budget_USD", "Tokens", cost), f"Prior_tokens_{case}")), float(tokens[j]), styles.COUNT,
                       "at the ranges' basis (Ranges from): the step model's costs, or the published runs' rows "
                       "above" if j == 0 else ""))
    return helpers + chosen[:3] + [typed] + chosen[3:]
