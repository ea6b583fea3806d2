"""Formulas every spreadsheet engine computes the same (the e-mail copy's rewriter; the package
side is export.portable, which explains each rewrite and where it was measured).

`formula(text, tables, names)` rewrites one formula: structured references to absolute A1 ranges,
`INDEX(X,0,k)` over a multi-column X to `CHOOSE(k,col1,...)`, a one-call `SUMPRODUCT(f(...))` to
`f(...)` (the caller makes the cell an array formula) and unsigned exponents to signed ones.
Formulas are tokenized (openpyxl) and parsed into calls (rewrite.parse); text is never
pattern-matched. verify uses the same function to accept the copy's formulas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.utils import range_boundaries
from openpyxl.utils.cell import get_column_letter

from . import rewrite

MAX_CHOOSE = 254  # CHOOSE takes at most 254 values (Excel specifications and limits)
_UNSIGNED_EXP = re.compile(r"^(\d+\.?\d*|\.\d+)([eE])(\d+)$")
_STRUCTURED = re.compile(r"^([A-Za-z_\\][\w.\\]*)\[(.*)\]$", re.S)


@dataclass(frozen=True)
class Table:
    """An Excel table: its sheet, its cells (1-based, inclusive) and its column names."""

    name: str
    sheet: str
    min_col: int
    min_row: int
    max_row: int
    header_rows: int
    totals_rows: int
    columns: tuple[str, ...]

    def rows(self, specials: set[str], row: int | None) -> tuple[int, int] | None:
        """First and last row for the special items (#All, #Data, #Headers, #Totals, #This Row)."""
        top, bottom = self.min_row + self.header_rows, self.max_row - self.totals_rows
        if "#this row" in specials:
            return None if row is None or not top <= row <= bottom else (row, row)
        if not specials or specials == {"#data"}:
            return top, bottom
        if "#all" in specials:
            return self.min_row, self.max_row
        spans = {"#headers": (self.min_row, top - 1), "#data": (top, bottom), "#totals": (bottom + 1, self.max_row)}
        if any(s not in spans for s in specials):
            return None
        picked = [spans[s] for s in specials]
        lo, hi = min(p[0] for p in picked), max(p[1] for p in picked)
        return (lo, hi) if lo <= hi else None


@dataclass
class Portable:
    """What the portable pass changed, by kind (counts), for the export's summary and tests."""

    structured: int = 0
    whole_column_index: int = 0
    array_idioms: int = 0
    exponents: int = 0
    left: list[str] = field(default_factory=list)  # cells still holding a table reference
    tables_used: set[str] = field(default_factory=set)  # tables whose references became A1 ranges

    def total(self) -> int:
        return self.structured + self.whole_column_index + self.array_idioms + self.exponents


def total(self) -> int:
        return self.structured + self.whole_column_index + self.array_idioms + self.exponents


def _unescape(name: str) -> str:
    return re.sub(r"'(.)", r"\1", name.strip())


def _items(inner: str) -> list[str]:
    """The bracketed items of a structured reference's inside: '[#Data],[A]:[B]' -> ['#Data', 'A:B']."""
    if not inner.startswith("["):
        return [inner]
    items, depth, current, i = [], 0, "", 0
    while i < len(inner):
        ch = inner[i]
        if ch == "'" and i + 1 < len(inner):
            current += inner[i:i + 2]
            i += 2
            continue
        if ch == "[":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif ch == "]":
            depth -= 1
            if depth == 0:
                i += 1
                continue
        if depth == 0 and ch == ",":
            items.append(current)
            current = ""
        elif depth == 0 and ch == ":":
            current += ":"
        elif depth > 0:
            current += ch
        i += 1
    items.append(current)
    return [s for s in (x.strip() for x in items)]


def quote_sheet(sheet: str) -> str:
    return "'" + sheet.replace("'", "''") + "'"


def a1(table: Table, text: str, row: int | None = None) -> str | None:
    """The absolute A1 range of a structured reference to `table` (`text` is what is inside its
    outer brackets), or None when it cannot be one (an unknown column, #This Row outside a row)."""
    specials: set[str] = set()
    cols: list[str] = []
    for item in _items(text):
        if item.startswith("@"):
            specials.add("#this row")
            item = item[1:].strip()
            if item.startswith("[") and item.endswith("]") and not item.endswith("']"):
                item = item[1:-1]
            if not item:
                continue
        if item.lower() in ("#all", "#data", "#headers", "#totals", "#this row"):
            specials.add(item.lower())
        elif item:
            cols.extend(_unescape(c) for c in _split_colon(item))
    names = [c.lower() for c in table.columns]
    try:
        picked = [names.index(c.lower()) for c in cols] or [0, len(names) - 1]
    except ValueError:
        return None
    rows = table.rows(specials, row)
    if rows is None:
        return None
    lo_c, hi_c = table.min_col + min(picked), table.min_col + max(picked)
    start, end = f"${get_column_letter(lo_c)}${rows[0]}", f"${get_column_letter(hi_c)}${rows[1]}"
    return quote_sheet(table.sheet) + "!" + (start if start == end else f"{start}:{end}")


def _split_colon(item: str) -> list[str]:
    """'A]:[B' or 'A:B' split at the colon between two column names (an escaped one stays)."""
    parts, current, i = [], "", 0
    while i < len(item):
        if item[i] == "'" and i + 1 < len(item):
            current += item[i:i + 2]
            i += 2
            continue
        if item[i] == ":":
            parts.append(current)
            current = ""
        else:
            current += item[i]
        i += 1
    return [*parts, current]


def structured(value: str, found: dict[str, Table], row: int | None = None) -> str | None:
    """A1 text for a structured-reference operand token, None if the token is not one we can map."""
    m = _STRUCTURED.match(value)
    if not m or m.group(1).lower() not in found:
        return None
    return a1(found[m.group(1).lower()], m.group(2), row)


class _Pass:
    """One formula's rewrite: tokens first (references, exponents), then calls (INDEX, SUMPRODUCT)."""

    def __init__(self, found: dict[str, Table], names: dict[str, str], done: Portable, row: int | None):
        self.found, self.names, self.done, self.row = found, names, done, row
        self.array = False
        self.left = False

    def tokens(self, text: str) -> list[Token]:
        items = Tokenizer(text).items
        for tok in items:
            if tok.type == Token.OPERAND and tok.subtype == Token.RANGE and "[" in tok.value:
                old, new = tok.value, structured(tok.value, self.found, self.row)
                if new is None:
                    self.left = self.left or bool(_STRUCTURED.match(tok.value))
                else:
                    tok.value = new
                    self.done.structured += 1
                    self.done.tables_used.add(_STRUCTURED.match(old).group(1).lower())
            elif tok.type == Token.OPERAND and tok.subtype == Token.NUMBER:
                m = _UNSIGNED_EXP.match(tok.value)
                if m:
                    tok.value = f"{m.group(1)}{m.group(2)}+{m.group(3)}"
                    self.done.exponents += 1
        return items

    def render(self, nodes: list) -> str:
        out = []
        for n in nodes:
            if isinstance(n, rewrite.Call):
                out.append(self.call(n))
            else:
                out.append(n.value)
        return "".join(out)

    def call(self, c: rewrite.Call) -> str:
        name = c.open[:-1].strip().upper() if c.open.endswith("(") else ""
        args = [[n for n in a if not (isinstance(n, Token) and n.type == Token.WSPACE)] for a, _ in c.args]
        if name == "INDEX" and len(args) == 3 and _is_zero(args[1]):
            columns = self._columns(args[0])
            if columns:
                self.done.whole_column_index += 1
                return f"CHOOSE({self.render(c.args[2][0]).strip()},{','.join(columns)})"
        if name == "SUMPRODUCT" and len(args) == 1 and len(args[0]) == 1 and isinstance(args[0][0], rewrite.Call) \
                and args[0][0].open.endswith("("):
            self.array = True
            self.done.array_idioms += 1
            return self.call(args[0][0])
        return c.open + "".join(self.render(a) + s for a, s in c.args) + c.close

    def _columns(self, arg: list) -> list[str] | None:
        """The single-column ranges of a multi-column reference (an A1 range or a name of one)."""
        if len(arg) != 1 or not isinstance(arg[0], Token) or arg[0].subtype != Token.RANGE:
            return None
        text = self.names.get(arg[0].value.lower(), arg[0].value)
        sheet, bang, ref = text.rpartition("!")
        if not bang or ":" in sheet.strip("'"):
            return None
        try:
            lo_c, lo_r, hi_c, hi_r = range_boundaries(ref.replace("$", ""))
        except (ValueError, TypeError):
            return None
        if None in (lo_c, lo_r, hi_c, hi_r) or hi_c == lo_c or hi_c - lo_c + 1 > MAX_CHOOSE:
            return None
        return [f"{sheet}!${get_column_letter(k)}${lo_r}:${get_column_letter(k)}${hi_r}"
                for k in range(lo_c, hi_c + 1)]


def _is_zero(arg: list) -> bool:
    return len(arg) == 1 and isinstance(arg[0], Token) and arg[0].subtype == Token.NUMBER \
        and arg[0].value.strip() in ("0", "0.0")


def formula(text: str, found: dict[str, Table], names: dict[str, str], done: Portable,
            row: int | None = None) -> tuple[str, bool, bool]:
    """(`text` made portable, whether it must be an array formula, whether a table reference is
    left). `text` may start with '='; the result starts with one when it did."""
    step = _Pass(found, names, done, row)
    eq = text.startswith("=")
    nodes = rewrite.parse(step.tokens(text if eq else "=" + text))
    out = step.render(nodes)
    return ("=" if eq else "") + out, step.array, step.left



def openpyxl_tables(wb: Any) -> dict[str, Table]:
    """The tables of an openpyxl workbook, as `formula` wants them (by lower-case name)."""
    found = {}
    for ws in wb.worksheets:
        for t in ws.tables.values():
            lo_c, lo_r, _, hi_r = range_boundaries(t.ref)
            found[t.displayName.lower()] = Table(t.displayName, ws.title, lo_c, lo_r, hi_r,
                                                 1 if t.headerRowCount is None else int(t.headerRowCount),
                                                 int(t.totalsRowCount or 0), tuple(c.name for c in t.tableColumns))
    return found
