"""The e-mail copy in a form every spreadsheet engine computes the same: Excel, LibreOffice,
Gnumeric (`ssconvert --recalc`) and the `formulas` engine (measured in
`../shared/reference/portable-formulas.md`, section 3; checked by tests/workbook/test_portable.py).

The template keeps its table references for Excel users (rows added to a table grow them); the
copy is a read-mostly file, so every formula, defined name and validation of it is rewritten:

1. Structured references (`Devices[TFLOP/s]`, `Runs[[#Data],[Col]]`, `Prices[[A]:[B]]`) become
   absolute A1 ranges over the table's rows (`'Devices'!$D$2:$D$37`); Gnumeric cannot parse
   them and `formulas` cannot load a file with them. Defined names keep their names
   (`DeviceNames`) and point at the ranges.
2. `INDEX(X,0,k)` over a multi-column X becomes `CHOOSE(k,col1,...,colN)`: Gnumeric returns
   #REF! for a whole-column INDEX and `formulas` the first cell only.
3. `SUMPRODUCT(f(...))` with one argument that is one call (the idiom that makes Excel evaluate
   `MIN/MAX(array expression)` as an array) becomes `f(...)` in a single-cell array formula
   (`<f t="array">`, Excel's `{=...}`, every Excel since 2007): Gnumeric gives #VALUE! or a
   wrong number by implicit intersection for the idiom.
4. Exponents carry a sign (`3600E12` -> `3600E+12`, as Excel writes them); `formulas` refuses
   the unsigned form, which the MS-XLSX grammar allows.
5. Chart and drawing parts declare their namespace prefixes on the root element (Gnumeric drops
   a chart whose inner elements declare `c:`/`a:`), and list validations that allow free entry
   (`showErrorMessage="0"`) say so as `showErrorMessage="1" errorStyle="information"`, which
   Gnumeric keeps (it drops the former) and which still lets a number be typed as a device.

Formulas are tokenized (openpyxl's tokenizer) and parsed into calls (rewrite.parse); text is
never pattern-matched.
"""

from __future__ import annotations

from lxml import etree
from openpyxl.utils import range_boundaries
from openpyxl.utils.cell import coordinate_from_string, get_column_letter

from ..functions.portable import Portable, Table, a1, formula, structured
from ..ooxml import package, partedit, xmlcells

TABLE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/table"
DRAWING_CTS = ("application/vnd.openxmlformats-officedocument.drawingml.chart+xml",
               "application/vnd.openxmlformats-officedocument.drawing+xml")


def tables(parts: dict[str, bytes]) -> dict[str, Table]:
    """Every table of the workbook by its name in lower case (Excel's names ignore case)."""
    found: dict[str, Table] = {}
    for sheet, part in package.sheet_parts(parts).items():
        rels = partedit.rels_name(part)
        if rels not in parts:
            continue
        for rel in partedit.relationships(parts, rels):
            target = partedit.target_of(rels, rel)
            if rel.get("Type") != TABLE_REL or target not in parts:
                continue
            root = partedit.root_of(parts, target)
            name = root.get("displayName") or root.get("name")
            try:
                lo_c, lo_r, _, hi_r = range_boundaries(root.get("ref", ""))
            except (ValueError, TypeError):
                continue
            cols = tuple(c.get("name", "") for c in root.iter(xmlcells.q(root, "tableColumn")))
            if name and lo_c and lo_r and hi_r and cols:
                found[name.lower()] = Table(name, sheet, lo_c, lo_r, hi_r, int(root.get("headerRowCount", "1")),
                                            int(root.get("totalsRowCount", "0")), cols)
    return found


def structured_a1(parts: dict[str, bytes], ref: str) -> str | None:
    """The A1 range the copy writes for the structured reference `ref` (`Devices[Name]` ->
    `'Devices'!$A$2:$A$59`), or None when the workbook has no such table or column."""
    return structured(ref, tables(parts))


