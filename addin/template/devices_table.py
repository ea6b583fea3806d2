"""The workbook's Devices table as rows: header mapping, checks, and the add-in's cached read.

Columns are found by header, so a user may reorder them; headers match the template's
("TFLOP/s", "Memory GiB", ...; earlier templates' "TFLOPS", "Memory GB") or the catalog CSV's
names ("tflops", "memory_gib", ...), case- and space-insensitively. Name and TFLOP/s are
required; unknown columns are ignored.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openpyxl.utils import range_boundaries

from ... import calc
from ..functions import native
from ..ooxml import package, xmlcells

REQUIRED_FIELDS = ("name", "tflops", "source")
TTL_S = 2.0  # one recalculation burst reads the sheet once; an edit is seen 2 s later at most


def _key(text: Any) -> str:
    return "".join(str(text or "").lower().split())


# Headers earlier templates wrote, still read: "TFLOPS" (now "TFLOP/s") and "Memory GB" (now
# "Memory GiB": the figure as sold, "80GB" of HBM, is 80 GiB; see calc.hardware.catalog).
LEGACY_HEADERS = {"TFLOPS": "tflops", "Memory GB": "memory_gib", "memory_gb": "memory_gib"}
_FIELD_BY_HEADER = ({_key(h): f for f, h in native.HEADERS.items()} | {_key(f): f for f in native.HEADERS}
                    | {_key(h): f for h, f in LEGACY_HEADERS.items()})


def header_fields(header: list[Any] | tuple[Any, ...]) -> list[str | None]:
    """The Device field of each header cell ('TFLOPS' or 'tflops' -> 'tflops'; unknown -> None)."""
    return [_FIELD_BY_HEADER.get(_key(h)) for h in header]


def records(rows: list[list[Any]] | tuple[tuple[Any, ...], ...],
            where: str = "Devices") -> tuple[list[str | None], list[tuple[int, dict[str, Any]]]]:
    """The header's fields, and (row index in `rows`, {field: value}) for each non-empty row.

    Raises when the header lacks a required column.
    """
    if not rows:
        raise calc.TrainingBudgetError(f"{where} table is empty: it needs a header row")
    header = header_fields(rows[0])
    for field in REQUIRED_FIELDS:
        if field not in header:
            found = ", ".join(str(h) for h in rows[0] if h is not None)
            raise calc.TrainingBudgetError(
                f"{where} table has no {native.HEADERS[field]!r} column (found: {found})")
    return header, [(i, {f: v for f, v in zip(header, row, strict=False) if f})
                    for i, row in enumerate(rows) if i and any(v not in (None, "") for v in row)]


def table_from_rows(rows: list[list[Any]] | tuple[tuple[Any, ...], ...],
                    where: str = "Devices") -> calc.DeviceTable:
    """A DeviceTable from a Devices table's cells: a header row, then one row per device."""
    _, found = records(rows, where)
    return calc.DeviceTable.from_records((record for _, record in found), f"{where} row")


def read_book_rows(book: Any) -> list[list[Any]] | None:
    """The Devices table's cells (header first) of an xlwings Book, or None if it has none."""
    for sheet in book.sheets:
        for table in sheet.tables:
            if table.name == native.TABLE:
                return table.range.options(ndim=2).value
    return None


_cache: dict[str, tuple[float, calc.DeviceTable | Exception]] = {}


def devices_for(caller: Any, clock: Callable[[], float] = time.monotonic,
                read: Callable[[Any], list[list[Any]] | None] | None = None) -> calc.DeviceTable:
    """The calling workbook's Devices rows, then the packaged catalog; cached for TTL_S seconds."""
    if caller is None:
        return calc.catalog()
    book = caller.sheet.book
    now = clock()
    hit = _cache.get(book.fullname)
    if hit is None or now - hit[0] >= TTL_S:
        try:
            rows = (read or read_book_rows)(book)
            found: calc.DeviceTable | Exception = (
                calc.catalog() if rows is None else table_from_rows(rows).with_fallback(calc.catalog()))
        except calc.TrainingBudgetError as e:
            found = e
        hit = _cache[book.fullname] = (now, found)
    if isinstance(hit[1], Exception):
        raise hit[1]
    return hit[1]


