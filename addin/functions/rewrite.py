"""Rewrite calls of our Excel functions to their native equivalents, inside any formula.

The formula is tokenized (openpyxl's Excel formula tokenizer), parsed into nested calls, and
each call of a registry function, nested or not, is replaced by its native formula with the
call's own argument texts (ranges included). Text is never pattern-matched.
"""

from __future__ import annotations

from dataclasses import dataclass

from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.utils import range_boundaries

from .registry import BY_NAME

MAX_FORMULA = 8192  # Excel's formula length limit (Excel specifications and limits)

_PREFIXES = ("_xludf.", "_xll.")  # how Excel may store a user-defined function's name


class NoNativeError(Exception):
    """The formula calls a function that has no native equivalent (e.g. TRAIN_BUDGET)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class TooLongError(NoNativeError):
    """The native formula would pass Excel's 8,192-character limit."""

    def __init__(self, length: int):
        super().__init__(f"the native formula ({length:,} characters, over Excel's {MAX_FORMULA:,})")
        self.length = length


@dataclass
class Call:
    """A bracketed group: a function call, a parenthesis or an array constant."""

    open: str
    args: list[tuple[list, str]]  # (nodes of one argument, the separator after it or "")
    close: str


def _parse(items: list[Token], i: int = 0, closing: bool = False) -> tuple[list, int]:
    nodes: list = []
    while i < len(items):
        tok = items[i]
        if tok.subtype == Token.OPEN:
            call, i = _parse_call(items, i)
            nodes.append(call)
            continue
        if closing and (tok.subtype == Token.CLOSE or tok.type == Token.SEP):
            return nodes, i
        nodes.append(tok)
        i += 1
    return nodes, i


def parse(items: list[Token]) -> list:
    """Tokens (openpyxl's Tokenizer items) as nested calls: Tokens and `Call`s."""
    return _parse(items)[0]


def _parse_call(items: list[Token], i: int) -> tuple[Call, int]:
    call, i = Call(items[i].value, [], ""), i + 1
    while i < len(items):
        arg, i = _parse(items, i, closing=True)
        tok = items[i] if i < len(items) else None
        if tok is None or tok.subtype == Token.CLOSE:
            call.args.append((arg, ""))
            call.close = tok.value if tok else ""
            return call, i + 1
        call.args.append((arg, tok.value))
        i += 1
    return call, i


def _name(call: Call) -> str | None:
    if not call.open.endswith("("):
        return None
    name = call.open[:-1].strip().upper()
    for prefix in _PREFIXES:
        name = name.removeprefix(prefix.upper())
    return name if name in BY_NAME else None


def our_name(call: Call) -> str | None:
    """The registry name of the function `call` calls, or None when it is not one of ours."""
    return _name(call)


def _render(nodes: list) -> str:
    out = []
    for n in nodes:
        if isinstance(n, Call):
            name = _name(n)
            out.append(_native(name, n) if name else n.open + "".join(_render(a) + s for a, s in n.args) + n.close)
        else:
            out.append(n.value)
    return "".join(out)


def _native(name: str, call: Call) -> str:
    spec = BY_NAME[name]
    if spec.native is None:
        raise NoNativeError(name)
    texts = [_render(arg).strip() for arg, _ in call.args]
    exprs = {a.name: t for a, t in zip(spec.args, texts, strict=False) if t}
    missing = [a.name for a in spec.required if a.name not in exprs]
    if missing:
        raise NoNativeError(f"{name} without {', '.join(missing)}")
    cells = frozenset(a.name for a, (arg, _) in zip(spec.args, call.args, strict=False)
                      if classify(arg) in ("cell", "name"))
    return "(" + spec.native_formula(exprs, cells=cells) + ")"


def classify(nodes: list) -> str:
    """What one argument is, by its tokens: 'cell' (one cell, sheet-qualified or not), 'range',
    '3d' (Sheet1:Sheet3!A1), 'name' (a defined name), or 'expr' (anything else)."""
    toks = [n for n in nodes if not (isinstance(n, Token) and n.type == Token.WSPACE)]
    if len(toks) != 1 or not isinstance(toks[0], Token) or toks[0].type != Token.OPERAND \
            or toks[0].subtype != Token.RANGE:
        return "expr"
    sheet, bang, ref = toks[0].value.rpartition("!")
    if bang and ":" in sheet.strip("'"):
        return "3d"
    if ref.startswith("#") or ref.endswith("]"):  # #REF!, a structured reference
        return "expr"
    try:
        lo_c, lo_r, hi_c, hi_r = range_boundaries(ref.replace("$", ""))
    except (ValueError, TypeError):
        return "name" if not bang else "expr"
    if None in (lo_c, lo_r) or (lo_c, lo_r) != (hi_c, hi_r):
        return "range"
    return "cell"


def calls_ours(formula: str) -> bool:
    """Whether the formula calls one of our functions anywhere."""
    return any(t.subtype == Token.OPEN and t.value.endswith("(") and
               _name(Call(t.value, [], "")) for t in Tokenizer(_eq(formula)).items)


def rewrite(formula: str) -> str:
    """The formula (with or without its leading '=') with every call of ours made native.

    Raises NoNativeError when one of them has no native equivalent.
    """
    text = _eq(formula)
    nodes, _ = _parse(Tokenizer(text).items)
    out = _render(nodes)
    if len(out) > MAX_FORMULA:
        raise TooLongError(len(out))
    return ("=" if formula.startswith("=") else "") + out


def _eq(formula: str) -> str:
    return formula if formula.startswith("=") else "=" + formula
