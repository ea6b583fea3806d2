"""The Budget's input checks: calc's rule for every numeric input, written twice from one table
(and, from the same rules, each Scenarios plan's chain: scenario_rules).

1. As each input cell's data validation, "stop" style, its message in calc's words
   ("utilization must be in (0, 1]").
2. Because validation stops only what is typed (not a pasted value, nor one a program writes), as
   a chain of short rows, one per rule ("Input checks", below the deadline block): each row holds
   the refusal of the row above, else its own rule's (input_pieces.first_refusal), so the last row,
   named Input_error, is "" while every input passes, else the first failing input's message as
   calc words it: `#VALUE! utilization must be in (0, 1] (got 40)`. The Input check row above the
   Results shows it; the results and the deadline block show it instead of a figure, and the
   every-device comparison stays blank, while it is not "" (input_pieces.unless_error). The deadline's
   inputs have a chain of their own after Input_error's (Deadline_error).

The rule words are calc.base.checks' own: each is taken from the error calc raises on a value it refuses
(`words`), so the sheet and the command line cannot word a rule two ways (a device not on the
Devices sheet alone is worded by the sheet: calc names the closest rows). The checks run in the
order calc.budget checks its arguments (params, active_params, tokens, devices, utilization,
device, the active_params <= params rule of calc.train_flops, method, optimizer, activations,
zero_stage, trainable, usd_per_device_hour, pue), so the first message is the one the command
line prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import input_pieces, native, price_pieces
from . import styles
from .cached_cells import CachedCells, text

# The methods that read no trainable share (calc.ADAPTER_METHODS read it, and refuse one <= 0)
NO_ADAPTER = tuple(m for m in calc.METHODS if m not in calc.ADAPTER_METHODS)
DEADLINE_ERROR = input_pieces.DEADLINE_ERROR
DAYS_DEFAULT = 30.0  # the deadline block's inputs as the template ships them (Deadline_days, Budget_USD)
USD_DEFAULT = 1e6
FITS = "the model states fit (Devices needed to fit)"
Rule = tuple[str, str, str, Any, "bool | str"]


def _probe(kind: str, arg: Any) -> Callable[[], Any]:
    """A call of calc's check `kind` on a value it refuses."""
    return {"number": lambda: calc.check_number("x", "?"),
            "positive": lambda: calc.check_positive("x", -1.0),
            "non_negative": lambda: calc.check_non_negative("x", -1.0),
            "at_least": lambda: calc.check_at_least("x", float(arg) - 1.0, float(arg)),
            "fraction": lambda: calc.check_fraction("x", 2.0),
            "whole": lambda: calc.check_whole("x", 0.5, int(arg)),
            "whole_in": lambda: calc.check_whole_in("x", 0.5, arg),
            "choice": lambda: calc.check_choice("x", "?", arg),
            "at_most": lambda: calc.train_flops(1.0, 1.0, active_params=2.0)}[kind]


DEVICE_WORDS = "must be a Name of the Devices sheet"  # calc: "unknown device 'H10'; closest: ..."


def words(kind: str, arg: Any = None) -> str:
    """calc's words for the rule `kind` ("must be > 0"): the text of the error it raises."""
    if kind in ("device", "device_name"):  # calc names the closest rows; the sheet names where its rows are
        return DEVICE_WORDS
    if kind == "price_number":
        kind = "non_negative"
    try:
        _probe(kind, arg)()
    except calc.TrainingBudgetError as e:
        said = str(e)
        start = 2 if said.startswith("x ") else said.index(" must") + 1
        return said[start:said.rindex(" (got")]
    raise AssertionError(f"calc accepted the probe of {kind}")  # pragma: no cover


PRIOR_WORDS = "must be a number in (0, 1] or 'prior'"  # calc.budget's words for a utilization of text


@dataclasses.dataclass(frozen=True)
class Spec:
    """The cells of a price spec's parts (a "spec" rule's argument): price_pieces.spec_checks'."""

    provider: str
    plan: str
    column: str
    offering: str
    date: str
    spec: str
    device: str


