"""Opening a workbook file: every way it can be wrong is one BadWorkbookError naming the file.

Decompression is bounded before anything is inflated, from the sizes the zip declares, and again
while inflating (in chunks), so a zip bomb or a lying header is refused before it fills memory:

- MAX_PART_BYTES: one part at most 256 MiB inflated (a full 1,048,576-row sheet of three numeric
  columns is ~125 MB of XML: openpyxl writes 25 MB for 200,000 such rows, measured here; this
  project's template is under 1 MiB in all);
- MAX_TOTAL_BYTES: all parts at most 512 MiB inflated;
- MAX_PARTS: at most 10,000 parts;
- MAX_RATIO: a part over RATIO_FLOOR_BYTES (1 MiB) inflating more than 200x its compressed size is
  refused (measured on openpyxl-written sheets: 9.6x for a column of formulas, 14.5x for repeated
  numbers; zeros deflate ~1,000x, the 2 GiB bomb of the tests to a 2 MB file).

Encrypted workbooks (Excel's "Encrypt with Password") are not zips at all but OLE compound files
holding an `EncryptedPackage` stream (MS-OFFCRYPTO §2.3.4.4); they are named as such.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
import zlib
from pathlib import Path

from . import safexml
from .safexml import BadWorkbookError

MiB = 1 << 20
MAX_PART_BYTES = 256 * MiB
MAX_TOTAL_BYTES = 512 * MiB
MAX_RATIO = 200
RATIO_FLOOR_BYTES = 1 * MiB
MAX_PARTS = 10_000  # a workbook of 1,000 sheets with a drawing, chart and table each has ~5,000
CHUNK = 1 * MiB
STREAM_BYTES = 4 * MiB  # XML parts larger than this are checked as a stream (safexml.check_stream), not as a tree
OLE_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")  # [MS-CFB] §2.2 header signature
CT = "[Content_Types].xml"
OFFICE_DOC = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
XML_SUFFIXES = (".xml", ".rels")  # VML drawings are often not well-formed XML: read by their users


def open_parts(path: Path | str, parse_xml: bool = True) -> dict[str, bytes]:
    """Every part of the workbook package at `path` by name, in the zip's order; each XML part
    checked with the safe parser when `parse_xml`. Raises BadWorkbookError (one line, naming the
    file) for anything that makes it unusable."""
    path = Path(path)
    data_file = _open_file(path)
    try:
        parts = _read_zip(path, data_file)
    finally:
        data_file.close()
    _check_workbook(path, parts, parse_xml)
    return parts


def _open_file(path: Path):
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise BadWorkbookError(f"{path} is a folder, not a workbook file")
        if not stat.S_ISREG(st.st_mode):
            raise BadWorkbookError(f"{path} is not a regular file")
        f = open(path, "rb")  # noqa: SIM115 - closed by the caller
    except FileNotFoundError:
        raise BadWorkbookError(f"{path} does not exist (or vanished while being read)") from None
    except PermissionError:
        raise BadWorkbookError(f"{path} cannot be read: permission denied") from None
    except IsADirectoryError:
        raise BadWorkbookError(f"{path} is a folder, not a workbook file") from None
    except OSError as e:
        raise BadWorkbookError(f"{path} cannot be read: {e.strerror or e}") from None
    head = f.read(8)
    f.seek(0)
    if head == OLE_MAGIC:
        f.close()
        raise BadWorkbookError(_ole_message(path))
    return f


def _ole_message(path: Path) -> str:
    import olefile

    try:
        with olefile.OleFileIO(str(path)) as ole:
            encrypted = ole.exists("EncryptedPackage")
    except Exception:
        encrypted = False
    if encrypted:
        return f"{path} is encrypted (password-protected); save a copy without a password and use that"
    return f"{path} is an old binary Office file (OLE), not an .xlsx/.xlsm workbook"


def _read_zip(path: Path, f) -> dict[str, bytes]:
    try:
        with zipfile.ZipFile(f) as z:
            infos = z.infolist()
            _check_sizes(path, infos)
            return {i.filename: _read_part(path, z, i) for i in infos if not i.is_dir()}
    except BadWorkbookError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError) as e:
        what = ("encrypted" if "encrypted" in str(e)
                else "not an Excel workbook (not a zip package, or a truncated or damaged one)")
        raise BadWorkbookError(f"{path} is {what}: {' '.join(str(e).split())[:120]}") from None
    except FileNotFoundError:
        raise BadWorkbookError(f"{path} vanished while being read") from None
    except OSError as e:
        raise BadWorkbookError(f"{path} cannot be read: {e.strerror or e}") from None


def _check_sizes(path: Path, infos: list[zipfile.ZipInfo]) -> None:
    total = 0
    if len(infos) > MAX_PARTS:
        raise BadWorkbookError(f"{path} holds {len(infos)} parts, over the {MAX_PARTS} limit; refused")
    names = [i.filename.lower() for i in infos]
    if len(set(names)) != len(names):  # OPC part names are case-insensitive and unique (ECMA-376 Part 2)
        twice = next(n for n in names if names.count(n) > 1)
        raise BadWorkbookError(f"{path} holds part {twice} twice; refused (which one would a reader use?)")
    for i in infos:
        if i.flag_bits & 0x1:
            raise BadWorkbookError(f"{path} is encrypted (part {i.filename}); use a copy without a password")
        _check_one(path, i.filename, i.file_size, i.compress_size)
        total += i.file_size
        if total > MAX_TOTAL_BYTES:
            raise BadWorkbookError(f"{path} inflates to over {MAX_TOTAL_BYTES // MiB} MiB; refused (zip bomb?)")


def _check_one(path: Path, name: str, size: int, compressed: int) -> None:
    if size > MAX_PART_BYTES:
        raise BadWorkbookError(f"{path}: part {name} inflates to {size / MiB:.0f} MiB, over the "
                               f"{MAX_PART_BYTES // MiB} MiB limit; refused (zip bomb?)")
    if size > RATIO_FLOOR_BYTES and size > MAX_RATIO * max(compressed, 1):
        raise BadWorkbookError(f"{path}: part {name} inflates {size / max(compressed, 1):.0f}x, over the "
                               f"{MAX_RATIO}x limit; refused (zip bomb?)")


def _read_part(path: Path, z: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The part's bytes, read in chunks and stopped at the limits whatever its header said."""
    out, got = io.BytesIO(), 0  # getvalue() hands over its buffer: a large part is held once, not twice
    try:
        with z.open(info) as src:
            while chunk := src.read(CHUNK):
                got += len(chunk)
                _check_one(path, info.filename, got, info.compress_size)
                out.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError) as e:  # a bad CRC, a damaged deflate stream, a cut-off member
        raise BadWorkbookError(f"{path}: part {info.filename} is damaged ({' '.join(str(e).split())[:120]}); "
                               "refused (save the workbook again, or use a backup)") from None
    return out.getvalue()


def _check_workbook(path: Path, parts: dict[str, bytes], parse_xml: bool) -> None:
    if CT not in parts:
        raise BadWorkbookError(f"{path} is a zip but not a workbook: it has no {CT}")
    if "_rels/.rels" not in parts:
        raise BadWorkbookError(f"{path} is a zip but not a workbook: it has no _rels/.rels")
    rels = safexml.parse("_rels/.rels", parts["_rels/.rels"], str(path))
    main = [r.get("Target", "").lstrip("/") for r in rels if r.get("Type") == OFFICE_DOC]
    if not main or main[0] not in parts:
        raise BadWorkbookError(f"{path} is a zip but not a workbook: its main part is missing")
    if not main[0].endswith("workbook.xml"):
        raise BadWorkbookError(f"{path} is not an Excel workbook (its main part is {main[0]})")
    if parse_xml:
        for name, data in parts.items():
            if not name.lower().endswith(XML_SUFFIXES):
                continue
            if len(data) <= STREAM_BYTES:
                safexml.parse(name, data, str(path))
                continue
            try:  # a large part (a sheet of many rows) is checked as a stream: no tree
                safexml.check_stream(name, data)
            except BadWorkbookError as e:
                raise BadWorkbookError(f"{path}: {e}") from None
