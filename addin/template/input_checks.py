"""The Budget's input checks: calc's rule for every numeric input, written twice from one table.

1. As each input cell's data validation, "stop" style, its message in calc's words
   ("utilization must be in (0, 1]").
2. Because validation stops only what is typed (not a pasted value, nor one a program writes), as
   the Input check row (defined name Input_error): "" while every input passes, else the first
   failing input's message as calc words it: `#VALUE! utilization must be in (0, 1] (got 40)`. The
   results, the every-device comparison and the deadline block show that message (or stay blank)
   instead of a figure while it is not "" (pieces.unless_error).

The rule words are calc.checks' own: each is taken from the error calc raises on a value it refuses
(`words`), so the sheet and the command line cannot word a rule two ways. The checks run in the
order calc.budget checks its arguments (params, active_params, tokens, devices, utilization, the
active_params <= params rule of calc.train_flops, method, optimizer, activations, zero_stage,
trainable, usd_per_device_hour, pue), so the first message is the one the command line prints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ...calc import checks
from ..functions import pieces

# calc.memory._trainable: every method but these reads the trainable share (and refuses one <= 0)
NO_ADAPTER = ("full", "inference")


def _probe(kind: str, arg: Any) -> Callable[[], Any]:
    """A call of calc's check `kind` on a value it refuses."""
    return {"number": lambda: checks.number("x", "?"),
            "positive": lambda: checks.positive("x", -1.0),
            "non_negative": lambda: checks.non_negative("x", -1.0),
            "at_least": lambda: checks.at_least("x", float(arg) - 1.0, float(arg)),
            "fraction": lambda: checks.fraction("x", 2.0),
            "whole": lambda: checks.whole("x", 0.5, int(arg)),
            "whole_in": lambda: checks.whole_in("x", 0.5, arg),
            "choice": lambda: checks.choice("x", "?", arg),
            "at_most": lambda: calc.train_flops(1.0, 1.0, active_params=2.0)}[kind]


def words(kind: str, arg: Any = None) -> str:
    """calc's words for the rule `kind` ("must be > 0"): the text of the error it raises."""
    try:
        _probe(kind, arg)()
    except calc.TrainingBudgetError as e:
        said = str(e)
        start = 2 if said.startswith("x ") else said.index(" must") + 1
        return said[start:said.rindex(" (got")]
    raise AssertionError(f"calc accepted the probe of {kind}")  # pragma: no cover


# (sheet name, calc's argument name, kind, its bound or options, blank allowed), in calc.budget's order
BUDGET_RULES: tuple[tuple[str, str, str, Any, bool], ...] = (
    ("Params", "params", "positive", None, False),
    ("Active_params", "active_params", "positive", None, True),
    ("Tokens", "tokens", "positive", None, False),
    ("Devices_count", "devices", "whole", 1, False),
    ("Utilization", "utilization", "fraction", None, False),
    ("Active_params", "active_params", "at_most", "Params", True),
    ("Method", "method", "choice", calc.METHODS, False),
    ("Optimizer", "optimizer", "choice", calc.OPTIMIZERS, False),
    ("Activations_GB", "activations", "non_negative", None, True),  # blank = 0, as the formulas read it
    ("ZeRO_stage", "zero_stage", "whole_in", calc.memory.ZERO_STAGES, False),
    ("LoRA_share", "trainable", "positive", None, False),  # read by lora and qlora only (NO_ADAPTER)
    ("Price_per_hour", "usd_per_device_hour", "non_negative", None, True),  # blank: the device row's price
    ("PUE_ratio", "pue", "at_least", 1.0, False),
)
# the deadline block's inputs (calc.plan.devices_for_days' days, tokens_for_budget's usd)
DEADLINE_RULES: tuple[tuple[str, str, str, Any, bool], ...] = (
    ("Deadline_days", "days", "positive", None, False),
    ("Budget_USD", "usd", "positive", None, False),
)


def ok(ref: str, name: str, kind: str, arg: Any, blank: bool) -> str:
    """calc's rule for the argument `name` as a condition on `ref`: TRUE where the value passes."""
    if kind == "choice":
        cond = pieces.one_of(ref, arg, quoted=True)
    elif kind == "whole_in":
        cond = pieces.is_number_and(ref, pieces.one_of(ref, tuple(map(str, arg)), quoted=False))
    else:
        bound = None if arg is None else (arg if isinstance(arg, str) else f"{arg:g}")
        cond = pieces.is_number_and(ref, pieces.rule_condition(kind, ref, bound))
    if name == "trainable":
        cond = pieces.unless_one_of("Method", NO_ADAPTER, cond)
    return pieces.or_blank_ok(ref, cond) if blank else cond


def message(ref: str, name: str, kind: str, arg: Any) -> str:
    """The refusal in calc's words, the value shown."""
    if kind == "at_most":
        return pieces.pair_message(name, words(kind), ref, "params", arg)
    return pieces.rule_message(name, words(kind, arg), ref, None if kind == "choice" else words("number"))


def check_formula(rules: tuple[tuple[str, str, str, Any, bool], ...], otherwise: str = '""') -> str:
    """The Input check: "" (or `otherwise`) while every rule passes, else the first refusal."""
    return pieces.first_failing([(ok(ref, name, kind, arg, blank), message(ref, name, kind, arg))
                                 for ref, name, kind, arg, blank in rules], otherwise)


def validate(ws: Worksheet, cells: dict[str, str], rules: tuple[tuple[str, str, str, Any, bool], ...]) -> None:
    """Each input's data validation, stop style, calc's words as its message (`cells`: sheet name
    -> cell): a choice as a list (its drop-down), a number as the rule `ok` on the cell itself; a
    rule on two inputs (active_params <= params) joins that input's first rule."""
    by_ref: dict[str, list[tuple[str, str, str, Any, bool]]] = {}
    for rule in rules:
        by_ref.setdefault(rule[0], []).append(rule)
    for ref, own in by_ref.items():
        cell, (_, name, kind, arg, blank) = cells[ref], own[0]
        said = "; ".join(f"{n} {words(k, a)}" for _, n, k, a, _ in own) + (" (or blank)" if blank else "")
        if kind in ("choice", "whole_in"):
            dv = DataValidation(type="list", formula1='"' + ",".join(map(str, arg)) + '"')
        else:
            conds = [ok(cell, n, k, a, False) for _, n, k, a, _ in own]
            dv = DataValidation(type="custom", formula1=conds[0] if len(conds) == 1 else "AND(" + ",".join(conds) + ")")
        dv.allow_blank, dv.showErrorMessage, dv.errorStyle = blank, True, "stop"
        dv.errorTitle, dv.error = f"{name} refused", said
        ws.add_data_validation(dv)
        dv.add(cell)
