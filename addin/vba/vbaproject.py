"""The VBA project the template ships: xlwings' quickstart project without its sample `Module1`.

xlwings' `quickstart.xlsm` (the add-in flavour) carries a VBA project whose reference to the xlwings
add-in the template needs ("Import Functions" writes `xlwings_udfs` wrappers that call it), and a
sample `Module1.SampleCall` that imports a module this project does not have. `shipped()` rebuilds
that project, deterministically, with one module removed ([MS-OVBA] v10 and later):
- PROJECT stream (§2.3.1): the `Module=Module1` line (§2.3.1.3) and its `[Workspace]` line
  (§2.3.1.19) dropped, every other byte kept;
- PROJECTwm stream (§2.3.3): the module's NAMEMAP record (§2.3.3.1) dropped;
- VBA/dir stream (§2.3.4.2): decompressed, the module's MODULE record (§2.3.4.2.3.2, from its
  MODULENAME 0x0019 through its Terminator 0x002B and Reserved) cut out, PROJECTMODULES' Count
  (0x000F, §2.3.4.2.3) decremented, every other record byte-identical, compressed again (§2.4.1.3);
- the module's stream VBA/Module1 dropped;
- the performance caches invalidated so Office compiles from source and no compiled code that
  disagrees with the source is left ("VBA stomping"): `_VBA_PROJECT` becomes its seven
  version-independent bytes with Version 0xFFFF and no PerformanceCache (§2.3.4.1: "MUST be
  0xFFFF on write", PerformanceCache "MUST NOT be present on write"; §1.6: with 0xFFFF the
  performance caches, SRP streams and module streams' PerformanceCache are ignored), and any
  `__SRP_*` stream (§2.2.6, "MUST be ignored") dropped. The remaining module streams keep their
  bytes; their PerformanceCache (§2.3.4.3, "MUST be ignored on read") stays where MODULEOFFSET says.
The compound file is written by cfb.write.
"""

from __future__ import annotations

import functools
import struct
import zipfile

from . import cfb, vba

REMOVED = "Module1"  # xlwings' sample module: Sub SampleCall imports a module named after the workbook
# §2.3.4.1 / §3.1.1: Reserved1 0x61CC, Version 0xFFFF, Reserved2 0x00, Reserved3 (undefined, ignored:
# 0x0000 as LibreOffice's exporter writes it); no PerformanceCache.
NO_CACHE = struct.pack("<HHBH", 0x61CC, 0xFFFF, 0x00, 0x0000)
_MODULES_COUNT, _MODULENAME, _STREAMNAME, _TERMINATOR = 0x000F, 0x0019, 0x001A, 0x002B
_CRLF = b"\r\n"


@functools.lru_cache(maxsize=1)
def shipped() -> bytes:
    """The template's vbaProject.bin: the quickstart's project without `REMOVED`."""
    with zipfile.ZipFile(vba.QUICKSTART) as z:
        return without_module(z.read("xl/vbaProject.bin"), REMOVED)


def without_module(project: bytes, module: str) -> bytes:
    """`project` (a vbaProject.bin) with `module` removed and the performance caches invalidated."""
    root = cfb.read(project)
    storage = root.find("VBA")
    dir_stream = storage.find("dir")
    name, stream = _module_names(vba.decompress(dir_stream.data), module)
    dir_stream.data = compress(_dir_without(vba.decompress(dir_stream.data), module))
    project_stream = root.find("PROJECT")
    project_stream.data = _project_without(project_stream.data, module)
    wm = next((c for c in root.children if c.name.upper() == "PROJECTWM"), None)
    if wm is not None:
        wm.data = _namemap_without(wm.data, name)
    storage.children = [c for c in storage.children
                        if c.name.upper() != stream.upper() and not c.name.upper().startswith("__SRP_")]
    storage.find("_VBA_PROJECT").data = NO_CACHE
    return cfb.write(root)


def _spans(d: bytes):
    """(id, start, end) of each record of a decompressed dir stream (vba._records' layout)."""
    pos = 0
    for rid, payload in vba._records(d):
        end = pos + 6 + len(payload)
        yield rid, pos, end
        pos = end


def _module_names(d: bytes, module: str) -> tuple[bytes, str]:
    """The MODULENAME bytes and the stream name of `module` (KeyError when it is not there)."""
    current = None
    for rid, payload in vba._records(d):
        if rid == _MODULENAME:
            current = payload
        elif rid == _STREAMNAME and current == module.encode("latin-1"):
            return current, payload.decode("latin-1")
    raise KeyError(module)


def _dir_without(d: bytes, module: str) -> bytes:
    """The dir stream without `module`'s MODULE record and with PROJECTMODULES' Count one lower."""
    out, cut, start, count_at = bytearray(), None, None, None
    for rid, begin, end in _spans(d):
        payload = d[begin + 6:end]
        if rid == _MODULES_COUNT and count_at is None:
            count_at = len(out) + 6
        if rid == _MODULENAME:
            start = begin if payload.decode("latin-1") == module else None
        if start is not None:
            if rid == _TERMINATOR:
                cut, start = (start, end), None
            continue
        out += d[begin:end]
    if cut is None or count_at is None:
        raise ValueError(f"no MODULE record {module!r} in the dir stream")
    count = struct.unpack_from("<H", out, count_at)[0]
    struct.pack_into("<H", out, count_at, count - 1)
    return bytes(out)


