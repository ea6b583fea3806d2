"""Hostile workbook files, generated at test time (nothing large is committed)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

GiB = 1 << 30
MiB = 1 << 20
ENDOFCHAIN, FREESECT, FATSECT, NOSTREAM = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD, 0xFFFFFFFF

CT = (b'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
      b'content-types"><Default Extension="xml" ContentType="application/xml"/></Types>')
RELS = (b'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
        b'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
        b'officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>')
WORKBOOK = (b'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/'
            b'spreadsheetml/2006/main"><sheets/></workbook>')
BILLION_LAUGHS = b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">' + b"".join(
    b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10) for i in range(1, 10)
) + b']><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">&lol9;</workbook>'
XXE = (b'<?xml version="1.0"?><!DOCTYPE w [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
       b'<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">&x;</workbook>')


def minimal_package(path: Path, extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        parts = {"[Content_Types].xml": CT, "_rels/.rels": RELS, "xl/workbook.xml": WORKBOOK} | (extra or {})
        for name, data in parts.items():
            z.writestr(name, data)
    return path


def zip_bomb(path: Path, size: int = 2 * GiB) -> Path:
    """A small zip whose sheet part inflates to `size` bytes of zeros (streamed, never in memory)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in {"[Content_Types].xml": CT, "_rels/.rels": RELS, "xl/workbook.xml": WORKBOOK}.items():
            z.writestr(name, data)
        chunk = bytes(16 * MiB)
        with z.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as f:
            for _ in range(size // len(chunk)):
                f.write(chunk)
    return path


def lying_bomb(path: Path, size: int = 300 * MiB, claimed: int = 100) -> Path:
    """A zip whose 300 MiB part of zeros claims (in both headers) to inflate to 100 bytes."""
    zip_bomb(path, size)
    data = bytearray(path.read_bytes())
    name = b"xl/worksheets/sheet1.xml"
    for sig, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        i = data.find(sig)
        while i >= 0:
            n = struct.unpack_from("<H", data, i + (26 if sig == b"PK\x03\x04" else 28))[0]
            start = i + (30 if sig == b"PK\x03\x04" else 46)
            if bytes(data[start:start + n]) == name:
                _patch_size(data, i, sig, size_at, start + n, claimed)
            i = data.find(sig, i + 4)
    path.write_bytes(bytes(data))
    return path


def _patch_size(data: bytearray, i: int, sig: bytes, size_at: int, extra_at: int, claimed: int) -> None:
    if struct.unpack_from("<I", data, i + size_at)[0] != 0xFFFFFFFF:
        struct.pack_into("<I", data, i + size_at, claimed)
        return
    # zip64: the real size sits in the extra field (id 0x0001), uncompressed size first
    extra_len = struct.unpack_from("<H", data, i + (28 if sig == b"PK\x03\x04" else 30))[0]
    j = extra_at
    while j < extra_at + extra_len:
        tag, length = struct.unpack_from("<HH", data, j)
        if tag == 1:
            struct.pack_into("<Q", data, j + 4, claimed)
            return
        j += 4 + length


def encrypted_workbook(path: Path) -> Path:
    """What Excel's "Encrypt with Password" writes, in outline: an OLE compound file ([MS-CFB],
    version 3, 512-byte sectors) holding an `EncryptedPackage` stream ([MS-OFFCRYPTO] §2.3.4.4).
    Built by hand since olefile only reads; the stream's content is random-looking filler."""
    stream = bytes((i * 37 + 11) % 256 for i in range(4096))  # 8 sectors, at the mini-stream cutoff
    header = bytearray(512)
    header[0:8] = bytes.fromhex("D0CF11E0A1B11AE1")
    struct.pack_into("<HHHHH", header, 24, 0x003E, 0x0003, 0xFFFE, 9, 6)
    struct.pack_into("<IIIIIIIII", header, 40, 0, 1, 1, 0, 0x1000, ENDOFCHAIN, 0, ENDOFCHAIN, 0)
    difat = [0] + [FREESECT] * 108
    struct.pack_into("<109I", header, 76, *difat)
    fat = [FATSECT, ENDOFCHAIN, *range(3, 10), ENDOFCHAIN]  # stream: sectors 2..9
    fat_sector = struct.pack("<128I", *(fat + [FREESECT] * (128 - len(fat))))
    entries = [_dir_entry("Root Entry", 5, child=1, start=ENDOFCHAIN, size=0),
               _dir_entry("EncryptedPackage", 2, child=NOSTREAM, start=2, size=len(stream)),
               _dir_entry("", 0, child=NOSTREAM, start=0, size=0), _dir_entry("", 0, child=NOSTREAM, start=0, size=0)]
    path.write_bytes(bytes(header) + fat_sector + b"".join(entries) + stream)
    return path


def _dir_entry(name: str, kind: int, child: int, start: int, size: int) -> bytes:
    e = bytearray(128)
    raw = name.encode("utf-16-le") + b"\0\0" if name else b""
    e[0:len(raw)] = raw
    struct.pack_into("<HBB", e, 64, len(raw), kind, 1 if kind else 0)
    struct.pack_into("<III", e, 68, NOSTREAM, NOSTREAM, child)
    struct.pack_into("<IQ", e, 116, start, size)
    return bytes(e)


def chart_workbook(path: Path, device: str = "H100 SXM, BF16 tensor core, dense") -> Path:
    """A small workbook (written by openpyxl) calling the add-in, with a chart."""
    import openpyxl
    from openpyxl.chart import BarChart, Reference

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Plan"
    for r, p in enumerate((1e9, 7e9, 13e9), start=1):
        ws[f"A{r}"] = p
        ws[f"B{r}"] = f'=TRAIN_HOURS(A{r},1E9,"{device}")'
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=3))
    ws.add_chart(chart, "D2")
    wb.save(path)
    return path


def variant(base: Path, target: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """`base`'s parts, changed in place by `change`, written to `target` as a zip."""
    from trainbudget.addin.ooxml import package

    parts = package.read_parts(base)
    change(parts)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return target


# A child's peak RSS counts the memory of the process it was forked from until it execs (Linux
# keeps the larger of the two high-water marks: exec_mmap's setmax_mm_hiwater_rss), so a command
# started straight from a pytest worker would report the worker's hundreds of MB as its own. A small
# fresh interpreter starts the command and reports the command's peak alone.
_MEASURE = ("import os, subprocess, sys\n"
            "proc = subprocess.Popen(sys.argv[1:])\n"
            "_, status, usage = os.wait4(proc.pid, 0)\n"
            "print(usage.ru_maxrss, file=open(os.environ['TB_PEAK_FILE'], 'w'))\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")


def run_measured(args: list[str], cwd: Path) -> tuple[int, str, float]:
    """Exit status, stderr and peak RSS (MB) of `trainbudget ARGS` run as its own process."""
    err = cwd.parent / f"stderr-{os.getpid()}.txt"
    peak = cwd.parent / f"peak-{os.getpid()}.txt"
    with open(err, "w") as stderr:
        proc = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "trainbudget.addin.cli", *args],
                              stdout=subprocess.DEVNULL, stderr=stderr, cwd=cwd,
                              env={**os.environ, "TB_PEAK_FILE": str(peak)})
    return proc.returncode, err.read_text(), int(peak.read_text()) / 1024  # Linux: ru_maxrss in KiB
