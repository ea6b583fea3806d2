"""A workbook whose zip members are damaged (a bad CRC, a corrupt deflate stream) is refused in one
line naming the file and the part, by every command that reads a workbook: never a zlib traceback."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.conftest import ROOT, invoke

TEMPLATE = ROOT / "workbook" / "TrainingBudget.xlsm"


def _data_start(data: bytes, info: zipfile.ZipInfo) -> int:
    """Where a member's compressed bytes begin (after its local header, APPNOTE 4.3.7)."""
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    return info.header_offset + 30 + name_len + extra_len


def _zlib_broken(path: Path) -> tuple[Path, str]:
    """The template with one byte of a deflated member flipped so that inflating it raises zlib.error."""
    data = TEMPLATE.read_bytes()
    for info in zipfile.ZipFile(TEMPLATE).infolist():
        if info.compress_type != zipfile.ZIP_DEFLATED:
            continue
        start = _data_start(data, info)
        for k in range(min(info.compress_size, 64)):
            bad = bytearray(data)
            bad[start + k] ^= 0xFF
            try:
                zipfile.ZipFile(io.BytesIO(bytes(bad))).read(info.filename)
            except zlib.error:
                path.write_bytes(bad)
                return path, info.filename
            except zipfile.BadZipFile:
                continue
    raise AssertionError("no flipped byte gave a zlib error")  # pragma: no cover


def _crc_broken(path: Path) -> tuple[Path, str]:
    """The template with xl/workbook.xml's CRC-32 changed in its local and central headers."""
    data = bytearray(TEMPLATE.read_bytes())
    info = zipfile.ZipFile(TEMPLATE).getinfo("xl/workbook.xml")
    crc = struct.pack("<I", info.CRC ^ 1)
    data[info.header_offset + 14:info.header_offset + 18] = crc
    at = data.find(b"PK\x01\x02")
    while at != -1:
        name_len = struct.unpack("<H", data[at + 28:at + 30])[0]
        if data[at + 46:at + 46 + name_len] == b"xl/workbook.xml":
            data[at + 16:at + 20] = crc
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(data)
    return path, "xl/workbook.xml"


@pytest.mark.parametrize("damage", [_zlib_broken, _crc_broken], ids=["deflate", "crc"])
@pytest.mark.parametrize("command", ["verify", "export", "measure"])
def test_damaged_member_is_one_line(tmp_path, damage, command):
    book, part = damage(tmp_path / "damaged.xlsm")
    args = {"verify": ["verify", str(book), "--no-recalc"],
            "export": ["export", str(book), "--out", str(tmp_path / "out.xlsx")],
            "measure": ["measure", "--seconds", "0.1", "--into", str(book)]}[command]
    proc = invoke(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert str(book) in lines[0] and part in lines[0] and "damaged" in lines[0]
    assert not (tmp_path / "out.xlsx").exists()


def test_package_layer_refuses_damaged_member(tmp_path):
    from trainbudget.addin.ooxml import package

    book, part = _zlib_broken(tmp_path / "d.xlsm")
    with pytest.raises(package.BadWorkbookError, match=part):
        package.read_parts(book)
