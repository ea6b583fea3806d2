"""The package layer: every workbook file is opened, parsed and written through here.

- open: `open_parts` (see opening.py) refuses, with one BadWorkbookError naming the file, a file
  that is not a zip, truncated, a folder, unreadable, vanished, not a workbook, encrypted, a zip
  bomb, or a part that does not parse or declares a DOCTYPE; `parse` is the safe lxml parser
  (safexml.py) every reader of a part uses.
- write: `atomic_path`, `write_parts`, `write_package`, `backup` (atomic.py): temporary file created exclusively
  beside the target, fsync, rename; mode kept; NAME.bak never through a symlink; advisory lock.

openpyxl writes formulas with empty cached values and drops what it did not create when it
round-trips a file, so cached values and a user's table rows are written here, part by part:
every other part is copied byte for byte.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import opening, xmlcells
from .atomic import atomic_path, backup, keep_backup, locked, real_target
from .opening import open_parts
from .safexml import BadWorkbookError, edit, parse, serialize

__all__ = ["BadWorkbookError", "atomic_path", "backup", "check", "edit", "fill_cached_values", "in_memory",
           "keep_backup", "locked", "open_parts", "parse", "read_parts", "real_target", "resolve", "serialize",
           "set_cached_values", "sheet_parts", "uncached_formulas", "write_package", "write_parts"]

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def read_parts(path: Path) -> dict[str, bytes]:
    """Every part of the package by name, in the zip's order (checked: see open_parts)."""
    return open_parts(path)


def check(path: Path) -> None:
    """Raise BadWorkbookError unless `path` is a workbook package every reader can open safely.

    Commands call this first, before any other code (openpyxl, LibreOffice) touches the file.
    """
    open_parts(path)


def write_parts(source: Path, target: Path, changed: dict[str, bytes | None]) -> None:
    """Copy `source` to `target` (atomically), replacing the parts in `changed` (None drops one;
    new names are appended). Unchanged parts keep their bytes and compression. Writing over
    `source` itself is safe: the new package goes to a temporary file renamed at the end."""
    with zipfile.ZipFile(source) as zin, atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w") as zout:
        opening._check_sizes(Path(source), zin.infolist())
        existing = set(zin.namelist())
        for info in zin.infolist():
            if info.filename in changed:
                data = changed[info.filename]
                if data is not None:
                    zout.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
            else:
                zout.writestr(info, opening._read_part(Path(source), zin, info))  # bounded as it inflates
        for name, data in changed.items():
            if data is not None and name not in existing:
                zout.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)


def write_package(parts: dict[str, bytes], target: Path) -> None:
    """A new zip package of `parts` at `target`, atomically (see atomic_path); content types first
    (ECMA-376 Part 2 does not require it, but streaming readers look for it there)."""
    order = sorted(parts, key=lambda n: n != opening.CT)
    with atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name in order:
            z.writestr(name, parts[name])


def in_memory(parts: dict[str, bytes]) -> io.BytesIO:
    """A zip package of `parts` in memory (stored, not deflated), for a reader that wants a file,
    e.g. openpyxl given only the sheets it has to load."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    buf.seek(0)
    return buf


def resolve(base_dir: str, target: str) -> str:
    """A relationship's target as a part name: absolute ('/xl/...') or relative to `base_dir`."""
    return target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(base_dir, target))


def sheet_parts(parts: dict[str, bytes]) -> dict[str, str]:
    """Sheet name -> worksheet part name, from workbook.xml and its relationships; a package missing
    either, or a sheet whose relationship is missing, is refused (BadWorkbookError), never a KeyError."""
    for name in ("xl/workbook.xml", "xl/_rels/workbook.xml.rels"):
        if name not in parts:
            raise BadWorkbookError(f"not an Excel workbook: the package has no {name}")
    book = parse("xl/workbook.xml", parts["xl/workbook.xml"])
    rels = parse("xl/_rels/workbook.xml.rels", parts["xl/_rels/workbook.xml.rels"])
    targets = {r.get("Id"): r.get("Target") for r in rels}
    out = {}
    for sheet in book.iter(f"{{{MAIN}}}sheet"):
        target = targets.get(sheet.get(f"{{{REL}}}id"))
        if target is None:
            raise BadWorkbookError(f"not an Excel workbook: sheet {str(sheet.get('name'))[:40]!r} has no relationship")
        out[sheet.get("name")] = resolve("xl", target)
    return out


def set_cached_values(data: bytes, values: dict[str, Any]) -> bytes:
    """A worksheet part with cached values for its cells (formulas kept), edited with lxml.

    `values` maps cell references to a number, text, bool, or an Excel error text ('#N/A').
    """
    return xmlcells.set_values(data, values)


def uncached_formulas(path: Path) -> dict[str, set[str]]:
    """Sheet name -> references of formula cells that carry no cached value (an empty text is one)."""
    parts = read_parts(path)
    found: dict[str, set[str]] = {}
    for sheet, part in sheet_parts(parts).items():  # streamed: a large sheet builds no tree
        found[sheet] = {c.ref for c in xmlcells.stream(part, parts[part])
                        if c.has_formula and c.type != "str" and not c.value}
    return found


def fill_cached_values(source: Path, target: Path, values: dict[str, dict[str, Any]],
                       edits: dict[str, Callable[[bytes], bytes]] | None = None) -> None:
    """`source` written to `target` with cached values: {sheet name: {cell ref: value}}; `edits`
    maps further part names to a function of the part's bytes (applied in the same write)."""
    parts = read_parts(source)
    by_sheet = sheet_parts(parts)
    changed = {by_sheet[s]: set_cached_values(parts[by_sheet[s]], v) for s, v in values.items() if v}
    changed |= {name: edit(parts[name]) for name, edit in (edits or {}).items() if name in parts}
    write_parts(source, target, changed)