def table_from_workbook(path: Any) -> calc.DeviceTable:
    """The DeviceTable of a TrainingBudget workbook file's Devices table (measured rows included)."""
    return table_from_rows(read_rows(path), f"{path} Devices")


def load_catalog(path: Any) -> calc.DeviceTable:
    """`--catalog`: a CSV of devices, or a TrainingBudget workbook (.xlsm/.xlsx or any zip: its
    Devices table). A binary or undecodable file is a TrainingBudgetError naming it."""
    from pathlib import Path

    from ...calc import open_user_file as open_regular

    path = Path(path)
    with open_regular(path, "--catalog") as f:  # a FIFO or device refused, never waited on
        head = f.read(8)
    if path.suffix.lower() in (".xlsm", ".xlsx") or head.startswith((b"PK\x03\x04", bytes.fromhex("D0CF11E0"))):
        return table_from_workbook(path)
    from ...calc import read_user_text as read_text

    text = read_text(path, "--catalog")
    if "\0" in text or not text.strip():
        raise calc.TrainingBudgetError(f"--catalog {path} is {'binary' if text.strip() else 'empty'}; give a "
                                       "CSV or a TrainingBudget workbook")
    table = calc.device_table_from_csv(text, f"{path} row")  # the text read once, above
    if not len(table):
        raise calc.TrainingBudgetError(f"--catalog {path} holds no device rows (header: name,tflops,source,...)")
    return table


class NotATrainingBudgetWorkbook(calc.TrainingBudgetError):
    """The file is not a workbook with a Devices table, or cannot be written safely."""


def find_table_part(parts: dict[str, bytes], sheet_part: str) -> str:
    """The part of the Devices table among the sheet's table parts."""
    rels_name = posixpath.join(posixpath.dirname(sheet_part), "_rels", posixpath.basename(sheet_part) + ".rels")
    if rels_name in parts:
        for rel in package.parse(rels_name, parts[rels_name]):
            if rel.get("Type", "").endswith("/table"):
                target = package.resolve(posixpath.dirname(sheet_part), rel.get("Target", ""))
                if target in parts and package.parse(target, parts[target]).get("displayName") == native.TABLE:
                    return target
    raise NotATrainingBudgetWorkbook("not a TrainingBudget workbook: its Devices sheet has no table named Devices")


def open_table(path: Path) -> tuple[dict[str, bytes], str, str, str, list[list[Any]]]:
    """The parts, the Devices sheet and table parts, the table's range and cells; or a refusal."""
    path = Path(path)
    parts = package.open_parts(path)
    try:
        sheet_part = package.sheet_parts(parts).get("Devices")
    except package.BadWorkbookError as e:  # no workbook.xml or relationships: the message names the file
        raise package.BadWorkbookError(f"{path}: {e}") from None
    if sheet_part is None or sheet_part not in parts:
        raise NotATrainingBudgetWorkbook(f"not a TrainingBudget workbook: {path} has no Devices sheet")
    table_part = find_table_part(parts, sheet_part)
    ref = package.parse(table_part, parts[table_part]).get("ref") or ""
    try:
        range_boundaries(ref)
    except (ValueError, TypeError):
        raise NotATrainingBudgetWorkbook(f"{path}: the Devices table's range {ref!r} is not valid") from None
    strings = xmlcells.shared_strings(parts.get("xl/sharedStrings.xml"))
    rows = xmlcells.read_range(parts[sheet_part], ref, strings)
    table_from_rows(rows)  # refuses a table without Name/TFLOPS/Source, or a bad row
    return parts, sheet_part, table_part, ref, rows


def read_rows(path: Path) -> list[list[Any]]:
    """The Devices table's cells (header first) of the workbook file at `path`, read through the
    package layer (bounded, safe parsing); a refusal names the file."""
    return open_table(package.real_target(path))[4]
