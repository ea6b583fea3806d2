"""Cells of a worksheet part read and written with lxml, namespace-aware.

Elements are created in the namespace of the part's root, so lxml reuses whatever prefix the
part already binds to it (`x:` from the Open XML SDK, none from Excel); every declaration,
including those only `mc:Ignorable` names, is kept because the tree is never rebuilt.
Values follow ECMA-376 Part 1 §18.3.1.4 (c), §18.3.1.96 (v), §18.4.8 (si/t shared strings).
"""

from __future__ import annotations

import math
from typing import Any

from lxml import etree
from openpyxl.utils import column_index_from_string, range_boundaries
from openpyxl.utils.cell import coordinate_from_string, get_column_letter

from .safexml import parse

XML_NS = "http://www.w3.org/XML/1998/namespace"
ERRORS = {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"}


def _q(root: etree._Element, tag: str) -> str:
    return f"{{{etree.QName(root).namespace}}}{tag}"


def _text(el: etree._Element | None, ns: str) -> str:
    """All text of `t` descendants (a rich string has several runs)."""
    if el is None:
        return ""
    return "".join(t.text or "" for t in el.iter(f"{{{ns}}}t"))


def shared_strings(data: bytes | None) -> list[str]:
    if not data:
        return []
    root = parse("xl/sharedStrings.xml", data)
    ns = etree.QName(root).namespace
    return [_text(si, ns) for si in root.iterchildren(f"{{{ns}}}si")]


def cell_value(c: etree._Element, strings: list[str]) -> Any:
    """The value a cell shows (its cached value for a formula): float, str, bool or None."""
    ns = etree.QName(c).namespace
    t = c.get("t", "n")
    if t == "inlineStr":
        return _text(c.find(f"{{{ns}}}is"), ns)
    v = c.findtext(f"{{{ns}}}v")
    if v is None:
        return None
    if t == "s":
        return strings[int(v)] if v.strip().isdigit() and int(v) < len(strings) else None
    if t == "b":
        return v.strip() == "1"
    if t in ("str", "e"):
        return v
    try:
        return float(v)
    except ValueError:
        return v


def read_range(sheet: bytes, ref: str, strings: list[str]) -> list[list[Any]]:
    """The values of range `ref` ('A1:J9') of a worksheet part, row by row."""
    lo_col, lo_row, hi_col, hi_row = range_boundaries(ref)
    grid = [[None] * (hi_col - lo_col + 1) for _ in range(hi_row - lo_row + 1)]
    root = parse("worksheet", sheet)
    for c in root.iter(_q(root, "c")):
        r = c.get("r")
        if not r:
            continue
        col, row = coordinate_from_string(r)
        ci = column_index_from_string(col)
        if lo_row <= row <= hi_row and lo_col <= ci <= hi_col:
            grid[row - lo_row][ci - lo_col] = cell_value(c, strings)
    return grid


def row_element(root: etree._Element, r: int, create: bool = True) -> etree._Element | None:
    """Row `r` of the sheet's sheetData (inserted in order when missing and `create`)."""
    data = root.find(_q(root, "sheetData"))
    after = None
    for row in data.iterchildren(_q(root, "row")):
        n = int(row.get("r", "0"))
        if n == r:
            return row
        if n < r:
            after = row
    if not create:
        return None
    new = etree.Element(_q(root, "row"), r=str(r))
    if after is None:
        data.insert(0, new)
    else:
        after.addnext(new)
    if after is not None and after.tail:
        new.tail = after.tail
    return new


def cells_by_column(row: etree._Element | None) -> dict[str, etree._Element]:
    if row is None:
        return {}
    ns = etree.QName(row).namespace
    return {coordinate_from_string(c.get("r"))[0]: c for c in row.iterchildren(f"{{{ns}}}c") if c.get("r")}


def set_constant(row: etree._Element, col: str, value: Any, style: str | None) -> None:
    """Cell `col` of `row` holds the constant `value` (text inline, so '=1+1' stays text)."""
    ns = etree.QName(row).namespace
    ref = f"{col}{row.get('r')}"
    cells = cells_by_column(row)
    old = cells.get(col)
    c = etree.Element(f"{{{ns}}}c", r=ref)
    if style:
        c.set("s", style)
    if isinstance(value, bool):
        c.set("t", "b")
        etree.SubElement(c, f"{{{ns}}}v").text = str(int(value))
    elif isinstance(value, (int, float)) and math.isfinite(value):
        etree.SubElement(c, f"{{{ns}}}v").text = repr(float(value))
    elif value is not None and value != "":
        c.set("t", "inlineStr")
        t = etree.SubElement(etree.SubElement(c, f"{{{ns}}}is"), f"{{{ns}}}t")
        t.set(f"{{{XML_NS}}}space", "preserve")
        t.text = str(value)
    if old is not None:
        row.replace(old, c)
        return
    index = column_index_from_string(col)
    later = [x for k, x in cells.items() if column_index_from_string(k) > index]
    if later:
        later[0].addprevious(c)
    else:
        row.append(c)


def grow_ref(ref: str, last_row: int) -> str:
    """Range `ref` extended down to `last_row` (never shrunk)."""
    lo_col, lo_row, hi_col, hi_row = range_boundaries(ref)
    return f"{get_column_letter(lo_col)}{lo_row}:{get_column_letter(hi_col)}{max(hi_row, last_row)}"
