"""`trainbudget verify`: is this a sound TrainingBudget workbook? One finding per problem.

Checks: the structure; the Devices table (unique names, positive numeric rates, sources, names
that are text rather than live formulas); the inputs (inputs.py: every Budget, currency, Scenarios
and Prices input by type, range and unit); every Budget, Runs and Scenarios formula equal to the
template's; every formula's text (formula_text: no DDE, no reference to another workbook, no
function that is neither Excel's nor the registry's); every formula cached, and no result an error
(recalculated by LibreOffice where installed, else the cached values); the xlwings.conf sheet
(warnings for rows that override the user's settings); and, part by part (macros, vba_check), no
code but the template's, no macro sheets, auto-run names, ActiveX/OLE parts, links or data queries.
Findings are errors (exit 1) or warnings (reported, exit 0).

Large workbooks: openpyxl loads only the sheets checked cell by cell (a copy of the package in
memory whose other sheets are empty); every sheet's formulas and cached values are read as a
stream (ooxml.xmlcells.stream), so a sheet of a million rows costs no tree and no openpyxl cells;
a sheet that a C-speed search of its bytes proves has nothing to find (quick.plain) is skipped.
"""

from __future__ import annotations

import functools
import re
import tempfile
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.formula.tokenizer import TokenizerError

from ... import calc
from .. import libreoffice as engine
from ..functions import native, portable, rewrite
from ..functions.registry import FUNCTIONS
from ..ooxml import package, sheetrefs, xmlcells
from ..template import budget_sheet, devices_table, scenarios, sheets, step_block, summary_sheet
from ..template.cached_cells import CachedCells
from . import formula_text, inputs, macros, quick
from .problems import Problem, errors, grouped

REQUIRED_SHEETS = ("Budget", "Devices", "Runs", "Functions", "About")
# loaded through openpyxl (About for its Optimizers table)
CELL_CHECKED = ("Summary", "Budget", "Devices", "Runs", "Scenarios", "Prices", "About", "xlwings.conf")
CHECKED_FORMULAS = ("Summary", "Budget", "Runs", "Scenarios")  # the Summary is optional (older workbooks)
__all__ = ["Problem", "errors", "expected_formulas", "grouped", "is_formula", "verify"]
UNCACHED = "formula cells have no cached value"
ERRORS = "formula results are errors"
UNCACHED_FIX = ("the file was saved by a program that does not calculate; open and save it in Excel or LibreOffice, "
                "or run `trainbudget export`")
_OURS = re.compile("|".join(sorted((re.escape(f.name) for f in FUNCTIONS), key=len, reverse=True)), re.IGNORECASE)
_CELL_NAME = re.compile(r"'?([^'!]+)'?!\$?([A-Z]{1,3})\$?(\d+)")
_ERROR = re.compile(r"^(#(NULL!|DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A)|Err:\d+)")


def verify(path: Path, recalc: bool | None = None) -> list[Problem]:
    """Every problem found in the workbook at `path`; an empty list when it is clean.

    `recalc`: recalculate with LibreOffice (None: when it is installed).
    """
    path = Path(path)
    # the package layer first: a zip bomb, a DOCTYPE or a file that is no workbook is refused in
    # one line naming the file, before openpyxl touches it
    parts = package.read_parts(path)
    macro_enabled = path.suffix.lower() == ".xlsm"
    found = macros.scan(parts, macro_enabled, formulas=False)  # before openpyxl (formulas: _results)
    by_sheet = _sheet_parts(parts)
    missing = [s for s in REQUIRED_SHEETS if s not in by_sheet]
    if "Budget" in missing or "Devices" in missing:
        found += _results(path, parts, by_sheet, False, values=False)
        return [Problem("workbook", f"not a TrainingBudget workbook: no {', '.join(missing)} sheet"), *found]
    wb, values = _load(path, parts, by_sheet)
    problems = [Problem("workbook", f"sheet {s!r} is missing") for s in missing]
    problems += _devices(wb["Devices"]) + _formulas(wb) + (_conf(wb) if macro_enabled else [])
    problems += inputs.budget(values, template_names()) + inputs.plans(values) + inputs.prices(values, wb) + found
    use_engine = engine.soffice() is not None if recalc is None else recalc
    return _by_design(problems + _results(path, parts, by_sheet, use_engine), values)


