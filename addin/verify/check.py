"""`trainbudget verify`: is this a sound TrainingBudget workbook? One finding per problem.

Checks: the structure; the Devices table (unique names, positive numeric rates, sources);
every Budget, Runs and Scenarios formula equal to the template's; no result an error (recalculated by
LibreOffice where installed, else the cached values); the xlwings.conf sheet (warnings for rows
that override the user's settings); and, part by part (macros, vba_check), no code but the
template's, no macro sheets, auto-run names, ActiveX/OLE parts, DDE, links or data queries.
Findings are errors (exit 1) or warnings (reported, exit 0).
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
from ..ooxml import package
from ..template import budget_sheet, devices_table, scenarios, sheets
from ..template.cached_cells import CachedCells
from . import macros
from .problems import Problem, errors

REQUIRED_SHEETS = ("Budget", "Devices", "Runs", "Functions", "About")
CHECKED_FORMULAS = ("Budget", "Runs", "Scenarios")
__all__ = ["Problem", "errors", "expected_formulas", "is_formula", "verify"]
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
    found = macros.scan(parts, macro_enabled)  # before openpyxl: a DOCTYPE is refused by the safe parser
    wb = openpyxl.load_workbook(path)
    missing = [s for s in REQUIRED_SHEETS if s not in wb.sheetnames]
    if "Budget" in missing or "Devices" in missing:
        return [Problem("workbook", f"not a TrainingBudget workbook: no {', '.join(missing)} sheet"), *found]
    problems = [Problem("workbook", f"sheet {s!r} is missing") for s in missing]
    problems += _devices(wb["Devices"]) + _formulas(wb) + (_conf(wb) if macro_enabled else []) + found
    use_engine = engine.soffice() is not None if recalc is None else recalc
    return problems + _results(path, wb, use_engine)


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
    problems, seen = [], {}
    for i, record in found:
        row = cells[i][0].row
        try:
            device = calc.devices.device_from_record(record, "row")
        except calc.TrainingBudgetError as e:
            problems.append(Problem(f"Devices!{col_of.get(e.field, col_of['name'])}{row}", str(e).split(": ", 1)[-1]))
            continue
        where, key = f"{col_of['name']}{row}", calc.devices.normalize(device.name)
        if key in seen:
            problems.append(Problem(f"Devices!{where}",
                                    f"duplicate device name {device.name!r} (first at {seen[key]})"))
        seen.setdefault(key, where)
    return problems


def is_formula(cell: Any) -> bool:
    """A formula cell (a text that merely starts with '=' is not one)."""
    return cell.data_type == "f" and isinstance(cell.value, str)


@functools.lru_cache(maxsize=1)
def expected_formulas() -> dict[str, dict[str, str]]:
    """The template's formulas on the checked sheets, generated as `build` writes them."""
    wb = openpyxl.Workbook()
    budget, runs = wb.active, wb.create_sheet("Runs")
    budget.title = "Budget"
    cached = CachedCells()
    sheets.write_runs(runs, cached)
    budget_sheet.write(budget, cached, calc.catalog())
    plans = wb.create_sheet("Scenarios")
    scenarios.write(plans, cached, calc.catalog())
    return {ws.title: {c.coordinate: c.value for row in ws.iter_rows() for c in row
                       if is_formula(c)} for ws in (budget, runs, plans)}


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
    empty value or a bare `python` interpreter is warned about (issue 11)."""
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
    formula, does not; macros reports it)."""
    try:
        return rewrite.calls_ours(formula)
    except TokenizerError:
        return False


def _results(path: Path, wb: Any, use_engine: bool) -> list[Problem]:
    with tempfile.TemporaryDirectory(prefix="tb-verify-") as tmp:
        source = engine.recalculate(path, Path(tmp)) if use_engine else path
        values = openpyxl.load_workbook(source, data_only=True)
        how = "recalculated" if use_engine else "cached"
        uncached = package.uncached_formulas(path)
        problems = [Problem(f"{sheet}!{ref}", "no cached value: Protected View and previews show a blank")
                    for sheet, refs in uncached.items() for ref in sorted(refs)]
        for ws in wb.worksheets:
            for row in ws.iter_rows():
                for c in row:
                    if not is_formula(c) or _calls_ours(c.value):  # add-in cells: no engine runs them
                        continue
                    got = values[ws.title][c.coordinate].value if ws.title in values.sheetnames else None
                    if isinstance(got, str) and _ERROR.match(got) and got != native.DOES_NOT_FIT:
                        problems.append(Problem(f"{ws.title}!{c.coordinate}", f"{how} result is an error: {got}"))
    return problems


