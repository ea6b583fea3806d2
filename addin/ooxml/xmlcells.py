"""Cells of a worksheet part edited with lxml (parts are parsed and written by safexml).

lxml keeps every prefix and namespace declaration a part has (also those only `mc:Ignorable`
names), so a part edited here serializes with the writer's own prefixes (`x:` from the Open XML
SDK included). Elements are found by namespace URI, never by prefix; the original XML
declaration is written back as it was (safexml.serialize).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from lxml import etree
from openpyxl.utils import column_index_from_string, range_boundaries
from openpyxl.utils.cell import coordinate_from_string, get_column_letter

from .safexml import BadWorkbookError, edit, iter_events, parse

EXCEL_ERRORS = {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"}
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
STRICT_MAIN = "http://purl.oclc.org/ooxml/spreadsheetml/main"


def ns(root: etree._Element) -> str:
    """The namespace URI of the part's root (transitional or strict SpreadsheetML)."""
    return etree.QName(root).namespace or ""


def q(root: etree._Element, local: str) -> str:
    return f"{{{ns(root)}}}{local}"


def col_of(ref: str) -> str:
    return coordinate_from_string(ref)[0]


def _row_no(row: etree._Element) -> int:
    return int(row.get("r"))


class Sheet:
    """A worksheet part's tree with its rows and cells found by namespace."""

    def __init__(self, root: etree._Element):
        self.root, self.ns = root, ns(root)
        data = root.find(self.q("sheetData"))
        if data is None:
            raise BadWorkbookError("worksheet part has no sheetData")
        self.data = data
        self._rows: dict[int, etree._Element] | None = None

    def q(self, local: str) -> str:
        return f"{{{self.ns}}}{local}"

    def rows(self) -> dict[int, etree._Element]:
        """Row number -> row element (read once; rows added through `row` keep it current)."""
        if self._rows is None:
            self._rows = {_row_no(r): r for r in self.data.iterchildren(self.q("row")) if r.get("r")}
        return self._rows

    def cells(self) -> Iterator[etree._Element]:
        return self.data.iter(self.q("c"))

    def row(self, r: int, create: bool = True) -> etree._Element | None:
        rows = self.rows()
        if r in rows or not create:
            return rows.get(r)
        new = etree.Element(self.q("row"), r=str(r))
        later = [n for n in rows if n > r]
        if later:
            rows[min(later)].addprevious(new)
        else:
            self.data.append(new)
        rows[r] = new
        return new

    def cell(self, ref: str, create: bool = True) -> etree._Element | None:
        col, r = coordinate_from_string(ref)
        row = self.row(r, create)
        if row is None:
            return None
        by_col = {col_of(c.get("r")): c for c in row.iterchildren(self.q("c")) if c.get("r")}
        if col in by_col or not create:
            return by_col.get(col)
        new = etree.Element(self.q("c"), r=ref)
        later = [c for k, c in by_col.items() if column_index_from_string(k) > column_index_from_string(col)]
        if later:
            min(later, key=lambda c: column_index_from_string(col_of(c.get("r")))).addprevious(new)
        else:
            row.append(new)
        row.attrib.pop("spans", None)
        return new

    def formula(self, cell: etree._Element) -> etree._Element | None:
        return cell.find(self.q("f"))

    def set_value(self, cell: etree._Element, value: Any) -> None:
        """`cell` carrying `value` as its cached value; its formula stays."""
        for child in list(cell):
            if child.tag in (self.q("v"), self.q("is")):
                cell.remove(child)
        kind, text = value_parts(value)
        cell.attrib.pop("t", None)
        if kind:
            cell.set("t", kind)
        v = etree.Element(self.q("v"))
        v.text = text
        f = self.formula(cell)
        if f is not None:  # <f> before <v> (CT_Cell order)
            f.addnext(v)
        else:
            cell.insert(0, v)

    def set_constant(self, cell: etree._Element, value: Any, style: str | None = None) -> None:
        """`cell` as a constant: numbers as values, text inline (never a formula)."""
        for child in list(cell):
            cell.remove(child)
        for attr in ("t", "cm", "vm"):
            cell.attrib.pop(attr, None)
        if style:
            cell.set("s", style)
        if value is None or value == "":
            return
        if isinstance(value, bool):
            cell.set("t", "b")
            etree.SubElement(cell, self.q("v")).text = str(int(value))
            return
        if isinstance(value, (int, float)) and math.isfinite(value):
            etree.SubElement(cell, self.q("v")).text = repr(float(value))
            return
        cell.set("t", "inlineStr")  # text (and a non-finite number, which no <v> may hold)
        t = etree.SubElement(etree.SubElement(cell, self.q("is")), self.q("t"))
        t.text = str(value)
        t.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")

    def drop_formula(self, cell: etree._Element) -> None:
        """`cell` without its formula: its cached value stays as a constant."""
        f = self.formula(cell)
        if f is not None:
            cell.remove(f)
        if cell.find(self.q("v")) is None:
            self.set_value(cell, "#N/A")

    def formula_cells(self) -> Iterator[tuple[str, str, etree._Element]]:
        """(reference, formula text, cell) of every cell with formula text."""
        for c in self.cells():
            f = self.formula(c)
            if f is not None and f.text:
                yield c.get("r"), f.text, c

    def array_ranges(self) -> Iterator[str]:
        """References of every cell inside an array formula's range (t="array" ref=...)."""
        for c in self.cells():
            f = self.formula(c)
            if f is not None and f.get("t") == "array" and f.get("ref"):
                yield from refs_in(f.get("ref"))

    def expand_shared(self, keep: Callable[[str], bool] = lambda f: False) -> int:
        """Shared formulas written out cell by cell (openpyxl's Translator), except groups whose
        master formula `keep` accepts; returns the number of cells given their own formula."""
        from openpyxl.formula.translate import Translator

        masters = {}
        for c in self.cells():
            f = self.formula(c)
            if f is not None and f.get("t") == "shared" and f.text and f.get("ref"):
                masters[f.get("si")] = (c.get("r"), f.text)
        done = 0
        for c in self.cells():
            f = self.formula(c)
            if f is None or f.get("t") != "shared" or f.get("si") not in masters:
                continue
            origin, text = masters[f.get("si")]
            if keep(text):
                continue
            if c.get("r") != origin:
                f.text = Translator("=" + text, origin=origin).translate_formula(c.get("r"))[1:]
            for attr in ("t", "si", "ref"):
                f.attrib.pop(attr, None)
            done += 1
        return done


