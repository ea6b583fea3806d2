"""Add or update one row of a workbook's Devices table, editing only the parts that must change.

A user's workbook is never round-tripped through openpyxl (which drops charts, images and
cached values it did not create): the Devices worksheet part and its table part are edited with
lxml (xmlcells), every other part is copied byte for byte. The name is checked before anything
is written; the write is atomic, under the folder's write lock, with the original kept as
`NAME.bak`; a symlinked workbook is edited behind its link (see ooxml.atomic). Text goes in as
inline strings, so a name such as '=1+1' stays text.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path
from typing import Any

from lxml import etree
from openpyxl.utils import get_column_letter, range_boundaries

from ... import calc
from ..ooxml import package, xmlcells
from ..template import devices_table
from ..template.devices_table import NotATrainingBudgetWorkbook

MAX_NAME_CHARS = 255  # Excel's own limit for a table's text used as a name is 255 characters


def check_name(name: str) -> str:
    """`name` stripped, or TrainingBudgetError: blank, over 255 characters, a control character
    (XML 1.0 cannot hold most of them), or not valid Unicode (a lone surrogate)."""
    shown = repr(name[:40]) + ("..." if len(name) > 40 else "")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise calc.TrainingBudgetError(f"--name {shown} is not valid Unicode text") from None
    bad = next((ch for ch in name if unicodedata.category(ch) in ("Cc", "Cs") or ch in "\ufffe\uffff"), None)
    if bad is not None:
        raise calc.TrainingBudgetError(f"--name {shown} holds control character U+{ord(bad):04X}")
    if not name.strip():
        raise calc.TrainingBudgetError("--name is blank: give the device a name")
    if len(name.strip()) > MAX_NAME_CHARS:
        raise calc.TrainingBudgetError(f"--name is {len(name)} characters long; at most {MAX_NAME_CHARS}")
    return name.strip()


def _refuse_unsafe(path: Path) -> None:
    if not os.path.lexists(path):
        raise NotATrainingBudgetWorkbook(f"{path} does not exist")
    for lock in (path.with_name(f"~${path.name}"), path.with_name(f".~lock.{path.name}#")):
        if lock.exists():
            raise NotATrainingBudgetWorkbook(f"{path} is open in Excel or LibreOffice ({lock.name}); close it first")
    try:
        st = path.stat()
    except OSError:
        return  # open_parts names what is wrong
    read_only = not st.st_mode & stat.S_IWUSR  # also for root, whom os.access lets write
    if stat.S_ISREG(st.st_mode) and (read_only or not os.access(path, os.W_OK)
                                     or not os.access(path.parent, os.W_OK)):
        raise NotATrainingBudgetWorkbook(f"{path} is read-only; nothing was changed")


def _open(path: Path) -> tuple[dict[str, bytes], str, str, str, list[list[Any]]]:
    """The parts, the Devices sheet and table parts, the table's range and cells; or a refusal."""
    path = Path(path)
    _refuse_unsafe(path)
    return devices_table.open_table(path)


def check_writable(path: Path) -> None:
    """Raise NotATrainingBudgetWorkbook (or BadWorkbookError) unless `upsert_device` could write."""
    _open(package.real_target(path))


def upsert_device(path: Path, device: calc.Device) -> str:
    """Add `device` to the Devices table of the workbook at `path`, or update the row of that name
    (its blank fields leave the row's cells as they are). Returns 'added' or 'updated'. Refuses,
    leaving the file untouched, when it is not a TrainingBudget workbook, is open, or is read-only.
    A symlink is followed once: the real workbook is edited, the link stays.
    """
    name = check_name(device.name)
    real = package.real_target(path)
    with package.locked(real):  # read, change and write with no other writer in between
        parts, sheet_part, table_part, ref, rows = _open(real)
        changed, updating = _changes(parts, sheet_part, table_part, ref, rows, device, name)
        package.backup(real)
        package.write_parts(real, real, changed)
    return "updated" if updating else "added"


def _changes(parts: dict[str, bytes], sheet_part: str, table_part: str, ref: str, rows: list[list[Any]],
             device: calc.Device, name: str) -> tuple[dict[str, bytes], bool]:
    min_col, min_row, _, max_row = range_boundaries(ref)
    header = devices_table.header_fields(rows[0])
    columns = {f: get_column_letter(min_col + i) for i, f in enumerate(header) if f}
    names = [calc.normalize_device(str(r[header.index("name")] or "")) for r in rows[1:]]
    key = calc.normalize_device(name)
    updating = key in names  # an update keeps what the measurement does not know (memory, watts, price)
    target = min_row + 1 + names.index(key) if updating else max_row + 1
    if updating and "kind" in header:
        kind = str(rows[names.index(key) + 1][header.index("kind")] or "")
        if kind and kind != device.kind:  # a datasheet row is not a measurement to overwrite
            raise calc.TrainingBudgetError(
                f"--name {name!r} is the Devices row of a {kind!r}, not a measured row; pick another name")
    fields = {f: (name if f == "name" else getattr(device, f)) for f in columns}
    values = {columns[f]: v for f, v in fields.items() if not updating or v not in (None, "")}
    sheet = package.parse(sheet_part, parts[sheet_part])
    cells = xmlcells.Sheet(sheet)
    for col, value in values.items():
        cell = cells.cell(f"{col}{target}", create=False)
        like = cell if cell is not None else cells.cell(f"{col}{max_row}", create=False)
        cells.set_constant(cells.cell(f"{col}{target}"), value, like.get("s") if like is not None else None)
    changed = {sheet_part: sheet}
    if not updating:
        table = package.parse(table_part, parts[table_part])
        _grow(sheet, table, target)
        changed[table_part] = table
    return {k: package.serialize(v) for k, v in changed.items()}, updating


def _grow(sheet: Any, table: Any, last: int) -> None:
    """The sheet's dimension and the table's (and its autoFilter's) range grown to row `last`."""
    table.set("ref", xmlcells.grow_ref(table.get("ref"), last))
    for f in table.iterchildren(f"{{{etree.QName(table).namespace}}}autoFilter"):
        f.set("ref", xmlcells.grow_ref(f.get("ref"), last))
    dim = sheet.find(f"{{{etree.QName(sheet).namespace}}}dimension")
    if dim is not None and dim.get("ref"):
        ref = dim.get("ref")
        dim.set("ref", xmlcells.grow_ref(ref if ":" in ref else f"{ref}:{ref}", last))
