"""The module list of a workbook's VBA project (xl/vbaProject.bin), read without running it.

olefile opens the compound file; the `VBA/dir` stream, compressed as MS-OVBA §2.4.1 describes,
holds one MODULENAME record (id 0x0019) per module, followed by its MODULETYPE record
(0x0021 procedural, 0x0022 document or class). This is the list Excel itself loads.
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import olefile
import xlwings

# Modules the add-in route adds legitimately: xlwings' "Import Functions" writes xlwings_udfs.
ADDIN_MODULES = {"xlwings_udfs"}
_PROJECTVERSION, _MODULENAME, _PROCEDURAL, _DOCUMENT_OR_CLASS = 0x0009, 0x0019, 0x0021, 0x0022


def decompress(data: bytes) -> bytes:
    """MS-OVBA §2.4.1 decompression of a CompressedContainer."""
    if not data or data[0] != 1:
        raise ValueError("not an MS-OVBA compressed container")
    out, pos = bytearray(), 1
    while pos < len(data):
        header = int.from_bytes(data[pos:pos + 2], "little")
        end, pos, start = min(pos + (header & 0x0FFF) + 3, len(data)), pos + 2, len(out)
        if not header & 0x8000:  # a raw chunk of 4096 bytes
            out += data[pos:pos + 4096]
            pos += 4096
            continue
        while pos < end:
            flags, pos = data[pos], pos + 1
            for bit in range(8):
                if pos >= end:
                    break
                if not flags >> bit & 1:
                    out.append(data[pos])
                    pos += 1
                    continue
                token, pos = int.from_bytes(data[pos:pos + 2], "little"), pos + 2
                bits = max((len(out) - start - 1).bit_length(), 4)
                offset, length = (token >> (16 - bits)) + 1, (token & (0xFFFF >> bits)) + 3
                for _ in range(length):
                    out.append(out[-offset])
    return bytes(out)


def modules(vba_project: bytes) -> dict[str, str]:
    """Module name -> 'procedural' or 'document/class', from a vbaProject.bin's dir stream."""
    with olefile.OleFileIO(io.BytesIO(vba_project)) as ole:
        d = decompress(ole.openstream("VBA/dir").read())
    found, name, pos = {}, None, 0
    while pos + 6 <= len(d):
        rid, size = struct.unpack_from("<HI", d, pos)
        pos += 6
        if rid == _PROJECTVERSION:  # its size field says 4, but 6 bytes follow (MS-OVBA §2.3.4.2.1.11)
            pos += 6
            continue
        if rid == _MODULENAME:
            name = d[pos:pos + size].decode("latin-1")
        elif rid in (_PROCEDURAL, _DOCUMENT_OR_CLASS) and name is not None:
            found[name] = "procedural" if rid == _PROCEDURAL else "document/class"
        pos += size
    return found


def template_modules() -> dict[str, str]:
    """The modules of the VBA project the template ships (xlwings' quickstart.xlsm)."""
    with zipfile.ZipFile(Path(xlwings.__file__).parent / "quickstart.xlsm") as z:
        return modules(z.read("xl/vbaProject.bin"))