def refs_in(rng: str) -> Iterator[str]:
    lo_c, lo_r, hi_c, hi_r = range_boundaries(rng)
    for r in range(lo_r, hi_r + 1):
        for c in range(lo_c, hi_c + 1):
            yield f"{get_column_letter(c)}{r}"


def value_parts(value: Any) -> tuple[str | None, str]:
    """(t attribute, <v> text) of a cached value."""
    if isinstance(value, bool):
        return "b", str(int(value))
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "e", "#NUM!"
        return None, repr(float(value)) if isinstance(value, float) else str(value)
    text = "" if value is None else str(value)
    if text in EXCEL_ERRORS:
        return "e", text
    return "str", text


def _text(el: etree._Element | None) -> str:
    """All text of the `t` descendants of `el` (a rich string has several runs)."""
    if el is None:
        return ""
    return "".join(t.text or "" for t in el.iter(f"{{{etree.QName(el).namespace}}}t"))


def cached_value(cell: etree._Element, shared: list[str] | None = None) -> Any:
    """The value a cell shows (its cached value for a formula): float, str, bool or None when it
    has none. A shared string is looked up in `shared` (its index text when `shared` is None; None
    when out of range); a number that does not read as one stays text. ECMA-376 Part 1
    §18.3.1.4 (c), §18.3.1.96 (v), §18.4.8 (si)."""
    q = f"{{{etree.QName(cell).namespace}}}"
    t = cell.get("t", "n")
    if t == "inlineStr":
        inline = cell.find(f"{q}is")
        return None if inline is None else _text(inline)
    v = cell.find(f"{q}v")
    if v is None or v.text is None:
        return None
    if t == "s" and shared is not None:
        i = v.text.strip()
        return shared[int(i)] if i.isdigit() and int(i) < len(shared) else None
    if t == "b":
        return v.text.strip() == "1"
    if t in ("str", "e", "s"):
        return v.text
    try:
        return float(v.text)
    except ValueError:
        return v.text


