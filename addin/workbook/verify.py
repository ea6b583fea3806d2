"""`trainbudget verify`: is this a sound TrainingBudget workbook? One finding per problem.

Checks: the structure; the Devices table (unique names, positive numeric rates, sources);
every Budget and Runs formula equal to the template's; no result an error (recalculated by
LibreOffice where installed, else the cached values); the VBA project holding only the
template's modules; no links to other workbooks.
"""

from __future__ import annotations

import functools
import re
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import openpyxl

from ... import calc
from ..export import engine
from ..functions import native, rewrite
from ..ooxml import package
from . import budget_sheet, devices_table, sheets, vba
from .cached_cells import CachedCells

REQUIRED_SHEETS = ("Budget", "Devices", "Runs", "Functions", "About")
CHECKED_FORMULAS = ("Budget", "Runs")
_EXTERNAL = re.compile(r"\[\d+\]")
_ERROR = re.compile(r"^(#(NULL!|DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A)|Err:\d+)")


@dataclass(frozen=True)
class Problem:
    """One finding: where (Sheet!Cell, or a part of the file) and what."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def verify(path: Path, recalc: bool | None = None) -> list[Problem]:
    """Every problem found in the workbook at `path`; an empty list when it is clean.

    `recalc`: recalculate with LibreOffice (None: when it is installed).
    """
    path = Path(path)
    if not zipfile.is_zipfile(path):
        raise calc.TrainingBudgetError(f"{path} is not an Excel workbook (not a zip package)")
    wb = openpyxl.load_workbook(path)
    missing = [s for s in REQUIRED_SHEETS if s not in wb.sheetnames]
    if "Budget" in missing or "Devices" in missing:
        return [Problem("workbook", f"not a TrainingBudget workbook: no {', '.join(missing)} sheet")]
    problems = [Problem("workbook", f"sheet {s!r} is missing") for s in missing]
    problems += _devices(wb["Devices"]) + _formulas(wb) + _links(path, wb)
    problems += _vba(path, expect=path.suffix.lower() == ".xlsm", wb=wb)
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
    return {ws.title: {c.coordinate: c.value for row in ws.iter_rows() for c in row
                       if is_formula(c)} for ws in (budget, runs)}


def _formulas(wb: Any) -> list[Problem]:
    problems = []
    for title, expected in expected_formulas().items():
        if title not in wb.sheetnames:
            continue
        ws = wb[title]
        for ref, formula in expected.items():
            got = ws[ref].value
            if not is_formula(ws[ref]):
                problems.append(Problem(f"{title}!{ref}", "formula missing (the template has one here)"))
            elif got.replace(" ", "") != formula.replace(" ", ""):
                problems.append(Problem(f"{title}!{ref}", f"formula differs from the template's: {got[:80]}"))
    return problems


def _links(path: Path, wb: Any) -> list[Problem]:
    with zipfile.ZipFile(path) as z:
        parts = [n for n in z.namelist() if n.startswith("xl/externalLinks/")]
    problems = [Problem(part, "link to another workbook") for part in parts if part.endswith(".xml")]
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if is_formula(c) and _EXTERNAL.search(c.value):
                    problems.append(Problem(f"{ws.title}!{c.coordinate}", "formula refers to another workbook"))
    return problems


def _vba(path: Path, expect: bool, wb: Any) -> list[Problem]:
    with zipfile.ZipFile(path) as z:
        project = z.read("xl/vbaProject.bin") if "xl/vbaProject.bin" in z.namelist() else None
    if project is None:
        return [Problem("xl/vbaProject.bin", "the VBA project is missing")] if expect else []
    if not expect:
        return [Problem("xl/vbaProject.bin", "a macro-free .xlsx must not carry a VBA project")]
    allowed = set(vba.template_modules()) | vba.ADDIN_MODULES
    documents = allowed | _sheet_codenames(wb)  # Excel adds a document module per new sheet
    problems = [Problem("xl/vbaProject.bin", f"VBA module {name!r} ({kind}) is not one the template ships: "
                                              "a macro added after the template was built")
                for name, kind in vba.modules(project).items()
                if name not in (allowed if kind == "procedural" else documents)]
    conf = wb["xlwings.conf"] if "xlwings.conf" in wb.sheetnames else None
    if conf is None or not any(r[0] == "UDF Modules" and r[1] == sheets.UDF_MODULE
                               for r in conf.iter_rows(values_only=True, max_col=2)):
        problems.append(Problem("xlwings.conf!A1", f"'UDF Modules' must name {sheets.UDF_MODULE}"))
    return problems


def _sheet_codenames(wb: Any) -> set[str]:
    return {ws.sheet_properties.codeName for ws in wb.worksheets if ws.sheet_properties.codeName}


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
                    if not is_formula(c) or rewrite.calls_ours(c.value):  # add-in cells: no engine runs them
                        continue
                    got = values[ws.title][c.coordinate].value if ws.title in values.sheetnames else None
                    if isinstance(got, str) and _ERROR.match(got) and got != native.DOES_NOT_FIT:
                        problems.append(Problem(f"{ws.title}!{c.coordinate}", f"{how} result is an error: {got}"))
    return problems