def _project_without(text: bytes, module: str) -> bytes:
    """PROJECT stream lines without `Module=NAME` (§2.3.1.3) and `NAME=...` under [Workspace]."""
    lines, section, name = text.split(_CRLF), b"", module.encode("latin-1")
    kept = []
    for line in lines:
        if line.startswith(b"["):
            section = line
        if line == b"Module=" + name or (section == b"[Workspace]" and line.startswith(name + b"=")):
            continue
        kept.append(line)
    if len(kept) == len(lines):
        raise ValueError(f"PROJECT stream declares no module {module!r}")
    return _CRLF.join(kept)


def _namemap_without(wm: bytes, name: bytes) -> bytes:
    """PROJECTwm (§2.3.3) without `name`'s NAMEMAP: MBCS name and NUL, UTF-16 name and NUL NUL;
    the stream ends with a 0x0000 Terminator."""
    out, pos = bytearray(), 0
    while pos < len(wm) and wm[pos:pos + 2] != b"\0\0":
        mbcs_end = wm.index(b"\0", pos)
        wide_end = mbcs_end + 1
        while wm[wide_end:wide_end + 2] != b"\0\0":
            wide_end += 2
        if wm[pos:mbcs_end] != name:
            out += wm[pos:wide_end + 2]
        pos = wide_end + 2
    return bytes(out + wm[pos:])


def compress(data: bytes) -> bytes:
    """MS-OVBA §2.4.1.3 compression: a CompressedContainer (signature 0x01) of 4096-byte chunks, each
    compressed with the spec's longest-match search (§2.4.1.3.19.4), or stored raw (§2.4.1.3.10)
    when compressing a full 4096-byte chunk does not make it smaller. A last, partial chunk that does
    not fit compressed is refused: stored raw it would decompress to 4096 bytes (padding included)."""
    out = bytearray(b"\x01")
    for start in range(0, len(data), 4096):
        chunk = data[start:start + 4096]
        tokens = _tokens(chunk)
        if len(tokens) <= 4096:
            out += struct.pack("<H", 0xB000 | (len(tokens) + 2 - 3)) + tokens  # flag 1, signature 0b011
        elif len(chunk) == 4096:
            out += struct.pack("<H", 0x3000 | 0x0FFF) + chunk  # flag 0, raw 4096 bytes
        else:
            raise ValueError("MS-OVBA: a last chunk that does not compress cannot be stored")
    return bytes(out)


def _tokens(chunk: bytes) -> bytes:
    """A chunk's TokenSequences: flag bytes, each followed by up to 8 literals or CopyTokens."""
    out, pos, seen = bytearray(), 0, {}
    while pos < len(chunk):
        flag_at, flags = len(out), 0
        out.append(0)
        for bit in range(8):
            if pos >= len(chunk):
                break
            offset, length = _match(chunk, pos, seen)
            for at in range(pos, pos + max(length, 1)):  # index every position passed
                seen.setdefault(chunk[at:at + 3], []).append(at)
            if length:
                bits = max((pos - 1).bit_length(), 4)  # §2.4.1.3.19.1 CopyToken Help
                out += struct.pack("<H", ((offset - 1) << (16 - bits)) | (length - 3))
                flags |= 1 << bit
                pos += length
            else:
                out.append(chunk[pos])
                pos += 1
        out[flag_at] = flags
    return bytes(out)


def _match(chunk: bytes, pos: int, seen: dict[bytes, list[int]]) -> tuple[int, int]:
    """§2.4.1.3.19.4: the longest earlier match (nearest on ties), as (offset, length), length >= 3.
    Only earlier positions starting with the same three bytes (`seen`) can match three or more."""
    if pos == 0:
        return 0, 0
    bits = max((pos - 1).bit_length(), 4)
    maximum = (0xFFFF >> bits) + 3
    best_len, best_at = 0, 0
    for cand in reversed(seen.get(chunk[pos:pos + 3], [])):
        n = 0
        while pos + n < len(chunk) and n < maximum and chunk[cand + n] == chunk[pos + n]:
            n += 1
        if n > best_len:
            best_len, best_at = n, cand
    return (pos - best_at, best_len) if best_len >= 3 else (0, 0)


@functools.lru_cache(maxsize=1)
def template_project() -> dict[str, vba.Module]:
    """Module name -> module, of the VBA project the template ships (shipped():
    xlwings' quickstart project without its sample Module1)."""
    return {m.name: m for m in vba.project(shipped())}


def template_sources() -> dict[str, str]:
    """Module name -> source, of the VBA project the template ships."""
    return {name: m.source for name, m in template_project().items()}


def template_modules() -> dict[str, str]:
    """The modules of the VBA project the template ships, name -> kind."""
    return {name: m.kind for name, m in template_project().items()}