def _names(parts: dict[str, bytes], found: dict[str, Table], done: Portable) -> dict[str, str]:
    """Workbook defined names rewritten in place; returns {name in lower case: its new text}."""
    out: dict[str, str] = {}

    def fn(wb: etree._Element) -> None:
        for dn in wb.iter(xmlcells.q(wb, "definedName")):
            if not dn.text or dn.get("name", "").startswith("_xlnm."):
                continue
            dn.text, _, _ = formula(dn.text, found, {}, done)
            if dn.get("localSheetId") is None:
                out[dn.get("name", "").lower()] = dn.text
    partedit.change(parts, partedit.WB, fn)
    return out


def _sheet(root: etree._Element, found: dict[str, Table], names: dict[str, str], done: Portable,
           sheet: str) -> None:
    s = xmlcells.Sheet(root)
    s.expand_shared(keep=lambda f: "SUMPRODUCT" not in f.upper())  # an array formula is never shared
    for ref, text, cell in list(s.formula_cells()):
        row = coordinate_from_string(ref)[1]
        new, array, left = formula(text, found, names, done, row)
        f = s.formula(cell)
        f.text = new
        if array and f.get("t") not in ("array", "shared"):
            f.set("t", "array")
            f.set("ref", ref)
        if left:
            done.left.append(f"{sheet}!{ref}")
    for tag in ("formula1", "formula2", "formula"):  # validations and conditional formats
        for el in root.iter(xmlcells.q(root, tag)):
            if el.text:
                el.text, _, _ = formula(el.text, found, names, done)
    for dv in root.iter(xmlcells.q(root, "dataValidation")):
        if dv.get("type") == "list" and dv.get("showErrorMessage", "0") in ("0", "false"):
            dv.set("showErrorMessage", "1")
            dv.set("errorStyle", "information")


def _inner_namespaces(root: etree._Element) -> dict[str, str]:
    """Prefixes declared below the root element ({prefix: URI}), the first declaration of each."""
    found: dict[str, str] = {}
    top = root.nsmap
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        for prefix, uri in el.nsmap.items():
            if prefix is not None and prefix not in top and prefix not in found:
                found[prefix] = uri
    return found


def _root_namespaces(data: bytes, name: str) -> bytes:
    """A drawing or chart part with every namespace declared on its root element (the part as it
    was when it already is)."""
    if not _inner_namespaces(package.parse(name, data)):
        return data

    def fn(root: etree._Element) -> None:
        top = {p: u for p, u in root.nsmap.items() if p is not None}
        etree.cleanup_namespaces(root, top_nsmap={**_inner_namespaces(root), **top})
    return package.edit(name, data, fn)


def make_portable(parts: dict[str, bytes], skip: set[str] = frozenset()) -> Portable:
    """Rewrite `parts` (the e-mail copy's package, in place) as described in this module's
    docstring; sheets in `skip` need no rewrite (export.stream.only_copied) and stay as they are."""
    done = Portable()
    found = tables(parts)
    names = _names(parts, found, done)
    for sheet, part in package.sheet_parts(parts).items():
        if sheet in skip:
            continue
        partedit.change(parts, part, lambda root, sheet=sheet: _sheet(root, found, names, done, sheet))
    for part in list(parts):
        if partedit.content_type(parts, part) in DRAWING_CTS:
            parts[part] = _root_namespaces(parts[part], part)
    return done


def fixed_range_notes(parts: dict[str, bytes], done: Portable, day: str) -> dict[str, dict[str, str]]:
    """{sheet: {first header cell: note}} for each table whose references the copy made fixed:
    where new rows go (the original workbook, then export again). `day` is ISO (2026-12-01)."""
    notes: dict[str, dict[str, str]] = {}
    for key in sorted(done.tables_used):
        t = tables(parts).get(key)
        if t is None:
            continue
        data = a1(t, "") or ""
        notes.setdefault(t.sheet, {})[f"{get_column_letter(t.min_col)}{t.min_row}"] = (
            f"E-mail copy of {day}: so that every spreadsheet program (Excel, LibreOffice, Gnumeric, ...) "
            f"computes the same numbers, its formulas read this table as the fixed range {data}. "
            "A row added here is not counted: add rows in the original workbook (new devices: the "
            "TrainingBudget template, or `trainbudget measure --into`), then run `trainbudget export` again.")
    return notes
