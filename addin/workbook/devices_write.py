"""Add or update one row of a workbook's Devices table, editing only the parts that must change.

A user's workbook is never round-tripped through openpyxl (which drops charts, images and
cached values it did not create): the Devices worksheet part and its table part are edited as
text, every other part is copied byte for byte, the write is atomic and the original is kept
as `NAME.bak`. Text goes in as inline strings, so a name such as '=1+1' stays text.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import stat
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

from openpyxl.utils import get_column_letter, range_boundaries

from ... import calc
from ..functions import native
from ..ooxml import package, xmlcells
from . import devices_table


class NotATrainingBudgetWorkbook(calc.TrainingBudgetError):
    """The file is not a workbook with a Devices table, or cannot be written safely."""


def _refuse_unsafe(path: Path) -> None:
    if not path.exists():
        raise NotATrainingBudgetWorkbook(f"{path} does not exist")
    for lock in (path.with_name(f"~${path.name}"), path.with_name(f".~lock.{path.name}#")):
        if lock.exists():
            raise NotATrainingBudgetWorkbook(f"{path} is open in Excel or LibreOffice ({lock.name}); close it first")
    read_only = not path.stat().st_mode & stat.S_IWUSR  # also for root, whom os.access lets write
    if read_only or not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
        raise NotATrainingBudgetWorkbook(f"{path} is read-only; nothing was changed")
    if not zipfile.is_zipfile(path):
        raise NotATrainingBudgetWorkbook(f"{path} is not an Excel workbook (not a zip package)")


def find_table_part(parts: dict[str, bytes], sheet_part: str) -> str:
    """The part of the Devices table among the sheet's table parts."""
    rels_name = posixpath.join(posixpath.dirname(sheet_part), "_rels", posixpath.basename(sheet_part) + ".rels")
    rels = ET.fromstring(parts.get(rels_name, b"<Relationships/>"))
    for rel in rels:
        if rel.get("Type", "").endswith("/table"):
            target = package.resolve(posixpath.dirname(sheet_part), rel.get("Target"))
            if ET.fromstring(parts[target]).get("displayName") == native.TABLE:
                return target
    raise NotATrainingBudgetWorkbook("not a TrainingBudget workbook: its Devices sheet has no table named Devices")


def _write_row(sheet: str, r: int, values: dict[str, Any], style_row: int) -> str:
    """The sheet XML with row `r`'s table cells set to `values` (column letter -> value); new
    cells take the style of the same column in `style_row`."""
    return xmlcells.write_row(sheet, r, values, style_row)


def _grow_ref(ref: str, last_row: int) -> str:
    lo_col, lo_row, hi_col, hi_row = range_boundaries(ref)
    return f"{get_column_letter(lo_col)}{lo_row}:{get_column_letter(hi_col)}{max(hi_row, last_row)}"


def _open(path: Path) -> tuple[dict[str, bytes], str, str, str, list[list[Any]]]:
    """The parts, the Devices sheet and table parts, the table's range and cells; or a refusal."""
    path = Path(path)
    _refuse_unsafe(path)
    parts = package.read_parts(path)
    sheet_part = package.sheet_parts(parts).get("Devices")
    if sheet_part is None:
        raise NotATrainingBudgetWorkbook(f"not a TrainingBudget workbook: {path} has no Devices sheet")
    table_part = find_table_part(parts, sheet_part)
    ref = re.search(r'<table\b[^>]*\bref="([^"]+)"', parts[table_part].decode("utf-8")).group(1)
    rows = _table_cells(path, ref)
    devices_table.table_from_rows(rows)  # refuses a table without Name/TFLOPS/Source, or a bad row
    return parts, sheet_part, table_part, ref, rows


def check_writable(path: Path) -> None:
    """Raise NotATrainingBudgetWorkbook unless `upsert_device` could write to `path`."""
    _open(path)


def upsert_device(path: Path, device: calc.Device) -> str:
    """Add `device` to the Devices table of the workbook at `path`, or update the row of that name
    (its blank fields leave the row's cells as they are). Returns 'added' or 'updated'. Refuses,
    leaving the file untouched, when it is not a TrainingBudget workbook, is open, or is read-only.
    """
    path = Path(path)
    parts, sheet_part, table_part, ref, rows = _open(path)
    min_col, min_row, _, max_row = range_boundaries(ref)
    header = devices_table.header_fields(rows[0])
    columns = {f: get_column_letter(min_col + i) for i, f in enumerate(header) if f}
    names = [calc.devices.normalize(str(r[header.index("name")] or "")) for r in rows[1:]]
    key = calc.devices.normalize(device.name)
    updating = key in names  # an update keeps what the measurement does not know (memory, watts, price)
    target = min_row + 1 + names.index(key) if updating else max_row + 1
    values = {columns[f]: getattr(device, f) for f in columns
              if not updating or getattr(device, f) not in (None, "")}
    sheet_xml = _write_row(parts[sheet_part].decode("utf-8"), target, values, style_row=max_row)
    changed = {sheet_part: sheet_xml}
    if not updating:
        changed = _grow(sheet_part, sheet_xml, table_part, parts[table_part].decode("utf-8"), ref, target)
    shutil.copy2(path, path.with_name(path.name + ".bak"))
    package.write_parts(path, path, {k: v.encode("utf-8") for k, v in changed.items()})
    return "updated" if updating else "added"


def _grow(sheet_part: str, sheet_xml: str, table_part: str, table_xml: str, ref: str, last: int) -> dict[str, str]:
    """The sheet's dimension and the table's (and its autoFilter's) range grown to row `last`."""
    grown = _grow_ref(ref, last)
    table_xml = re.sub(r'(<table\b[^>]*\bref=")[^"]+"', rf'\g<1>{grown}"', table_xml, count=1)
    table_xml = re.sub(r'(<autoFilter\b[^>]*\bref=")[^"]+"', rf'\g<1>{grown}"', table_xml, count=1)
    dim = re.search(r'<dimension\b[^>]*\bref="([^"]+)"', sheet_xml)
    if dim:
        sheet_xml = sheet_xml[:dim.start(1)] + _grow_ref(dim.group(1), last) + sheet_xml[dim.end(1):]
    return {sheet_part: sheet_xml, table_part: table_xml}


def _table_cells(path: Path, ref: str) -> list[list[Any]]:
    """The table's cells as a 2-D list. openpyxl only reads here; the file is never saved by it."""
    import openpyxl

    wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        return [[c.value for c in row] for row in wb["Devices"][ref]]
    finally:
        wb.close()