def shared_strings(data: bytes | None) -> list[str]:
    """The shared-string table (xl/sharedStrings.xml) as texts, in index order."""
    if not data:
        return []
    root = parse("xl/sharedStrings.xml", data)
    return [_text(si) for si in root.iterchildren(f"{{{ns(root)}}}si")]


def read_range(sheet: bytes, ref: str, shared: list[str]) -> list[list[Any]]:
    """The values of range `ref` ('A1:J9') of a worksheet part, row by row."""
    lo_col, lo_row, hi_col, hi_row = range_boundaries(ref)
    grid: list[list[Any]] = [[None] * (hi_col - lo_col + 1) for _ in range(hi_row - lo_row + 1)]
    root = parse("worksheet", sheet)
    for c in root.iter(q(root, "c")):
        if not c.get("r"):
            continue
        col, row = coordinate_from_string(c.get("r"))
        ci = column_index_from_string(col)
        if lo_row <= row <= hi_row and lo_col <= ci <= hi_col:
            grid[row - lo_row][ci - lo_col] = cached_value(c, shared)
    return grid


def grow_ref(ref: str, last_row: int) -> str:
    """Range `ref` extended down to `last_row` (never shrunk)."""
    lo_col, lo_row, hi_col, hi_row = range_boundaries(ref)
    return f"{get_column_letter(lo_col)}{lo_row}:{get_column_letter(hi_col)}{max(hi_row, last_row)}"


def set_values(data: bytes, values: dict[str, Any]) -> bytes:
    """A worksheet part with cached values for cells by reference (formula cells keep their formulas)."""
    def change(root: etree._Element) -> None:
        s = Sheet(root)
        for ref, value in values.items():
            s.set_value(s.cell(ref), value)
    return edit("worksheet", data, change)


class StreamCell(NamedTuple):
    """One cell as stored: reference, type attribute (t), formula text (None: no formula; '' for a
    shared formula's follower), cached value text (None: none), and the shared formula's index (si)."""

    ref: str
    type: str
    formula: str | None
    value: str | None
    shared: str | None = None

    @property
    def has_formula(self) -> bool:
        return self.formula is not None


def stream(name: str, data: bytes, formulas_only: bool = False) -> Iterator[StreamCell]:
    """Every <c> of worksheet part `name` (`data`) in document order (only those with a formula when
    `formulas_only`), read as a stream, one row at a time: each row is dropped with those before it
    once read, so a 1,048,576-row sheet costs the size of one row (verify reads every cell of every
    sheet this way, never building a tree)."""
    for row in iter_events(name, data, (f"{{{MAIN}}}row", f"{{{STRICT_MAIN}}}row")):
        ns = row.tag[:row.tag.index("}") + 1]
        found = (f.getparent() for f in row.iter(ns + "f")) if formulas_only else row.iter(ns + "c")
        for el in found:
            f = el.find(ns + "f")
            v = el.findtext(ns + "v")
            inline = el.find(ns + "is") if v is None else None
            if inline is not None:  # an inline string's text
                v = "".join(t.text or "" for t in inline.iter(ns + "t"))
            yield StreamCell(el.get("r", "?"), el.get("t", "n"), None if f is None else (f.text or ""), v,
                             f.get("si") if f is not None and f.get("t") == "shared" else None)
        row.clear(keep_tail=False)
        while row.getprevious() is not None:
            del row.getparent()[0]
