"""A call of ours with no native form (TRAIN_BUDGET, ...) computed with calc, for the e-mail copy
of a workbook whose cached value for it is missing or an error (LibreOffice
saves `#NAME?` for a function it does not know; openpyxl saves no value at all).

The formula must be the call itself, optionally inside `INDEX(call, row[, col])` and
`IFERROR(..., fallback)`, with arguments that are literals, blank, or single cells (a reference or a
defined name of one) holding a value; anything else is not evaluated and `UnevaluableError` says why,
for the note on the frozen cell.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.utils import range_boundaries

from ... import calc
from ..functions import rewrite
from ..functions.registry import BY_NAME
from ..ooxml import xmlcells


class UnevaluableError(Exception):
    """The formula cannot be computed here; the message says why (for the frozen cell's note)."""


Lookup = Callable[[str], Any]  # a reference ('A2', 'Sheet1'!B3, a defined name) -> the cell's value


def _bare(nodes: list) -> list:
    return [n for n in nodes if not (isinstance(n, Token) and n.type == Token.WSPACE)]


def _name(call: rewrite.Call) -> str:
    return call.open[:-1].strip().upper() if call.open.endswith("(") else ""


def _scalar(nodes: list, lookup: Lookup) -> Any:
    """The value of an argument: a literal, a blank, or one cell."""
    nodes = _bare(nodes)
    sign = 1.0
    while nodes and isinstance(nodes[0], Token) and nodes[0].type == Token.OP_PRE and nodes[0].value in "+-":
        sign = -sign if nodes[0].value == "-" else sign
        nodes = nodes[1:]
    if not nodes:
        return None
    if len(nodes) != 1 or not isinstance(nodes[0], Token) or nodes[0].type != Token.OPERAND:
        raise UnevaluableError("an argument is an expression, not a value or one cell")
    tok = nodes[0]
    if tok.subtype == Token.NUMBER:
        return sign * float(tok.value)
    if tok.subtype == Token.TEXT:
        return tok.value[1:-1].replace('""', '"')
    if tok.subtype == Token.LOGICAL:
        return tok.value.upper() == "TRUE"
    if tok.subtype == Token.RANGE:
        _, _, ref = tok.value.rpartition("!")
        try:
            lo_c, lo_r, hi_c, hi_r = range_boundaries(ref.replace("$", ""))
            if (lo_c, lo_r) != (hi_c, hi_r):
                raise UnevaluableError(f"the argument {tok.value} is a range, not one cell")
        except (ValueError, TypeError):
            pass  # a defined name: the lookup resolves it
        value = lookup(tok.value)
        if isinstance(value, str) and value in xmlcells.EXCEL_ERRORS:
            raise UnevaluableError(f"its argument {tok.value} shows {value}")
        return sign * value if isinstance(value, float) and sign < 0 else value
    raise UnevaluableError(f"the argument {tok.value} is not a value")


def _call(call: rewrite.Call, lookup: Lookup, table: calc.DeviceTable | None) -> Any:
    spec = BY_NAME[rewrite.our_name(call)]
    if len(call.args) > len(spec.args):
        raise UnevaluableError(f"{spec.name} is given {len(call.args)} arguments; it takes {len(spec.args)}")
    values = {a.name: _scalar(nodes, lookup) for a, (nodes, _) in zip(spec.args, call.args, strict=False)}
    missing = [a.name for a in spec.required if values.get(a.name) is None]
    if missing:
        raise UnevaluableError(f"{spec.name} is missing {', '.join(missing)}")
    try:
        return spec.call(values, table)
    except calc.TrainingBudgetError as e:
        raise UnevaluableError(f"calc refused it: {e}") from None


def _value(nodes: list, lookup: Lookup, table: calc.DeviceTable | None) -> Any:
    nodes = _bare(nodes)
    if len(nodes) != 1 or not isinstance(nodes[0], rewrite.Call):
        raise UnevaluableError("the call is part of a larger expression")
    call = nodes[0]
    name = _name(call)
    if rewrite.our_name(call):
        return _call(call, lookup, table)
    if name == "INDEX" and len(call.args) in (2, 3):
        grid = np.atleast_2d(np.asarray(_value(call.args[0][0], lookup, table), dtype=object))
        at = [_scalar(a, lookup) for a, _ in call.args[1:]] + [1.0] * (3 - len(call.args))
        r, c = (int(x) if isinstance(x, float) and x == int(x) else -1 for x in at)
        if grid.shape[0] == 1 and len(call.args) == 2:  # INDEX(row, k) picks the k-th of a row
            r, c = 1, r
        if not (1 <= r <= grid.shape[0] and 1 <= c <= grid.shape[1]):
            raise UnevaluableError(f"INDEX({r},{c}) is outside the {grid.shape[0]}x{grid.shape[1]} result")
        return grid[r - 1, c - 1]
    if name == "IFERROR" and len(call.args) == 2:
        try:
            return _value(call.args[0][0], lookup, table)
        except UnevaluableError as e:
            if str(e).startswith("calc refused it"):
                return _scalar(call.args[1][0], lookup)
            raise
    raise UnevaluableError(f"{name or 'the formula'} around the call is not INDEX or IFERROR")


def evaluate(formula: str, lookup: Lookup, table: calc.DeviceTable | None = None) -> float | str | bool:
    """The value `formula` shows, computed with calc; `lookup` gives a referenced cell's value."""
    text = formula if formula.startswith("=") else "=" + formula
    value = _value(rewrite.parse(Tokenizer(text).items), lookup, table)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float) and np.isfinite(value):
        return float(value)
    raise UnevaluableError("the result is a table, not one value: wrap the call in INDEX(..., row, column)")


def cell_lookup(parts: dict[str, bytes], sheet: str, here: xmlcells.Sheet) -> Lookup:
    """Cached values of the package's cells: `A2` on `sheet` (read from its tree `here`, as the
    export has it), `'Other'!B3`, or a workbook-level defined name of one cell."""
    from ..ooxml import package, partedit

    shared = xmlcells.shared_strings(parts.get("xl/sharedStrings.xml"))
    sheets = package.sheet_parts(parts)
    wb = partedit.root_of(parts, partedit.WB)
    names = {dn.get("name", "").lower(): dn.text or "" for dn in wb.iter(xmlcells.q(wb, "definedName"))
             if dn.get("localSheetId") is None}

    def lookup(ref: str, depth: int = 0) -> Any:
        where, bang, cell_ref = ref.rpartition("!")
        if not bang and ref.lower() in names and depth < 2:
            return lookup(names[ref.lower()], depth + 1)
        name = where.strip("'").replace("''", "'") if bang else sheet
        if name not in sheets:
            raise UnevaluableError(f"{ref} is not a cell of this workbook")
        tree = here if name == sheet else xmlcells.Sheet(package.parse(sheets[name], parts[sheets[name]]))
        try:
            cell = tree.cell(cell_ref.replace("$", ""), create=False)
        except ValueError:
            raise UnevaluableError(f"{ref} is not one cell") from None
        return None if cell is None else xmlcells.cached_value(cell, shared)
    return lookup
