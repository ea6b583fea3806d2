"""The sheets' input-check pieces: calc.base.checks' rules over the named inputs, the chain of refusals
(template/input_checks.py) and the guard that shows a refusal instead of a figure. As pieces.py,
each formula is written once here over named cells; the sheet builders type none."""

from __future__ import annotations

from . import native

INPUT_ERROR = "Input_error"  # "" while every Budget input passes, else the first failing one's message
DEADLINE_ERROR = "Deadline_error"  # Input_error, else the first refused deadline input, else "does not fit"
RATE_ERROR = "Rate_error"  # "" while the currency rate (USD_rate) is a number > 0, else its refusal
ANY_ERROR = "Refused"  # Input_error&Rate_error: "" while the inputs and the rate pass (the comparison's blank test)
DEVICES_NEEDED = "Devices_needed"  # the Budget's "Devices needed to fit": its method, optimizer, ZeRO stage


def any_refusal() -> str:
    """The Budget's refusals joined (ANY_ERROR's cell): "" while every input and the rate pass."""
    return f"{INPUT_ERROR}&{RATE_ERROR}"


def rule_condition(kind: str, ref: str, bound: str | None = None) -> str:
    """calc.base.checks' rule `kind` on the number in `ref`: positive > 0, non_negative >= 0, at_least
    >= bound, fraction in (0, 1], whole (a whole number >= bound), at_most <= bound (another input)."""
    return {"positive": f"{ref}>0", "non_negative": f"{ref}>=0", "at_least": f"{ref}>={bound}",
            "fraction": f"AND({ref}>0,{ref}<=1)", "whole": f"AND({ref}>={bound},{ref}=INT({ref}))",
            "at_most": f"{ref}<={bound}"}[kind]


def one_of(ref: str, allowed: tuple[str, ...], quoted: bool) -> str:
    """`ref` is one of `allowed` (texts compared case-blind, as calc.check_choice; or numbers)."""
    q = '"' if quoted else ""
    return "OR(" + ",".join(f"{ref}={q}{a}{q}" for a in allowed) + ")"


def listed(ref: str, column: str) -> str:
    """`ref` is one of the names in `column` (a table's column: the Optimizers sheet's names)."""
    return f"ISNUMBER(MATCH({ref},{column},0))"


def optimizer_names() -> str:
    """The Optimizers table's names (the optimizers the sheet's formulas know, calc.OPTIMIZERS)."""
    return f"{native.OPTIMIZER_TABLE}[{native.OPTIMIZER_HEADERS[0]}]"


def or_blank_ok(ref: str, ok: str) -> str:
    """`ok`, or TRUE where `ref` is blank (an optional input)."""
    return f'OR({ref}="",{ok})'


def unless_one_of(ref: str, values: tuple[str, ...], ok: str) -> str:
    """`ok`, or TRUE where `ref` is one of `values` (a rule that only some methods read)."""
    return "OR(" + ",".join(f'{ref}="{v}"' for v in values) + f",{ok})"


def quoted(ref: str) -> str:
    """A text input as calc.show_value writes it: in quotes; "blank" for an empty cell."""
    return f'IF({ref}="","blank","\'"&{ref}&"\'")'


def refusal(rule: str, got: str) -> str:
    """'#VALUE! <rule> (got ...)' as calc words a refused argument: `rule` the cell holding the rule in
    calc's words ("utilization must be in (0, 1]", the row's label), `got` the value's expression."""
    return f'"#VALUE! "&{rule}&" (got "&{got}&")"'


def pair_shown(name: str, ref: str, other_name: str, other: str) -> str:
    """Two arguments as calc shows them in a rule between them: name=a, other=b."""
    return f'"{name}="&{ref}&", {other_name}="&{other}'


def first_refusal(before: str | None, ok: str, message: str) -> str:
    """One row of a chain of checks: the refusal `before` (the row above) where it is not "", else
    "" where `ok`, else this rule's `message`; so the chain's last row holds the first refusal."""
    own = f'IF({ok},"",{message})'
    return own if before is None else f'IF({before}<>"",{before},{own})'


def unless_error(formula: str, error: str = INPUT_ERROR) -> str:
    """`formula`, or while `error` is not "" that message instead of a figure."""
    return f'IF({error}<>"",{error},{formula})'


def unguarded(formula: str, errors: tuple[str, ...] = (INPUT_ERROR, DEADLINE_ERROR)) -> str:
    """The figure's own formula inside unless_error's guard (the formula itself where it has none):
    what readability limits measure."""
    for error in errors:
        head = unless_error("", error)[:-1]
        if formula.startswith(head) and formula.endswith(")"):
            return formula[len(head):-1]
    return formula


def name_unless_error(formula: str, error: str = INPUT_ERROR) -> str:
    """A name cell left blank while `error` is not "" (the rows it names stay blank)."""
    return f'IF({error}<>"","",{formula})'
