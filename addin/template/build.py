"""`trainbudget build`: the template workbook, written with openpyxl over xlwings' quickstart.xlsm.

The VBA project is xlwings' `quickstart.xlsm` project (the add-in flavour, which refers to the
xlwings add-in) without its sample Module1, rebuilt by vbaproject.shipped() and put in place of
the one openpyxl's keep_vba carries over. Every formula is a native Excel formula generated from
the registry (trainbudget.addin.functions), and every formula cell carries its cached value computed by
calc, so Protected View, previews and phones show the numbers.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
import xlwings
from lxml import etree

from ... import calc
from .. import TEMPLATE_NAME
from ..ooxml import package
from ..vba import vbaproject
from . import budget_sheet, scenarios, sheets, summary_sheet
from .cached_cells import CachedCells

QUICKSTART = Path(xlwings.__file__).parent / "quickstart.xlsm"
SHEETS = ("Summary", "Budget", "Devices", "Runs", "Functions", "About", "Scenarios", "Prices", "xlwings.conf")
CORE = "docProps/core.xml"
VBA_PROJECT = "xl/vbaProject.bin"
AUTHOR = "TrainingBudget"
_NS = {"cp": "http://schemas.openxmlformats.org/package/2006/metadata/core-properties",
       "dc": "http://purl.org/dc/elements/1.1/", "dcterms": "http://purl.org/dc/terms/",
       "xsi": "http://www.w3.org/2001/XMLSchema-instance"}


@dataclass(frozen=True)
class Built:
    """What `build` wrote: the path and every formula cell's cached value."""

    path: Path
    values: dict[str, dict[str, Any]]


def check_out(out: Path, force: bool) -> None:
    """Refuse an output that is not .xlsm, a folder, or (unless `force`) an existing file."""
    out = Path(out)
    if out.suffix.lower() != ".xlsm":
        raise calc.TrainingBudgetError(
            f"--out must end in .xlsm: the template carries a VBA project (got {out.name!r})")
    if out.is_dir():
        raise calc.TrainingBudgetError(f"--out {out} is a folder")
    if os.path.lexists(out) and not force:
        raise calc.TrainingBudgetError(f"--out {out} exists (it may hold measured rows); nothing was written. "
                                       "Use --force to replace it (the old file is kept as .bak)")


def build(out: Path | str | None = None, table: calc.DeviceTable | None = None, force: bool = False) -> Built:
    """Write the template to `out` (atomically) and return the cached values it carries.

    No `out`: ./TrainingBudget.xlsm in the current folder, as `trainbudget build` without --out;
    never the shipped copy inside the package or the checkout (TEMPLATE_PATH), which only
    `trainbudget build --out workbook/TrainingBudget.xlsm` in the repository rewrites.

    Refuses (see check_out) an existing `out` unless `force`; a replaced file is kept as NAME.bak
    and a symlinked `out` is written behind its link.
    """
    out = Path(TEMPLATE_NAME) if out is None else Path(out)
    check_out(out, force)
    out = package.real_target(out)
    table = calc.catalog() if table is None else table
    wb = openpyxl.load_workbook(QUICKSTART, keep_vba=True)
    cached = CachedCells()
    budget = wb["Sheet1"]  # keeps codeName Sheet1, whose module the VBA project holds
    budget.title = "Budget"
    sheets.write_devices(wb.create_sheet("Devices"), table)
    sheets.write_runs(wb.create_sheet("Runs"), cached)
    budget_sheet.write(budget, cached, table)
    summary_sheet.write(wb.create_sheet("Summary"), cached, table)
    scenarios.write_sheets(wb, cached, table)
    sheets.write_functions(wb.create_sheet("Functions"), cached, table)
    sheets.write_about(wb.create_sheet("About"))
    sheets.write_conf(wb["_xlwings.conf"])
    wb._sheets.sort(key=lambda ws: SHEETS.index(ws.title))
    wb.active = SHEETS.index("Budget")  # opens where one types; the Summary is first in print order
    sheets.add_names(wb)
    out.parent.mkdir(parents=True, exist_ok=True)
    with package.locked(out):
        if out.exists():
            package.backup(out)
        with package.atomic_path(out) as raw:
            wb.save(raw)
            package.fill_cached_values(raw, raw, cached.values,
                                     {CORE: _own_core, VBA_PROJECT: lambda _: vbaproject.shipped()})
    return Built(out, dict(cached.values))


def build_date() -> datetime.datetime:
    """The build's date (midnight UTC), or SOURCE_DATE_EPOCH's for a reproducible build."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return datetime.datetime.fromtimestamp(int(epoch), datetime.UTC)
    today = datetime.datetime.now(datetime.UTC).date()
    return datetime.datetime(today.year, today.month, today.day, tzinfo=datetime.UTC)


def _own_core(data: bytes) -> bytes:
    """docProps/core.xml naming this project as author and the build date as created/modified,
    instead of what the xlwings quickstart carried (ECMA-376 Part 2 §11, core properties)."""
    root = package.parse(CORE, data)
    stamp = build_date().strftime("%Y-%m-%dT%H:%M:%SZ")
    for tag, text in (("dc:creator", AUTHOR), ("cp:lastModifiedBy", AUTHOR),
                      ("dcterms:created", stamp), ("dcterms:modified", stamp)):
        prefix, local = tag.split(":")
        el = root.find(tag, _NS)
        if el is None:
            el = etree.SubElement(root, f"{{{_NS[prefix]}}}{local}", nsmap={prefix: _NS[prefix]})
        el.text = text
        if prefix == "dcterms":
            el.set(f"{{{_NS['xsi']}}}type", "dcterms:W3CDTF")
    return package.serialize(root)
