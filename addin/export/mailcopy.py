"""`trainbudget export`: the e-mail copy. A macro-free .xlsx whose formulas are native Excel and
carry cached values, so Protected View, previews and phones show the numbers; optionally a PDF
of the Budget sheet. The input is never written to.

Every macro carrier is taken out (ooxml.macrofree) and the result checked. Shared formulas that
call our functions are written out cell by cell first; each call is made native (or, without a
native form or past 8,192 characters, frozen to its cached value with a note). Cells the export
rewrote take LibreOffice's recalculated value; every other formula cell keeps its own cached
value (LibreOffice 7.4 lacks XLOOKUP, LET, FILTER, ...). Options are checked before anything is
written, and the .xlsx and the PDF are moved into place together or not at all.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ... import calc
from .. import libreoffice as engine
from ..functions import native, rewrite
from ..ooxml import comments, macrofree, package, partedit, sheetrefs, xmlcells
from ..template import devices_table
from . import charts, evaluate, order, portable, stream

CONF_SHEET = "xlwings.conf"
PRINTED = ("Summary", "Budget")  # the PDF's default: the page finance signs, then the Budget's detail
CHART_CT = "application/vnd.openxmlformats-officedocument.drawingml.chart+xml"


@dataclass
class Exported:
    """What the export did."""

    out: Path
    pdf: Path | None = None
    rewritten: int = 0
    frozen: list[str] = field(default_factory=list)
    added_devices: bool = False
    computed: int = 0  # frozen cells whose value calc computed (the file had none, or an error)
    seconds: float = 0.0
    portable: portable.Portable = field(default_factory=portable.Portable)


def export(src: Path, out: Path, pdf: Path | None = None, sheets: list[str] | None = None) -> Exported:
    """Write the e-mail copy of `src` to `out` (and a PDF of `sheets` to `pdf`; default PRINTED, those the
    workbook has).

    Every option is checked before anything is written; on any failure nothing is left behind."""
    start = time.perf_counter()
    src, out, pdf = Path(src), Path(out), None if pdf is None else Path(pdf)
    # the package layer: bounded reads, every .xml/.rels part parsed safely (a DOCTYPE or a broken
    # part is refused in one line naming the file), before anything else reads the file
    parts = package.read_parts(src)
    _check(src, out, pdf)
    if partedit.WB_RELS not in parts:
        raise package.BadWorkbookError(f"{src} is not an Excel workbook (no {partedit.WB_RELS} in the package)")
    for name in parts:  # the copy rewrites drawings too: a VML part must parse safely as well
        if name.lower().endswith(".vml"):
            package.parse(name, parts[name], str(src))
    parts = partedit.drop_sheet(macrofree.strip_macros(parts, str(src)), CONF_SHEET)
    sheets = sheets or [s for s in PRINTED if s in package.sheet_parts(parts)] or ["Budget"]
    if pdf is not None:
        missing = [s for s in sheets if s not in package.sheet_parts(parts)]
        if missing:
            raise calc.TrainingBudgetError(f"--sheets: no sheet named {', '.join(map(repr, missing))}; nothing written")
    done = Exported(out, pdf)
    parts = _with_devices(parts, done)
    copied = stream.copied_sheets(parts)  # written back byte for byte, never loaded
    parts, recalc = _rewrite(parts, done, functools.cache(lambda: _devices(src)), copied)
    done.portable = portable.make_portable(parts, copied)
    for sheet, cell_notes in portable.fixed_range_notes(parts, done.portable, today()).items():
        parts = comments.add_notes(parts, sheet, cell_notes)
    with tempfile.TemporaryDirectory(prefix="tb-export-") as tmp:
        interim = Path(tmp) / "interim.xlsx"
        given, emptied = sheetrefs.for_recalculation(parts, copied)
        package.write_package(given, interim)
        del given
        by_sheet = package.sheet_parts(parts)
        values = stream.read_values(engine.recalculate(interim, Path(tmp) / "lo"), copied, stream.chart_ranges(parts),
                                    {s: parts[by_sheet[s]] for s in emptied},
                                    xmlcells.shared_strings(parts.get("xl/sharedStrings.xml")) if emptied else None)
        parts = _with_cached_values(parts, values, recalc, copied)
        _dated_footers(parts, copied, today())
        order.readers_last(parts)  # read right unrecalculated (Gnumeric): export.order
        macrofree.check(parts, str(src))
        if pdf is None:
            _keep_backups(out)
            package.write_package(parts, out)
        else:
            copy = Path(tmp) / "copy" / (out.stem + ".xlsx")
            copy.parent.mkdir()
            package.write_package(parts, copy)
            made = print_pdf(copy, Path(tmp) / "report.pdf", sheets)
            _keep_backups(out, pdf)  # only once both new files exist
            _publish(copy, out, made, pdf)
    done.seconds = time.perf_counter() - start
    return done

def _with_devices(parts: dict[str, bytes], done: Exported) -> dict[str, bytes]:
    """`parts` with a Devices table (the catalog's, on a sheet of its own, when the workbook has
    none: `done.added_devices`) and the DeviceNames name over its Name column."""
    if not _has_devices_table(parts):
        rows = [list(native.HEADERS.values())] + [[getattr(d, f) for f in native.HEADERS] for d in calc.catalog()]
        sheet = _free_sheet_name(parts, "Devices")  # a user's own "Devices" sheet stays as it is
        parts, done.added_devices = partedit.add_table_sheet(parts, sheet, native.TABLE, rows), True
    names_ref = f"{native.TABLE}[{native.HEADERS['name']}]"
    # an e-mail copy exported again: its DeviceNames already reads the same column as an A1 range
    partedit.ensure_defined_name(parts, native.NAMES, names_ref,
                                 tuple(filter(None, [portable.structured_a1(parts, names_ref)])))
    return parts



def _keep_backups(*paths: Path | None) -> None:
    """A file the copy replaces (an earlier e-mail copy or PDF) is kept as NAME.bak first."""
    for path in paths:
        if path is not None:
            package.keep_backup(path)


def _publish(copy: Path, out: Path, made_pdf: Path, pdf: Path) -> None:
    """Both files moved into place, or neither."""
    with package.atomic_path(out) as tmp_out:
        shutil.copyfile(copy, tmp_out)
        with package.atomic_path(pdf) as tmp_pdf:
            shutil.copyfile(made_pdf, tmp_pdf)
    # atomic_path renames the inner (pdf) first, then the outer (xlsx)


def _check(src: Path, out: Path, pdf: Path | None) -> None:
    if out.suffix.lower() != ".xlsx":
        raise calc.TrainingBudgetError(f"--out must end in .xlsx, a macro-free workbook (got {out.name!r})")
    if pdf is not None and pdf.suffix.lower() != ".pdf":
        raise calc.TrainingBudgetError(f"--pdf must end in .pdf (got {pdf.name!r})")
    if pdf is not None and pdf.resolve() == out.resolve():
        raise calc.TrainingBudgetError("--pdf and --out name the same file")
    for target in (out, pdf):
        if target is None:
            continue
        if target.resolve() == src.resolve():
            raise calc.TrainingBudgetError(f"{target} is the input: the export never overwrites it")
        if not target.parent.is_dir():
            raise calc.TrainingBudgetError(f"folder {target.parent} does not exist")
        if target.is_dir():
            raise calc.TrainingBudgetError(f"{target} is a folder")


def _free_sheet_name(parts: dict[str, bytes], name: str) -> str:
    """`name`, or `name (TB)`, `name (TB 2)`, ... if a sheet has it (Excel's names ignore case)."""
    taken = {s.lower() for s in package.sheet_parts(parts)}
    for candidate in (name, f"{name} (TB)", *(f"{name} (TB {k})" for k in range(2, 100))):
        if candidate.lower() not in taken:
            return candidate
    raise calc.TrainingBudgetError(f"no free sheet name for the {name} table")


def _has_devices_table(parts: dict[str, bytes]) -> bool:
    return any(partedit.root_of(parts, p).get("displayName") == native.TABLE
               for p in parts if partedit.content_type(parts, p) == partedit.TABLE_CT)


def _devices(src: Path) -> calc.DeviceTable | None:
    """The workbook's own Devices table (measured rows count), or None for the bundled catalog."""
    try:
        return devices_table.table_from_workbook(src)
    except (calc.TrainingBudgetError, KeyError, ValueError, OSError):
        return None


def _rewrite(parts: dict[str, bytes], done: Exported,
             table: Callable[[], calc.DeviceTable | None] = lambda: None,
             skip: set[str] = frozenset()) -> tuple[dict[str, bytes], dict[str, set[str]]]:
    """Our function calls made native; those without a native form frozen to values, with a note
    (or computed, see _computed). Sheets in `skip` are not touched. Returns the parts and, per
    sheet, the cells whose value LibreOffice must give."""
    notes: dict[str, dict[str, str]] = {}
    recalc: dict[str, set[str]] = {}
    for sheet, part in package.sheet_parts(parts).items():
        if sheet in skip:
            continue

        def fn(root: object, sheet: str = sheet) -> None:
            s = xmlcells.Sheet(root)
            s.expand_shared(keep=lambda f: not rewrite.calls_ours(f))
            context = functools.cache(lambda: (evaluate.cell_lookup(parts, sheet, s), table()))
            for ref, formula, cell in list(s.formula_cells()):
                if rewrite.calls_ours(formula):
                    _rewrite_cell(s, (sheet, ref, formula, cell), (done, notes, recalc), context)
        partedit.change(parts, part, fn)
    for sheet, cell_notes in notes.items():
        parts = comments.add_notes(parts, sheet, cell_notes)
    return parts, recalc


def _rewrite_cell(s: xmlcells.Sheet, at: tuple[str, str, str, object],
                  tally: tuple[Exported, dict[str, dict[str, str]], dict[str, set[str]]],
                  context: Callable[[], tuple[evaluate.Lookup, calc.DeviceTable | None]] | None = None) -> None:
    """One formula cell `at` (sheet, ref, formula, the cell) made native, or frozen to a value with a note;
    `tally`: the export's counts, the notes per sheet and cell, the cells per sheet LibreOffice must give."""
    sheet, ref, formula, cell = at
    done, notes, recalc = tally
    f = s.formula(cell)
    refused = _refusal(_own_value(s, cell))
    if refused is not None:  # the native form would compute a number from arguments the add-in refused
        s.drop_formula(cell)
        notes.setdefault(sheet, {})[ref] = (
            f"Frozen by the e-mail export: the add-in refused these arguments ({refused[:200]}), and Excel's "
            f"native formula would compute a number from them anyway; fix the inputs and export again. The formula "
            f"was ={formula[:200]} (exported {today()})")
        done.frozen.append(f"{sheet}!{ref}")
        return
    try:
        f.text = rewrite.rewrite(formula)
        done.rewritten += 1
        recalc.setdefault(sheet, set()).add(ref)
        if f.get("t") == "array" and f.get("ref"):
            recalc[sheet] |= set(xmlcells.refs_in(f.get("ref")))
    except rewrite.NoNativeError as e:
        why = (f"{e.name} has no native Excel formula" if not isinstance(e, rewrite.TooLongError)
               else f"{e.name} would be too long")
        own = _own_value(s, cell)
        if own is not None and not (isinstance(own, str) and own in xmlcells.EXCEL_ERRORS):
            note = f"{why}, so this is the value the add-in computed"
        else:
            note = _computed(s, cell, formula, own, why, context() if context else None, done)
        s.drop_formula(cell)
        notes.setdefault(sheet, {})[ref] = (
            f"Frozen by the e-mail export: {note}. The formula was ={formula[:200]} (exported {today()})")
        done.frozen.append(f"{sheet}!{ref}")


def _computed(s: xmlcells.Sheet, cell: object, formula: str, own: object, why: str,
              context: tuple[evaluate.Lookup, calc.DeviceTable | None] | None,
              done: Exported) -> str:
    """A frozen cell whose file had no good value: computed with calc where the formula allows
    else kept as it is; returns the note's reason."""
    had = "no value" if own is None else f"{own}"
    try:
        if context is None:
            raise evaluate.UnevaluableError("no workbook to read its arguments from")
        lookup, table = context
        value = evaluate.evaluate(formula, lookup, table)
    except evaluate.UnevaluableError as e:
        if own is None:
            s.set_value(cell, "#N/A")
        return f"{why} and the file held {had} for it; it could not be computed here: {e}"
    s.set_value(cell, value)
    done.computed += 1
    return (f"{why} and the file held {had} for it (saved by a program without the add-in), "
            "so this value was computed by TrainingBudget's calculator when the copy was made")


def _with_cached_values(parts: dict[str, bytes], values: stream.Values,
                        recalc: dict[str, set[str]], skip: set[str] = frozenset()) -> dict[str, bytes]:
    """Formula cells the export rewrote (and every cell of their array ranges), and formula cells
    with no cached value, take LibreOffice's value; every other cell keeps its own, so a function
    LibreOffice lacks (XLOOKUP, LET, ...) never turns a good value into #NAME?."""
    for sheet, part in package.sheet_parts(parts).items():
        if sheet in skip:  # every formula cell of it has its own value (stream.only_copied)
            continue
        ws = values[sheet]

        def fn(root: object, sheet: str = sheet, ws: object = ws) -> None:
            s = xmlcells.Sheet(root)
            wanted = recalc.get(sheet, set())
            by_ref = {r: c for r, _, c in s.formula_cells()}
            for ref in set(s.array_ranges()) | wanted:
                if ref not in by_ref:
                    by_ref[ref] = s.cell(ref)
            formulas = {r: f for r, f, _ in s.formula_cells()}
            for ref, cell in by_ref.items():
                kept = _own_value(s, cell)
                if ref in wanted and not _lacks_function(formulas.get(ref, ""), ws[ref].value, kept):
                    kept = None
                if kept is None:
                    s.set_value(cell, _value(ws[ref].value))
                else:
                    ws[ref].value = kept  # charts read the kept value too
        partedit.change(parts, part, fn)
    for part in [p for p in parts if partedit.content_type(parts, p) == CHART_CT]:
        parts[part] = charts.refresh(parts[part], values, part)
    return parts


def _refusal(own: object) -> str | None:
    """The add-in's refusal a cell holds as its value ('#VALUE! pue must be >= 1 (got 0.4)', '#N/A
    unknown device ...': an error type, a space and the reason, calc's words), else None."""
    if isinstance(own, str) and own.split(" ", 1)[0] in xmlcells.EXCEL_ERRORS and " " in own.strip():
        return own.strip()
    return None


def _own_value(s: xmlcells.Sheet, cell: object) -> object | None:
    """The cell's own cached value, or None when it has none."""
    v = cell.find(s.q("v"))
    if v is None or (v.text is None and cell.get("t") != "str"):
        return None
    return xmlcells.cached_value(cell)


def _lacks_function(formula: str, recalculated: object, own: object) -> bool:
    """True when LibreOffice's value is an error for a formula that uses a function LibreOffice 7.4
    lacks (Excel 365's `_xlfn.` names: LET, XLOOKUP, FILTER, ...) and the cell had a good value
    of its own: the rewrite computes what the add-in computed, so that value stands."""
    def error(v: object) -> bool:
        return isinstance(v, str) and v in xmlcells.EXCEL_ERRORS

    return "_xlfn." in formula.lower() and error(recalculated) and own is not None and not error(own)


def _value(v: object) -> object:
    return "" if v is None else v


def today() -> str:
    """Today's date (UTC) as ISO 8601, 2026-12-01: how the export writes every date."""
    return dt.datetime.now(dt.UTC).date().isoformat()


def iso_header_footer(text: str, day: str) -> str:
    """A header/footer text with its date field `&D` (which LibreOffice prints in the locale's
    order, 12/01/2026) replaced by the ISO date `day`; `&&` (a literal ampersand) is kept."""
    return re.sub(r"&&|&D", lambda m: day if m.group() == "&D" else m.group(), text)


def copy_header_footer(text: str, day: str) -> str:
    """The e-mail copy's header/footer text: its date field `&D` (printed in the reader's locale, so
    12/01/2026 reads as 12 January in half the world) fixed as the export's ISO date `day`; the
    template's "printed &D" says what that date is: "exported 2026-12-01"."""
    return iso_header_footer(text.replace("printed &D", f"exported {day}"), day)


def _dated_footers(parts: dict[str, bytes], copied: set[str], day: str) -> None:
    """Every `&D` in the headers and footers of the sheets the copy rewrote as `day` (ISO); a sheet
    the export only copies stays byte for byte."""
    for sheet, name in package.sheet_parts(parts).items():
        if sheet in copied:  # never parsed (a copied sheet may hold a million rows)
            continue
        root = partedit.root_of(parts, name)
        if not any(p.text and "&D" in p.text for hf in root.iter(xmlcells.q(root, "headerFooter")) for p in hf):
            continue

        def dated(root: object) -> None:
            for hf in root.iter(xmlcells.q(root, "headerFooter")):
                for part in hf:
                    if part.text:
                        part.text = copy_header_footer(part.text, day)
        partedit.change(parts, name, dated)


def print_pdf(workbook: Path, pdf: Path, sheets: list[str]) -> Path:
    """A PDF of `sheets` (their print areas), fonts embedded, through LibreOffice."""
    parts = package.read_parts(workbook)
    known = package.sheet_parts(parts)
    missing = [s for s in sheets if s not in known]
    if missing:
        raise calc.TrainingBudgetError(f"--sheets: no sheet named {', '.join(map(repr, missing))}")
    names = list(known)
    hidden_ids = {str(i) for i, name in enumerate(names) if name not in sheets}

    def book(wb: object) -> None:
        for el in partedit.sheet_elements(wb):
            el.attrib.pop("state", None)
            if el.get("name") not in sheets:
                el.set("state", "hidden")
        for view in wb.iter(xmlcells.q(wb, "workbookView")):
            view.set("activeTab", str(names.index(sheets[0])))
            view.attrib.pop("firstSheet", None)
        for dn in list(wb.iter(xmlcells.q(wb, "definedName"))):
            if dn.get("name") == "_xlnm.Print_Area" and dn.get("localSheetId") in hidden_ids:
                dn.getparent().remove(dn)
    partedit.change(parts, partedit.WB, book)
    for name, part in known.items():  # LibreOffice prints the selected tab even when it is hidden
        def views(root: object, selected: bool = name == sheets[0]) -> None:
            for i, view in enumerate(root.iter(xmlcells.q(root, "sheetView"))):
                view.attrib.pop("tabSelected", None)
                if selected and i == 0:
                    view.set("tabSelected", "1")
            for hf in root.iter(xmlcells.q(root, "headerFooter")):
                for part in hf:
                    if part.text:
                        part.text = iso_header_footer(part.text, today())
        partedit.change(parts, part, views)
    with tempfile.TemporaryDirectory(prefix="tb-pdf-") as tmp:
        copy = Path(tmp) / (workbook.stem + ".xlsx")
        package.write_package(parts, copy)
        return engine.pdf(copy, pdf)
