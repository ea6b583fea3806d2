"""`trainbudget export`: the e-mail copy. A macro-free .xlsx whose formulas are native Excel and
carry cached values computed by LibreOffice, so Protected View, previews and phones show the
numbers; optionally a PDF of the Budget sheet. The input is never written to.
"""

from __future__ import annotations

import re
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import openpyxl

from ... import calc
from ..functions import native, rewrite
from ..ooxml import comments, package, partedit, xmlcells
from ..workbook import charts
from . import engine

CONF_SHEET = "xlwings.conf"


@dataclass
class Exported:
    """What the export did."""

    out: Path
    pdf: Path | None = None
    rewritten: int = 0
    frozen: list[str] = field(default_factory=list)
    added_devices: bool = False
    seconds: float = 0.0


def export(src: Path, out: Path, pdf: Path | None = None, sheets: list[str] | None = None) -> Exported:
    """Write the e-mail copy of `src` to `out` (and a PDF of `sheets`, default Budget, to `pdf`)."""
    start = time.perf_counter()
    src, out = Path(src), Path(out)
    _check(src, out, pdf)
    parts = partedit.drop_sheet(partedit.strip_vba(package.read_parts(src)), CONF_SHEET)
    done = Exported(out, pdf)
    if not _has_devices_table(parts):
        rows = [list(native.HEADERS.values())] + [[getattr(d, f) for f in native.HEADERS] for d in calc.catalog()]
        parts, done.added_devices = partedit.add_table_sheet(parts, "Devices", native.TABLE, rows), True
    parts = _rewrite(parts, done)
    with tempfile.TemporaryDirectory(prefix="tb-export-") as tmp:
        interim = Path(tmp) / "interim.xlsx"
        write_package(parts, interim)
        values = openpyxl.load_workbook(engine.recalculate(interim, Path(tmp) / "lo"), data_only=True)
        parts = _with_cached_values(parts, values)
    write_package(parts, out)
    if pdf is not None:
        print_pdf(out, pdf, sheets or ["Budget"])
    done.seconds = time.perf_counter() - start
    return done


def _check(src: Path, out: Path, pdf: Path | None) -> None:
    if not zipfile.is_zipfile(src):
        raise calc.TrainingBudgetError(f"{src} is not an Excel workbook (not a zip package)")
    if out.suffix.lower() != ".xlsx":
        raise calc.TrainingBudgetError(f"--out must end in .xlsx, a macro-free workbook (got {out.name!r})")
    for target in (out, pdf):
        if target is not None and target.resolve() == src.resolve():
            raise calc.TrainingBudgetError(f"{target} is the input: the export never overwrites it")
    if not out.parent.exists():
        raise calc.TrainingBudgetError(f"folder {out.parent} does not exist")


def _has_devices_table(parts: dict[str, bytes]) -> bool:
    return any(re.search(rb'<table\b[^>]*displayName="' + native.TABLE.encode() + b'"', d)
               for p, d in parts.items() if p.startswith("xl/tables/"))


def _rewrite(parts: dict[str, bytes], done: Exported) -> dict[str, bytes]:
    """Our function calls made native; those without a native form frozen to values, with a note."""
    notes: dict[str, dict[str, str]] = {}
    for sheet, part in package.sheet_parts(parts).items():
        xml = partedit.text(parts, part)
        for ref, formula, cell in list(xmlcells.formula_cells(xml)):
            if not rewrite.calls_ours(formula):
                continue
            try:
                xml = xml.replace(cell, xmlcells.replace_formula(cell, rewrite.rewrite(formula)), 1)
                done.rewritten += 1
            except rewrite.NoNativeError as e:
                xml = xml.replace(cell, _frozen(cell), 1)
                notes.setdefault(sheet, {})[ref] = (
                    f"Frozen by the e-mail export: {e.name} has no native Excel formula, so this is the value "
                    f"the add-in computed. The formula was ={formula[:200]}")
                done.frozen.append(f"{sheet}!{ref}")
        parts[part] = xml.encode()
    for sheet, cell_notes in notes.items():
        parts = comments.add_notes(parts, sheet, cell_notes)
    return parts


def _frozen(cell: str) -> str:
    """The cell's cached value as a constant; a cell with none says so."""
    constant = xmlcells.drop_formula(cell)
    return constant if "<v>" in constant else xmlcells.with_value(constant, xmlcells.ref_of(cell), "#N/A")


def _with_cached_values(parts: dict[str, bytes], values: openpyxl.Workbook) -> dict[str, bytes]:
    """Every formula cell (and every cell of an array formula's range) with its recalculated value."""
    for sheet, part in package.sheet_parts(parts).items():
        xml = partedit.text(parts, part)
        refs = {xmlcells.ref_of(c) for c in xmlcells.CELL.findall(xml) if "<f" in c} | set(xmlcells.array_ranges(xml))
        ws = values[sheet]
        parts[part] = xmlcells.set_values(xml, {r: _value(ws[r].value) for r in refs}).encode()
    for part in [p for p in parts if re.match(r"xl/charts/chart\d+\.xml$", p)]:
        parts[part] = charts.refresh(partedit.text(parts, part), values).encode()
    return parts


def _value(v: object) -> object:
    return "" if v is None else v


def write_package(parts: dict[str, bytes], target: Path) -> None:
    """A new zip package of `parts` at `target`, atomically; content types first."""
    order = sorted(parts, key=lambda n: n != partedit.CT)
    with package.atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name in order:
            z.writestr(name, parts[name])


def print_pdf(workbook: Path, pdf: Path, sheets: list[str]) -> Path:
    """A PDF of `sheets` (their print areas), fonts embedded, through LibreOffice."""
    parts = package.read_parts(workbook)
    known = package.sheet_parts(parts)
    missing = [s for s in sheets if s not in known]
    if missing:
        raise calc.TrainingBudgetError(f"--sheets: no sheet named {', '.join(map(repr, missing))}")
    wb = partedit.text(parts, partedit.WB)
    for name in known:
        tag = re.search(rf'<sheet\b[^>]*\bname="{re.escape(name)}"[^>]*/>', wb).group(0)
        clean = re.sub(r'\sstate="[^"]*"', "", tag)
        wb = wb.replace(tag, clean if name in sheets else clean.replace("<sheet ", '<sheet state="hidden" ', 1))
    first = list(known).index(sheets[0])
    wb = re.sub(r'\bactiveTab="\d+"', f'activeTab="{first}"', wb)
    hidden_ids = {str(i) for i, name in enumerate(known) if name not in sheets}
    wb = re.sub(r'<definedName\b[^>]*name="_xlnm.Print_Area"[^>]*localSheetId="(\d+)"[^>]*>.*?</definedName>',
                lambda m: "" if m.group(1) in hidden_ids else m.group(0), wb, flags=re.S)
    parts[partedit.WB] = wb.encode()
    for name, part in known.items():  # LibreOffice prints the selected tab even when it is hidden
        xml = re.sub(r'\stabSelected="1"', "", partedit.text(parts, part))
        if name == sheets[0]:
            xml = xml.replace("<sheetView ", '<sheetView tabSelected="1" ', 1)
        parts[part] = xml.encode()
    with tempfile.TemporaryDirectory(prefix="tb-pdf-") as tmp:
        copy = Path(tmp) / (workbook.stem + ".xlsx")
        write_package(parts, copy)
        return engine.pdf(copy, pdf)
