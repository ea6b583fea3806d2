"""Part-level editing of .xlsx/.xlsm packages (zip files of XML parts), without openpyxl.

openpyxl writes formulas with empty cached values and drops what it did not create when it
round-trips a file, so cached values and a user's table rows are written here, part by part:
every other part is copied byte for byte. Writes are atomic (temporary file, then rename).
"""

from __future__ import annotations

import os
import posixpath
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import xmlcells

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def read_parts(path: Path) -> dict[str, bytes]:
    """Every part of the package by name, in the zip's order."""
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """A temporary path beside `target`, renamed onto it when the block succeeds."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_parts(source: Path, target: Path, changed: dict[str, bytes | None]) -> None:
    """Copy `source` to `target` (atomically), replacing the parts in `changed` (None drops one;
    new names are appended). Unchanged parts keep their bytes and compression."""
    with zipfile.ZipFile(source) as zin, atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w") as zout:
        existing = set(zin.namelist())
        for info in zin.infolist():
            if info.filename in changed:
                data = changed[info.filename]
                if data is not None:
                    zout.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
            else:
                zout.writestr(info, zin.read(info.filename))
        for name, data in changed.items():
            if data is not None and name not in existing:
                zout.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)


def resolve(base_dir: str, target: str) -> str:
    """A relationship's target as a part name: absolute ('/xl/...') or relative to `base_dir`."""
    return target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(base_dir, target))


def sheet_parts(parts: dict[str, bytes]) -> dict[str, str]:
    """Sheet name -> worksheet part name, from workbook.xml and its relationships."""
    book = ET.fromstring(parts["xl/workbook.xml"])
    rels = ET.fromstring(parts["xl/_rels/workbook.xml.rels"])
    targets = {r.get("Id"): r.get("Target") for r in rels}
    out = {}
    for sheet in book.iter(f"{{{MAIN}}}sheet"):
        out[sheet.get("name")] = resolve("xl", targets[sheet.get(f"{{{REL}}}id")])
    return out


def set_cached_values(data: bytes, values: dict[str, Any]) -> bytes:
    """A worksheet part with cached values for its cells (formulas kept), edited as text.

    `values` maps cell references to a number, text, bool, or an Excel error text ('#N/A').
    """
    return xmlcells.set_values(data.decode("utf-8"), values).encode("utf-8")


def uncached_formulas(path: Path) -> dict[str, set[str]]:
    """Sheet name -> references of formula cells that carry no cached value (an empty text is one)."""
    parts = read_parts(path)
    found: dict[str, set[str]] = {}
    for sheet, part in sheet_parts(parts).items():
        root = ET.fromstring(parts[part])
        found[sheet] = {c.get("r") for c in root.iter(f"{{{MAIN}}}c")
                        if c.find(f"{{{MAIN}}}f") is not None and c.get("t") != "str"
                        and not (c.findtext(f"{{{MAIN}}}v") or "")}
    return found


def fill_cached_values(source: Path, target: Path, values: dict[str, dict[str, Any]]) -> None:
    """`source` written to `target` with cached values: {sheet name: {cell ref: value}}."""
    parts = read_parts(source)
    by_sheet = sheet_parts(parts)
    changed = {by_sheet[s]: set_cached_values(parts[by_sheet[s]], v) for s, v in values.items() if v}
    write_parts(source, target, changed)

