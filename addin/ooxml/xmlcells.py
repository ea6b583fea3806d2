"""Cells of a worksheet part, edited as text.

Excel's own parts declare namespaces that only `mc:Ignorable` mentions; an XML library that
re-serializes the part drops those declarations and Excel then calls the file corrupt. So
rows and cells are located with patterns over the part's text, and only they are rewritten.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any
from xml.sax.saxutils import escape, unescape

from openpyxl.utils import column_index_from_string, range_boundaries
from openpyxl.utils.cell import coordinate_from_string, get_column_letter

ROW = re.compile(r"<row\b[^>]*?\br=\"(\d+)\"[^>]*?(?:/>|>.*?</row>)", re.S)
CELL = re.compile(r"<c\b[^>]*?(?:/>|>.*?</c>)", re.S)
FORMULA = re.compile(r"<f\b([^>]*?)(?:/>|>(.*?)</f>)", re.S)
EXCEL_ERRORS = {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"}
_ENTITIES = {"&quot;": '"', "&apos;": "'"}  # besides &amp; &lt; &gt;, which unescape always reads


def ref_of(cell: str) -> str:
    return re.search(r'\br="([A-Z]+\d+)"', cell).group(1)


def cells_by_column(row_xml: str) -> dict[str, str]:
    """Column letter -> cell XML of one row."""
    return {re.match(r"[A-Z]+", ref_of(c)).group(0): c for c in CELL.findall(row_xml)}


def style_of(cell: str | None) -> str | None:
    m = re.search(r'\bs="(\d+)"', cell or "")
    return m.group(1) if m else None


def value_xml(value: Any) -> tuple[str | None, str]:
    """(t attribute, inner XML) of a cached or constant value."""
    if isinstance(value, bool):
        return "b", f"<v>{int(value)}</v>"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "e", "<v>#NUM!</v>"
        return None, f"<v>{float(value)!r}</v>" if isinstance(value, float) else f"<v>{value}</v>"
    text = "" if value is None else str(value)
    if text in EXCEL_ERRORS:
        return "e", f"<v>{text}</v>"
    return "str", f"<v>{escape(text)}</v>"


def text_cell(ref: str, value: Any, style: str | None = None) -> str:
    """A constant cell; text goes in inline (never a formula, no shared-strings edit)."""
    s = f' s="{style}"' if style else ""
    if value is None or value == "":
        return f'<c r="{ref}"{s}/>'
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<c r="{ref}"{s}><v>{float(value)!r}</v></c>'
    return f'<c r="{ref}"{s} t="inlineStr"><is><t xml:space="preserve">{escape(str(value))}</t></is></c>'


def with_value(cell: str | None, ref: str, value: Any) -> str:
    """`cell` (or a new one at `ref`) carrying `value` as its cached value; its formula stays."""
    if cell is None:
        cell = f'<c r="{ref}"/>'
    head = re.match(r"<c\b[^>]*?(?=/?>)", cell).group(0)
    head = re.sub(r'\st="[^"]*"', "", head)
    f = FORMULA.search(cell)
    kind, inner = value_xml(value)
    t = f' t="{kind}"' if kind else ""
    return f"{head}{t}>{f.group(0) if f else ''}{inner}</c>"


def edit_rows(sheet: str, edits: dict[int, Callable[[str | None], str]]) -> str:
    """Apply `edits[r](row XML or None)` to rows r; new rows are inserted in order."""
    found = {int(m.group(1)): m for m in ROW.finditer(sheet)}
    pieces, pos = [], 0
    existing = sorted(r for r in edits if r in found)
    inserts = sorted(r for r in edits if r not in found)
    for r in existing:
        m = found[r]
        pieces += [sheet[pos:m.start()], edits[r](m.group(0))]
        pos = m.end()
    pieces.append(sheet[pos:])
    out = "".join(pieces)
    for r in inserts:
        out = _insert_row(out, r, edits[r](None))
    return out


def _insert_row(sheet: str, r: int, row_xml: str) -> str:
    later = next((m for m in ROW.finditer(sheet) if int(m.group(1)) > r), None)
    if later:
        return sheet[:later.start()] + row_xml + sheet[later.start():]
    if "<sheetData/>" in sheet:
        return sheet.replace("<sheetData/>", f"<sheetData>{row_xml}</sheetData>", 1)
    return sheet.replace("</sheetData>", row_xml + "</sheetData>", 1)


def set_row_cells(row_xml: str | None, r: int, cells: dict[str, str]) -> str:
    """Row `r` with the given column -> cell XML set (other cells kept, column order kept)."""
    current = cells_by_column(row_xml) if row_xml else {}
    current.update(cells)
    ordered = "".join(current[c] for c in sorted(current, key=column_index_from_string))
    if row_xml:
        head = re.sub(r'\sspans="[^"]*"', "", re.match(r"<row\b[^>]*?(?=/?>)", row_xml).group(0))
        return f"{head}>{ordered}</row>"
    return f'<row r="{r}">{ordered}</row>'


def set_values(sheet: str, values: dict[str, Any]) -> str:
    """Cached values for cells by reference (formula cells keep their formulas)."""
    by_row: dict[int, dict[str, Any]] = {}
    for ref, value in values.items():
        col, r = coordinate_from_string(ref)
        by_row.setdefault(r, {})[col] = value

    def edit(r: int) -> Callable[[str | None], str]:
        def apply(row_xml: str | None) -> str:
            cells = cells_by_column(row_xml) if row_xml else {}
            return set_row_cells(row_xml, r, {c: with_value(cells.get(c), f"{c}{r}", v)
                                              for c, v in by_row[r].items()})
        return apply

    return edit_rows(sheet, {r: edit(r) for r in by_row})


def formula_cells(sheet: str) -> Iterator[tuple[str, str, str]]:
    """(reference, formula text unescaped, cell XML) of every cell with formula text."""
    for cell in CELL.findall(sheet):
        f = FORMULA.search(cell)
        if f and f.group(2):
            yield ref_of(cell), unescape(f.group(2), _ENTITIES), cell


def array_ranges(sheet: str) -> Iterator[str]:
    """References of every cell inside an array formula's range (t="array" ref=...)."""
    for cell in CELL.findall(sheet):
        f = FORMULA.search(cell)
        m = re.search(r'\bref="([^"]+)"', f.group(1)) if f and 't="array"' in f.group(1) else None
        if m:
            lo_c, lo_r, hi_c, hi_r = range_boundaries(m.group(1))
            for r in range(lo_r, hi_r + 1):
                for c in range(lo_c, hi_c + 1):
                    yield f"{get_column_letter(c)}{r}"


def replace_formula(cell: str, formula: str) -> str:
    """`cell` with its formula text replaced (escaped for XML)."""
    f = FORMULA.search(cell)
    new = f"<f{f.group(1)}>{escape(formula)}</f>"
    return cell[:f.start()] + new + cell[f.end():]


def drop_formula(cell: str) -> str:
    """`cell` without its formula: its cached value stays as a constant."""
    f = FORMULA.search(cell)
    return cell[:f.start()] + cell[f.end():]
