"""Large workbooks: the sheets the e-mail export only copies are found by streaming
their XML (lxml iterparse, each row freed once read) and written back byte for byte; the values
LibreOffice recalculated are read the same way, only for the sheets and chart ranges the export
needs, instead of loading every cell through openpyxl.

A sheet is only copied when none of its formulas calls one of our functions or needs a portable
rewrite (export.portable), every formula cell has a cached value, and no validation or
conditional format of it needs a change.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lxml import etree
from openpyxl.utils import range_boundaries
from openpyxl.utils.cell import coordinate_from_string

from ..functions.registry import BY_NAME
from ..ooxml import opening, package, partedit, xmlcells

# a formula that may need the export's work: a call of ours, or an idiom export.portable rewrites
_OURS = re.compile("|".join(re.escape(n) for n in sorted(BY_NAME, key=len, reverse=True)), re.I)
_PORTABLE = re.compile(r"\[|SUMPRODUCT|INDEX\s*\(|\d[eE]\d", re.I)
_KEEPS = ("str", "inlineStr")  # a text result may be cached as an empty <v/> or inline


def _events(data: bytes, tags: tuple[str, ...]) -> Iterator[etree._Element]:
    """End events of `tags` (local names, any namespace); every row is freed once read."""
    parser = etree.iterparse(io.BytesIO(data), events=("end",), tag=[f"{{*}}{t}" for t in tags],
                             resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)
    for _, el in parser:
        yield el
        if etree.QName(el).localname in ("row", "dataValidations", "conditionalFormatting"):
            el.clear(keep_tail=True)
            while el.getprevious() is not None:
                del el.getparent()[0]


def _needles() -> list[bytes]:
    """Texts (in capitals) whose presence in a formula means it may need the export's work: the
    prefixes of our function names, a structured reference's bracket, the array idioms,
    character references."""
    words = sorted({n.split("_")[0] + "_" for n in BY_NAME} | {"SUMPRODUCT", "INDEX("})
    return [*(w.encode() for w in words), b"[", b"&#"]


NEEDLES = _needles()
_F_TEXT = re.compile(rb"<f(?:\s[^>]*)?>([^<]*)</f>")
_EXPONENT = re.compile(rb"\d[eE]\d")
_UNUSUAL = (b"<![CDATA[", b"dataValidation", b"conditionalFormatting", b":f>", b":f ")


PIECE = 8 << 20  # bytes of a sheet searched at a time (ends at a row's end, so no formula is cut)


def _pieces(data: bytes) -> Iterator[memoryview]:
    view, start = memoryview(data), 0
    while start < len(data):
        end = data.find(b"</row>", start + PIECE)
        end = len(data) if end < 0 else end + len(b"</row>")
        yield view[start:end]
        start = end


def only_copied(data: bytes) -> bool:
    """Whether a worksheet part needs no edit by the export (see the module's docstring).

    The part has passed the safe parser (package.read_parts). A usual part is decided on its bytes
    with C-speed searches: the texts of its `<f>` elements hold none of NEEDLES and no exponent,
    and there are as many formulas (`<f>`, `<f ...>`) as formulas directly followed by a cached
    value (`</f><v>`, `/><v>`: CT_Cell's children come in the order f, v). A part with CDATA,
    prefixed cells, validations or conditional formats is read element by element instead
    (`_only_copied_tree`), and so is one whose counts differ. A part in doubt takes the export's
    full path."""
    if any(u in data for u in _UNUSUAL):
        return _only_copied_tree(data)
    for piece in _pieces(data):
        formulas = b"\n".join(_F_TEXT.findall(piece)).upper()
        if any(n in formulas for n in NEEDLES) or _EXPONENT.search(formulas):
            return False
    total = data.count(b"<f>") + data.count(b"<f ")
    # an empty <v/> (openpyxl writes one for every formula it saves) is no cached value: read the tree
    empty = b"<v/>" in data or b"<v></v>" in data
    if not empty and total == data.count(b"</f><v>") + data.count(b"/><v>"):
        return True
    return _only_copied_tree(data)


def _only_copied_tree(data: bytes) -> bool:
    for el in _events(data, ("row", "dataValidation", "conditionalFormatting")):
        name = etree.QName(el).localname
        if name == "row":
            for c in el:
                f = c.find(f"{{{etree.QName(c).namespace}}}f") if isinstance(c.tag, str) else None
                if f is None:
                    continue
                text = f.text or ""
                if _OURS.search(text) or _PORTABLE.search(text):
                    return False
                v = c.find(f"{{{etree.QName(c).namespace}}}v")
                if (v is None or v.text is None) and c.get("t") not in _KEEPS:
                    return False
        elif name == "dataValidation" and el.get("type") == "list" \
                and el.get("showErrorMessage", "0") in ("0", "false"):
            return False
        else:
            texts = [x.text or "" for x in el.iter() if etree.QName(x).localname in ("formula", "formula1", "formula2")]
            if any(_PORTABLE.search(t) or _OURS.search(t) for t in texts):
                return False
    return True


def copied_sheets(parts: dict[str, bytes]) -> set[str]:
    """Names of the sheets the export only copies."""
    return {sheet for sheet, part in package.sheet_parts(parts).items() if only_copied(parts[part])}


def chart_ranges(parts: dict[str, bytes]) -> dict[str, list[tuple[int, int, int, int]]]:
    """{sheet: [(min_col, min_row, max_col, max_row), ...]} of every chart series reference."""
    out: dict[str, list[tuple[int, int, int, int]]] = {}
    for part in parts:
        if partedit.content_type(parts, part) != "application/vnd.openxmlformats-officedocument.drawingml.chart+xml":
            continue
        for f in partedit.root_of(parts, part).iter("{http://schemas.openxmlformats.org/drawingml/2006/chart}f"):
            sheet, bang, rng = (f.text or "").strip().rpartition("!")
            if not bang or sheet.startswith("("):
                continue
            sheet = sheet[1:-1].replace("''", "'") if sheet.startswith("'") and sheet.endswith("'") else sheet
            try:
                box = range_boundaries(rng.replace("$", ""))
            except (ValueError, TypeError):
                continue
            if None not in box:
                out.setdefault(sheet, []).append(box)
    return out


class Cell:
    """What charts and the export read of a recalculated cell: its value."""

    __slots__ = ("value",)

    def __init__(self, value: Any = None):
        self.value = value


class SheetValues:
    """A sheet's recalculated values, read like an openpyxl worksheet (ws[ref].value, iter_rows)."""

    def __init__(self) -> None:
        self.cells: dict[tuple[int, int], Cell] = {}
        self.max_row = self.max_column = 0

    def __getitem__(self, ref: str) -> Cell:
        col, row = coordinate_from_string(ref)
        key = (row, range_boundaries(f"{col}1")[0])
        if key not in self.cells:
            self.cells[key] = Cell()
        return self.cells[key]

    def iter_rows(self, min_row: int, max_row: int, min_col: int, max_col: int,
                  values_only: bool = True) -> Iterator[tuple[Any, ...]]:
        for r in range(min_row, max_row + 1):
            yield tuple(self.cells.get((r, c), Cell()).value for c in range(min_col, max_col + 1))


class Values:
    """A recalculated workbook's values, read like openpyxl's `load_workbook(data_only=True)`."""

    def __init__(self, sheetnames: list[str]):
        self.sheetnames = sheetnames
        self.sheets = {s: SheetValues() for s in sheetnames}

    def __getitem__(self, sheet: str) -> SheetValues:
        return self.sheets[sheet]


def read_values(path: Path, partial: set[str], ranges: dict[str, list[tuple[int, int, int, int]]],
                originals: dict[str, bytes] | None = None, own_shared: list[str] | None = None) -> Values:
    """The cached values of the workbook at `path` (LibreOffice's output): every cell of each
    sheet, except the sheets in `partial`, of which only the cells inside `ranges` are read;
    a sheet in `originals` ({sheet: worksheet part}) is read from there instead."""
    with zipfile.ZipFile(path) as z:
        infos = {i.filename: i for i in z.infolist()}

        def read(name: str) -> bytes | None:
            return opening._read_part(path, z, infos[name]) if name in infos else None
        small = {n: read(n) for n in ("xl/workbook.xml", "xl/_rels/workbook.xml.rels")}
        if None in small.values():
            raise package.BadWorkbookError(f"{path} is not a workbook")
        sheets = package.sheet_parts(small)  # type: ignore[arg-type]
        values = Values(list(sheets))
        shared = xmlcells.shared_strings(read("xl/sharedStrings.xml"))
        for sheet, part in sheets.items():
            data = (originals or {}).get(sheet) or read(part)
            if data is None:
                continue
            boxes = ranges.get(sheet, []) if sheet in partial else None
            if boxes == []:
                continue
            _read_sheet(data, own_shared if sheet in (originals or {}) else shared, values[sheet], boxes)
    return values


def _read_sheet(data: bytes, shared: list[str], out: SheetValues, boxes: list | None) -> None:
    for row in _events(data, ("row",)):
        for c in row:
            if not isinstance(c.tag, str) or not c.get("r"):
                continue
            col, r = coordinate_from_string(c.get("r"))
            k = range_boundaries(f"{col}1")[0]
            out.max_row, out.max_column = max(out.max_row, r), max(out.max_column, k)
            if boxes is not None and not any(b[0] <= k <= b[2] and b[1] <= r <= b[3] for b in boxes):
                continue
            value = xmlcells.cached_value(c, shared)
            if value is not None:
                out.cells[(r, k)] = Cell(value)