def _by_design(problems: list[Problem], values: Any) -> list[Problem]:
    """The problems less the step block's #N/A where calc's step model refuses its layout: those results say
    so by design, beside the reason, and inputs.step_refused's warning names the check."""
    names = template_names()
    if inputs.step_refused(values, names) is None:
        return problems
    cells = {names[n] for n in (*step_block.RESULTS, *step_block.RUN_RESULTS) if n in names}
    return [p for p in problems if not (p.kind == ERRORS and p.where in cells and p.message.endswith("#N/A"))]


def _sheet_parts(parts: dict[str, bytes]) -> dict[str, str]:
    try:
        return package.sheet_parts(parts)
    except KeyError as e:  # a sheet whose relationship is missing
        raise package.BadWorkbookError(f"the workbook names a sheet part that is not there ({e})") from None


def _load(path: Path, parts: dict[str, bytes], by_sheet: dict[str, str]) -> tuple[Any, Any]:
    """openpyxl's view of the checked sheets (formulas, and cached values) from a copy of the package
    whose other sheets are empty and which carries no external-link parts (reported by macros)."""
    keep = {by_sheet[s] for s in CELL_CHECKED if s in by_sheet}
    empty = b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData/></worksheet>'
    slim = {name: empty if name in by_sheet.values() and name not in keep else data for name, data in parts.items()}
    buf = package.in_memory(slim)
    try:
        return (openpyxl.load_workbook(buf, keep_links=False),
                openpyxl.load_workbook(buf, data_only=True, keep_links=False))
    except (KeyError, ValueError, TypeError, AttributeError, IndexError) as e:
        raise package.BadWorkbookError(f"{path} cannot be read as a workbook ({type(e).__name__}: "
                                       f"{' '.join(str(e).split())[:120]})") from None


def _devices(ws: Any) -> list[Problem]:
    table = ws.tables.get(native.TABLE)
    if table is None:
        return [Problem("Devices!A1", f"no Excel table named {native.TABLE!r}")]
    cells = list(ws[table.ref])
    try:
        header, found = devices_table.records([[c.value for c in row] for row in cells])
    except calc.TrainingBudgetError as e:
        return [Problem(f"Devices!{cells[0][0].coordinate}", str(e))]
    col_of = {f: cells[0][i].column_letter for i, f in enumerate(header) if f}
    problems, seen = _live_names(cells, header), {}
    for i, record in found:
        row = cells[i][0].row
        try:
            device = calc.device_from_record(record, "row")
        except calc.TrainingBudgetError as e:
            problems.append(Problem(f"Devices!{col_of.get(e.field, col_of['name'])}{row}", str(e).split(": ", 1)[-1]))
            continue
        where, key = f"{col_of['name']}{row}", calc.normalize_device(device.name)
        if key in seen:
            problems.append(Problem(f"Devices!{where}",
                                    f"duplicate device name {device.name!r} (first at {seen[key]})"))
        seen.setdefault(key, where)
    return problems


def _live_names(cells: list[Any], header: list[str | None]) -> list[Problem]:
    """A formula in a device-name cell (=HYPERLINK(...) is a live link in a file sent to finance)."""
    if "name" not in header:
        return []
    i = header.index("name")
    return [Problem(f"Devices!{row[i].coordinate}", f"the device name is a live formula ({row[i].value[:60]}): "
                                                    "type the name as text")
            for row in cells[1:] if is_formula(row[i])]


def is_formula(cell: Any) -> bool:
    """A formula cell (a text that merely starts with '=' is not one)."""
    return cell.data_type == "f" and isinstance(cell.value, str)