# (sheet name, calc's argument name, kind, its bound or options, blank allowed), in calc.budget's order
BUDGET_RULES: tuple[Rule, ...] = (
    ("Params", "params", "positive", None, False),
    ("Active_params", "active_params", "positive", None, True),
    ("Tokens", "tokens", "positive", None, False),
    ("Devices_count", "devices", "whole", 1, False),
    ("Utilization", "utilization", "fraction", None, False),
    ("Device", "device", "device", None, False),  # a Devices row's name, or a rate in TFLOP/s
    ("Active_params", "active_params", "at_most", "Params", True),
    ("Method", "method", "choice", calc.METHODS, False),
    ("Optimizer", "optimizer", "choice", calc.OPTIMIZERS, False),
    ("Activations_GB", "activations", "non_negative", None, True),  # blank = 0, as the formulas read it
    ("ZeRO_stage", "zero_stage", "whole_in", calc.ZERO_STAGES, False),
    ("LoRA_share", "trainable", "positive", None, False),  # read by lora and qlora only (NO_ADAPTER)
    ("Price_per_hour", "usd_per_device_hour", "non_negative", None, True),  # blank: the device row's price
    ("Price_spec", "price", "spec", Spec("Provider", "Plan", "Plan_col", "Offering", "Price_date", "Price_spec",
                                         "Device"), True),  # a provider's price: calc.money.prices' refusals
    ("PUE_ratio", "pue", "at_least", 1.0, False),
)
# the currency rate (USD_rate, money figures only: Rate_error): a number > 0 as calc.check_positive words it
RATE_RULES: tuple[Rule, ...] = (("USD_rate", "USD_rate", "positive", None, False),)
# the deadline block's inputs (calc.devices_for_days' days, tokens_for_budget's usd)
DEADLINE_RULES: tuple[Rule, ...] = (
    ("Deadline_days", "days", "positive", None, False),
    ("Budget_USD", "usd", "positive", None, False),
)


def _condition(ref: str, name: str, kind: str, arg: Any) -> str:
    """calc's rule for the argument `name` on the number (or text, for a choice) in `ref`."""
    if kind == "device":
        return f"OR(ISNUMBER({ref}),{input_pieces.listed(ref, native.NAMES)})"
    if kind == "device_name":  # a Scenarios plan's device: a Devices row's name
        return input_pieces.listed(ref, native.NAMES)
    if kind == "price_number":  # a Scenarios plan's price: a number >= 0, else a spec (its own rules)
        return f"OR(NOT(ISNUMBER({ref})),{input_pieces.rule_condition('non_negative', ref)})"
    if kind == "choice":
        return (input_pieces.listed(ref, input_pieces.optimizer_names()) if name == "optimizer"
                else input_pieces.one_of(ref, arg, quoted=True))
    if kind == "whole_in":
        return input_pieces.one_of(ref, tuple(map(str, arg)), quoted=False)
    bound = None if arg is None else (_bound(arg)[1] if isinstance(arg, (str, tuple)) else f"{arg:g}")
    return input_pieces.rule_condition(kind, ref, bound)


def _ok(ref: str, name: str, cond: str, blank: bool | str) -> str:
    """`cond`, or TRUE where a blank is allowed (`blank` a text: where the cell holds that text, as
    "prior" for a plan's utilization), or where the method does not read the input."""
    if name == "trainable":
        cond = input_pieces.unless_one_of("Method", NO_ADAPTER, cond)
    if isinstance(blank, str):
        return f'OR({ref}="{blank}",{cond})'
    return input_pieces.or_blank_ok(ref, cond) if blank else cond


Row = tuple[str, str, Callable[[str], str]]  # (label, ok, the refusal given the label's cell)


def chain(rules: tuple[Rule, ...]) -> list[Row]:
    """(label, ok, refusal) for each row of the chain: a number input's "must be a number"
    first, then its rule (a row's rule is read only while the rows above pass: a number is there).
    The label is the rule in calc's words, and the row's refusal quotes it (the row says what it
    refuses); a price spec's rules (kind "spec") are calc.money.prices' own three, worded by price_pieces."""
    rows: list[Row] = []
    numbered: set[str] = set()
    for ref, name, kind, arg, blank in rules:
        if kind == "spec":
            rows += [(label, ok, lambda _, m=message: m) for label, ok, message in price_pieces.spec_checks(
                arg.provider, arg.plan, arg.column, arg.offering, arg.date, arg.spec, arg.device)]
            continue
        if kind not in ("choice", "device", "device_name", "price_number") and ref not in numbered:
            numbered.add(ref)
            said = PRIOR_WORDS if blank == "prior" else words("number")
            rows.append(_row(f"{name} {said}", _ok(ref, name, f"ISNUMBER({ref})", blank),
                             input_pieces.quoted(ref)))
        got = (input_pieces.pair_shown(name, ref, *_bound(arg)) if kind == "at_most"
               else input_pieces.quoted(ref) if kind in ("choice", "device", "device_name") else ref)
        rows.append(_row(f"{name} {words(kind, arg)}", _ok(ref, name, _condition(ref, name, kind, arg), blank), got))
    return rows


def _bound(arg: str | tuple[str, str]) -> tuple[str, str]:
    """An at_most rule's bound as (calc's argument name, its cell): "Params" -> ("params", "Params");
    a plan's ("params", "B6") as it is."""
    return (arg.lower(), arg) if isinstance(arg, str) else arg


