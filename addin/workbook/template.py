"""`trainbudget build`: the template workbook, written with openpyxl over xlwings' quickstart.xlsm.

The VBA project of xlwings' `quickstart.xlsm` (the add-in flavour) is kept byte-identical with
openpyxl's keep_vba. Every formula is a native Excel formula generated from the registry
(trainbudget.addin.functions), and every formula cell carries its cached value computed by
calc, so Protected View, previews and phones show the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
import xlwings

from ... import calc
from .. import TEMPLATE_PATH
from ..ooxml import package
from . import budget_sheet, sheets
from .cached_cells import CachedCells

QUICKSTART = Path(xlwings.__file__).parent / "quickstart.xlsm"
SHEETS = ("Budget", "Devices", "Runs", "Functions", "About", "xlwings.conf")


@dataclass(frozen=True)
class Built:
    """What `build` wrote: the path and every formula cell's cached value."""

    path: Path
    values: dict[str, dict[str, Any]]


def build(out: Path = TEMPLATE_PATH, table: calc.DeviceTable | None = None) -> Built:
    """Write the template to `out` (atomically) and return the cached values it carries."""
    table = calc.catalog() if table is None else table
    wb = openpyxl.load_workbook(QUICKSTART, keep_vba=True)
    cached = CachedCells()
    budget = wb["Sheet1"]  # keeps codeName Sheet1, whose module the VBA project holds
    budget.title = "Budget"
    sheets.write_devices(wb.create_sheet("Devices"), table)
    sheets.write_runs(wb.create_sheet("Runs"), cached)
    budget_sheet.write(budget, cached, table)
    sheets.write_functions(wb.create_sheet("Functions"), cached, table)
    sheets.write_about(wb.create_sheet("About"))
    sheets.write_conf(wb["_xlwings.conf"])
    wb._sheets.sort(key=lambda ws: SHEETS.index(ws.title))
    wb.active = 0
    sheets.add_names(wb)
    out.parent.mkdir(parents=True, exist_ok=True)
    with package.atomic_path(out) as raw:
        wb.save(raw)
        package.fill_cached_values(raw, raw, cached.values)
    return Built(out, dict(cached.values))