@functools.lru_cache(maxsize=1)
def _template() -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The template's formulas on the checked sheets, generated as `build` writes them, and its
    defined names as 'Sheet!A1'."""
    wb = openpyxl.Workbook()
    budget, runs = wb.active, wb.create_sheet("Runs")
    budget.title = "Budget"
    cached = CachedCells()
    sheets.write_runs(runs, cached)
    budget_sheet.write(budget, cached, calc.catalog())
    plans = wb.create_sheet("Scenarios")
    scenarios.write(plans, cached, calc.catalog())
    summary = wb.create_sheet("Summary")
    summary_sheet.write(summary, cached, calc.catalog())
    formulas = {ws.title: {c.coordinate: c.value for row in ws.iter_rows() for c in row
                           if is_formula(c)} for ws in (summary, budget, runs, plans)}
    names = {}
    for name, dn in wb.defined_names.items():
        match = _CELL_NAME.fullmatch(dn.attr_text or "")
        if match:
            names[name] = f"{match.group(1)}!{match.group(2)}{match.group(3)}"
    return formulas, names


def expected_formulas() -> dict[str, dict[str, str]]:
    """The template's formulas on the checked sheets, generated as `build` writes them."""
    return _template()[0]


def template_names() -> dict[str, str]:
    """The template's defined names of single cells: name -> 'Sheet!A1' (from its builders)."""
    return _template()[1]


def _formulas(wb: Any) -> list[Problem]:
    problems = []
    tables = portable.openpyxl_tables(wb)
    names = {n.lower(): d.attr_text for n, d in wb.defined_names.items() if d.attr_text}
    for title, expected in expected_formulas().items():
        if title not in wb.sheetnames:
            continue
        ws = wb[title]
        for ref, formula in expected.items():
            got = ws[ref].value
            if not is_formula(ws[ref]) and not hasattr(got, "text"):
                problems.append(Problem(f"{title}!{ref}", "formula missing (the template has one here)"))
                continue
            got = got.text if hasattr(got, "text") else got  # an array formula (the e-mail copy's)
            if got.replace(" ", "") != formula.replace(" ", "") and got.replace(" ", "") != portable.formula(
                    formula, tables, names, portable.Portable(), ws[ref].row)[0].replace(" ", ""):
                problems.append(Problem(f"{title}!{ref}", f"formula differs from the template's: {got[:80]}"))
    return problems


def _conf(wb: Any) -> list[Problem]:
    """The hidden xlwings.conf sheet: it must name the UDF module. xlwings reads its rows from A1 down
    to the first blank name, and a row it finds overrides the user's add-in (ribbon) setting, so an
    empty value or a bare `python` interpreter is warned about."""
    if "xlwings.conf" not in wb.sheetnames:
        return [Problem("xlwings.conf!A1", f"'UDF Modules' must name {sheets.UDF_MODULE}")]
    problems, udf_modules = [], None
    for row in wb["xlwings.conf"].iter_rows(max_col=2):
        name, value = row[0].value, row[1].value if len(row) > 1 else None
        if name is None or str(name).strip() == "":
            break
        where = f"xlwings.conf!B{row[0].row}"
        if name == "UDF Modules":
            udf_modules = value
        if value is None or str(value).strip() == "":
            problems.append(Problem(where, f"{name!r} is present but empty: it overrides the user's add-in "
                                           "setting with nothing (delete the row or fill it)", "warning"))
        elif name == "Interpreter_Win" and str(value).strip().lower() in ("python", "python.exe"):
            problems.append(Problem(where, "'Interpreter_Win' is a bare 'python': Windows may start the "
                                           "Microsoft Store stub or another Python (give a full path or "
                                           "delete the row)", "warning"))
    if udf_modules != sheets.UDF_MODULE:
        problems.append(Problem("xlwings.conf!A1", f"'UDF Modules' must name {sheets.UDF_MODULE}"))
    return problems


