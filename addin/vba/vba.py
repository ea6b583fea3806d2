"""A workbook's VBA project (xl/vbaProject.bin) read without running it: its modules and their source.

olefile opens the compound file. The `VBA/dir` stream, compressed as MS-OVBA §2.4.1 describes,
holds per module (§2.3.4.2.3.2) a MODULENAME record (id 0x0019), MODULESTREAMNAME (0x001A, the
stream under `VBA/` holding the module), MODULEOFFSET (0x0031, §2.3.4.2.3.2.5: where in that
stream the compressed source text starts; the bytes before it are compiled p-code) and MODULETYPE
(0x0021 procedural, 0x0022 document or class), ended by a Terminator (0x002B). The source is the
module stream from that offset, decompressed (§2.4.1), in the project's code page (PROJECTCODEPAGE,
0x0003, §2.3.4.2.1.3).
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import Path

import olefile
import xlwings

# Modules the add-in route adds legitimately: xlwings' "Import Functions" writes xlwings_udfs.
ADDIN_MODULES = {"xlwings_udfs"}
QUICKSTART = Path(xlwings.__file__).parent / "quickstart.xlsm"  # the source of the template's VBA project
MAX_SOURCE_BYTES = 8 * 2**20  # a module's source; MS-OVBA compresses up to ~1000:1, so bound the output
_CODEPAGE, _PROJECTVERSION = 0x0003, 0x0009
_MODULENAME, _STREAMNAME, _OFFSET, _TERMINATOR = 0x0019, 0x001A, 0x0031, 0x002B
_PROCEDURAL, _DOCUMENT_OR_CLASS = 0x0021, 0x0022


@dataclass(frozen=True)
class Module:
    """One VBA module: its name, kind ('procedural' or 'document/class'), source text, and the
    compiled p-code stored before the source (the PerformanceCache, §2.3.4.3)."""

    name: str
    kind: str
    source: str
    pcode: bytes = b""


def decompress(data: bytes, max_bytes: int = MAX_SOURCE_BYTES) -> bytes:
    """MS-OVBA §2.4.1 decompression of a CompressedContainer (at most `max_bytes` out)."""
    if not data or data[0] != 1:
        raise ValueError("not an MS-OVBA compressed container")
    out, pos = bytearray(), 1
    while pos < len(data):
        header = int.from_bytes(data[pos:pos + 2], "little")
        end, pos, start = min(pos + (header & 0x0FFF) + 3, len(data)), pos + 2, len(out)
        if not header & 0x8000:  # a raw chunk of 4096 bytes (§2.4.1.3.3)
            out += data[pos:pos + 4096]
            pos += 4096
            end = pos
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
                if offset > len(out) - start:  # a CopyToken reaches only inside its chunk (§2.4.1.3.19.2)
                    raise ValueError("MS-OVBA copy token points before its chunk")
                for _ in range(length):
                    out.append(out[-offset])
        if len(out) > max_bytes:
            raise ValueError(f"decompressed VBA source exceeds {max_bytes} bytes")
    return bytes(out)


def _records(d: bytes):
    """(id, payload) for each record of a decompressed dir stream."""
    pos = 0
    while pos + 6 <= len(d):
        rid, size = struct.unpack_from("<HI", d, pos)
        pos += 6
        if rid == _PROJECTVERSION:  # its size field says 4, but 6 bytes follow (§2.3.4.2.1.11)
            size = 6
        yield rid, d[pos:pos + size]
        pos += size


def project(vba_project: bytes) -> list[Module]:
    """Every module of a vbaProject.bin with its decompressed source (ValueError/OSError when unreadable)."""
    with olefile.OleFileIO(io.BytesIO(vba_project)) as ole:
        d = decompress(ole.openstream("VBA/dir").read())
        found, codepage, current = [], "cp1252", {}
        for rid, payload in _records(d):
            if rid == _CODEPAGE and len(payload) == 2:
                codepage = f"cp{struct.unpack('<H', payload)[0]}"
            elif rid == _MODULENAME:
                current = {"name": payload.decode("latin-1")}
            elif rid == _STREAMNAME:
                current["stream"] = payload.decode("latin-1")
            elif rid == _OFFSET and len(payload) == 4:
                current["offset"] = struct.unpack("<I", payload)[0]
            elif rid in (_PROCEDURAL, _DOCUMENT_OR_CLASS):
                current["kind"] = "procedural" if rid == _PROCEDURAL else "document/class"
            elif rid == _TERMINATOR and "name" in current:
                stream = ole.openstream(f"VBA/{current.get('stream', current['name'])}").read()
                offset = current.get("offset", 0)
                found.append(Module(current["name"], current.get("kind", "procedural"),
                                    _decode(decompress(stream[offset:]), codepage), stream[:offset]))
                current = {}
    return found


def _decode(text: bytes, codepage: str) -> str:
    try:
        return text.decode(codepage)
    except (LookupError, UnicodeDecodeError):
        return text.decode("latin-1")


def modules(vba_project: bytes) -> dict[str, str]:
    """Module name -> 'procedural' or 'document/class'."""
    return {m.name: m.kind for m in project(vba_project)}


def code_lines(source: str) -> list[str]:
    """The source's logical lines that are code: continuations (` _`) joined, blanks and `Attribute`
    lines (hidden in the editor, never run) left out."""
    lines, pending = [], ""
    for raw in source.splitlines():
        line = (pending + " " + raw.strip()).strip() if pending else raw.strip()
        if line.endswith(" _"):
            pending = line[:-2]
            continue
        pending = ""
        if line and not _is_attribute(line):
            lines.append(line)
    return lines + ([pending] if pending else [])


def _is_attribute(line: str) -> bool:
    """An `Attribute NAME = VALUE` line, with no second statement (`:` outside "strings") after it."""
    outside = line.split('"')[::2]
    return line.lower().startswith("attribute ") and not any(":" in part for part in outside)