def _row(label: str, ok: str, got: str) -> Row:
    return label, ok, lambda at: input_pieces.refusal(at, got)


def write(ws: Worksheet, cached: CachedCells, last: int) -> int:
    """The Input checks block from row last + 2: the Budget's chain (its last row Input_error),
    then the deadline's, after Input_error (its last row Deadline_error); returns the last row."""
    r = last + 2
    text(ws, f"A{r}", "Input checks (calc's rules, in calc.budget's order)", styles.HEADING)
    text(ws, f"C{r}", "each row: the refusal above it, else its own rule's; blank: passes", styles.NOTE)
    for rules, name, before in ((BUDGET_RULES, input_pieces.INPUT_ERROR, None),
                                (DEADLINE_RULES, DEADLINE_ERROR, input_pieces.INPUT_ERROR),
                                (RATE_RULES, input_pieces.RATE_ERROR, None)):
        for label, ok, refusal in chain(rules):
            r += 1
            _label(ws, r, label)
            cached.formula(ws, f"B{r}", input_pieces.first_refusal(before, ok, refusal(f"A{r}")), "", None, fill=None)
            before = f"B{r}"
        if rules is DEADLINE_RULES:  # no count meets the deadline where the model states fit on none
            r += 1
            text(ws, f"A{r}", FITS)
            cached.formula(ws, f"B{r}", input_pieces.first_refusal(before, f"ISNUMBER({input_pieces.DEVICES_NEEDED})",
                                                             input_pieces.DEVICES_NEEDED), "", None, fill=None)
        ws.parent.defined_names[name] = DefinedName(name, attr_text=f"'{ws.title}'!$B${r}")
    r += 1  # the comparison's blank test: any refusal of the inputs or the rate
    text(ws, f"A{r}", "Any refusal (inputs, currency rate)")
    cached.formula(ws, f"B{r}", input_pieces.any_refusal(), "", None, fill=None)
    ws.parent.defined_names[input_pieces.ANY_ERROR] = DefinedName(input_pieces.ANY_ERROR,
                                                                  attr_text=f"'{ws.title}'!$B${r}")
    return r


LABEL_CHARS = 40  # what column A (36 wide) holds of a wrapped label at the body font


def _label(ws: Worksheet, row: int, label: str) -> None:
    """A rule's label (the message quotes it), wrapped in a row tall enough where it is long."""
    cell = text(ws, f"A{row}", label)
    if len(label) > LABEL_CHARS:
        cell.alignment = styles.WRAP
        ws[f"B{row}"].alignment = styles.WRAP
        ws.row_dimensions[row].height = 15 * -(-len(label) // LABEL_CHARS)


def check_row(ws: Worksheet, cached: CachedCells, row: int, label: str, error: str) -> None:
    """A row showing the chain's first refusal (`error`), in red over B and C; blank while all pass."""
    text(ws, f"A{row}", label, styles.BOLD)
    cached.formula(ws, f"B{row}", error, "", None, styles.ERROR_FONT, fill=None)
    ws.merge_cells(f"B{row}:C{row}")


def validate(ws: Worksheet, cells: dict[str, str], rules: tuple[Rule, ...]) -> None:
    """Each input's data validation, stop style, calc's words as its message (`cells`: sheet name
    -> cell): a choice as a list (its drop-down), a number as its rules on the cell itself; a
    rule on two inputs (active_params <= params) joins that input's first rule."""
    by_ref: dict[str, list[Rule]] = {}
    for rule in rules:
        if rule[2] != "spec":  # the price spec's parts are checked by their own drop-downs
            by_ref.setdefault(rule[0], []).append(rule)
    for ref, own in by_ref.items():
        cell, (_, name, kind, arg, blank) = cells[ref], own[0]
        if kind == "device":  # its drop-down of the Devices sheet's names (budget_sheet), free entry kept
            continue
        said = "; ".join(f"{n} {words(k, a)}" for _, n, k, a, _ in own) + (" (or blank)" if blank else "")
        if kind in ("choice", "whole_in"):
            dv = DataValidation(type="list", formula1='"' + ",".join(map(str, arg)) + '"')
        else:
            conds = [f"ISNUMBER({cell})", *(_condition(cell, n, k, a) for _, n, k, a, _ in own)]
            dv = DataValidation(type="custom", formula1=_ok(cell, name, "AND(" + ",".join(conds) + ")", False))
        dv.allow_blank, dv.showErrorMessage, dv.errorStyle = blank, True, "stop"
        dv.errorTitle, dv.error = f"{name} refused", said
        ws.add_data_validation(dv)
        dv.add(cell)