def _calls_ours(formula: str) -> bool:
    """Whether a formula calls an add-in function (one openpyxl cannot tokenize, such as a DDE
    formula, does not; macros reports it). A formula naming no registry function is not tokenized."""
    if not _OURS.search(formula):
        return False
    try:
        return rewrite.calls_ours(formula)
    except TokenizerError:
        return False


def _results(path: Path, parts: dict[str, bytes], by_sheet: dict[str, str], use_engine: bool,
             values: bool = True) -> list[Problem]:
    """In one streamed pass over every sheet's cells: each formula's text (formula_text: DDE,
    external references, unknown functions); with `values`, formula cells without a cached value and
    results that are errors (cached, or recalculated by LibreOffice; add-in cells are left out of
    these: no engine runs them)."""
    problems, ours, errors, texts, plain = [], set(), [], [], set()
    for sheet, part in by_sheet.items():
        if part not in parts:
            continue
        if quick.plain(parts[part], values):  # provably nothing to find: skipped
            plain.add(sheet)
            continue
        shared: dict[str, bool] = {}
        for c in xmlcells.stream(part, parts[part], formulas_only=True):
            if c.formula:
                texts += formula_text.problems(f"{sheet}!{c.ref}", c.formula)
            if not values:
                continue
            mine = _calls_ours(c.formula) if c.formula else shared.get(c.shared or "", False)
            if c.shared is not None and c.formula:
                shared[c.shared] = mine
            if mine:
                ours.add((sheet, c.ref))
            if c.type != "str" and not c.value:
                problems.append(Problem(f"{sheet}!{c.ref}", "no cached value: Protected View and previews show "
                                        "a blank", kind=UNCACHED, fix=UNCACHED_FIX))
            elif not mine and _is_error(c):
                errors.append(Problem(f"{sheet}!{c.ref}", f"cached result is an error: {c.value}", kind=ERRORS))
    if use_engine:
        errors = _recalculated_errors(path, parts, plain, ours, errors)
    return texts + problems + errors


def _is_error(c: xmlcells.StreamCell) -> bool:
    return (c.type in ("e", "str") and c.value is not None and bool(_ERROR.match(c.value))
            and c.value != native.DOES_NOT_FIT)


def _recalculated_errors(path: Path, parts: dict[str, bytes], plain: set[str], ours: set[tuple[str, str]],
                         cached: list[Problem]) -> list[Problem]:
    """Formula cells whose LibreOffice-recalculated result is an error (add-in cells left out).

    A `plain` sheet (its cached values hold no error, quick.plain) that no other sheet or defined
    name reads is given to LibreOffice empty (ooxml.sheetrefs, as export does), so a million rows
    that only travel along are not recalculated: such a sheet is judged on its cached values. If
    LibreOffice's output is too large to read within the package layer's bounds, every sheet is
    judged on its cached values (`cached`), and a warning says so."""
    with tempfile.TemporaryDirectory(prefix="tb-verify-") as tmp:
        given, emptied = sheetrefs.for_recalculation(parts, plain) if plain else (parts, set())
        source = path
        if emptied:
            source = Path(tmp) / ("interim" + path.suffix.lower())
            package.write_package(given, source)
        del given
        (Path(tmp) / "lo").mkdir()
        try:
            parts = package.read_parts(engine.recalculate(source, Path(tmp) / "lo"))
        except package.BadWorkbookError as e:
            why = f"not recalculated (LibreOffice's copy cannot be read within bounds: {e})"
            return [*cached, Problem("workbook", why + "; cached results checked instead", severity="warning")]
    found = []
    for sheet, part in _sheet_parts(parts).items():
        if quick.plain(parts.get(part, b"")):  # no value there can be an error
            continue
        for c in xmlcells.stream(part, parts.get(part, b"<worksheet/>"), formulas_only=True):
            if c.has_formula and (sheet, c.ref) not in ours and _is_error(c):
                found.append(Problem(f"{sheet}!{c.ref}", f"recalculated result is an error: {c.value}", kind=ERRORS))
    return found
