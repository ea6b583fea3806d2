"""The VBA project the template ships (xlwings' quickstart project without its sample Module1), the
MS-OVBA compressor that rebuilds its dir stream, and the compound file writer that stores it."""

from __future__ import annotations

import io
import random
import struct
import zipfile
from pathlib import Path

import olefile
import pytest
from hypothesis import given, settings, strategies as st
from oletools.olevba import VBA_Parser

from trainbudget.addin.vba import cfb, vba, vbaproject

REFERENCE_IDS = {0x000D, 0x000E, 0x0016, 0x002F, 0x0030, 0x0033, 0x003E}  # §2.3.4.2.2 REFERENCE records


def quickstart() -> bytes:
    with zipfile.ZipFile(vba.QUICKSTART) as z:
        return z.read("xl/vbaProject.bin")


def streams(project: bytes) -> dict[str, bytes]:
    with olefile.OleFileIO(io.BytesIO(project), raise_defects=olefile.DEFECT_POTENTIAL) as ole:
        return {"/".join(p): ole.openstream(p).read() for p in ole.listdir()}


def dir_records(project: bytes) -> list[tuple[int, bytes]]:
    return list(vba._records(vba.decompress(streams(project)["VBA/dir"])))


# ---- the shipped project ------------------------------------------------------------------------

def test_shipped_project_has_no_module1_and_no_sample_call():
    shipped = vbaproject.shipped()
    assert vba.modules(shipped) == {"ThisWorkbook": "document/class", "Sheet1": "document/class",
                                    "Sheet2": "document/class"}
    texts = streams(shipped) | {"VBA/dir (decompressed)": vba.decompress(streams(shipped)["VBA/dir"])}
    assert "VBA/Module1" not in texts
    for name, data in texts.items():
        assert b"Module1" not in data and b"M\0o\0d\0u\0l\0e\0001\0" not in data, name
    assert all("SampleCall" not in m.source for m in vba.project(shipped))
    assert "SampleCall" in {m.name: m for m in vba.project(quickstart())}["Module1"].source  # it was there


def test_everything_else_is_the_quickstarts():
    before, after = streams(quickstart()), streams(vbaproject.shipped())
    assert set(before) - set(after) == {"VBA/Module1"} and set(after) <= set(before)
    for name in ("VBA/ThisWorkbook", "VBA/Sheet1", "VBA/Sheet2"):
        assert after[name] == before[name], name  # module streams (p-code and source) untouched
    dropped = [line for line in before["PROJECT"].split(b"\r\n") if line not in after["PROJECT"].split(b"\r\n")]
    assert dropped == [b"Module=Module1", b"Module1=280, 53, 1143, 563, Z"]
    assert after["PROJECT"].split(b"\r\n") == [
        line for line in before["PROJECT"].split(b"\r\n") if line not in dropped]
    namemap = b"Module1\0" + "Module1".encode("utf-16-le") + b"\0\0"  # §2.3.3.1 NAMEMAP
    assert after["PROJECTwm"] == before["PROJECTwm"].replace(namemap, b"")


def test_dir_stream_lost_only_module1_and_one_from_the_count():
    before, after = dir_records(quickstart()), dir_records(vbaproject.shipped())
    names = [i for i, (rid, _) in enumerate(before) if rid == 0x0019]
    start = next(i for i in names if before[i][1] == b"Module1")
    end = next(i for i in range(start, len(before)) if before[i][0] == 0x002B)
    expected = before[:start] + before[end + 1:]
    count = next(i for i, (rid, _) in enumerate(expected) if rid == 0x000F)
    old_count = struct.unpack("<H", expected[count][1])[0]
    expected[count] = (0x000F, struct.pack("<H", old_count - 1))
    assert after == expected
    assert struct.unpack("<H", expected[count][1])[0] == len([r for r in after if r[0] == 0x0019]) == 3
    raw = vba.decompress(streams(vbaproject.shipped())["VBA/dir"])
    assert raw.endswith(struct.pack("<HI", 0x0010, 0))  # the dir Terminator ends the stream (§2.3.4.2)


def test_xlwings_reference_is_kept():
    refs = [r for r in dir_records(vbaproject.shipped()) if r[0] in REFERENCE_IDS]
    assert refs == [r for r in dir_records(quickstart()) if r[0] in REFERENCE_IDS]
    names = [payload for rid, payload in refs if rid == 0x0016]
    assert b"xlwings" in names
    project_ref = next(payload for rid, payload in refs if rid == 0x000E)  # REFERENCEPROJECT
    assert b"xlwings.xlam" in project_ref


def test_performance_caches_are_invalidated():
    after = streams(vbaproject.shipped())
    assert after["VBA/_VBA_PROJECT"] == bytes.fromhex("CC61FFFF000000")  # §2.3.4.1: Version 0xFFFF, no cache
    assert not [n for n in after if n.upper().startswith("VBA/__SRP_")]
    assert len(streams(quickstart())["VBA/_VBA_PROJECT"]) > 7  # the quickstart carried a cache


def test_srp_streams_are_dropped():
    root = cfb.read(quickstart())
    root.find("VBA").children.append(cfb.Node("__SRP_0", b"cache"))
    rebuilt = streams(vbaproject.without_module(cfb.write(root), "Module1"))
    assert "VBA/__SRP_0" not in rebuilt and "VBA/dir" in rebuilt


def test_olevba_reads_the_shipped_project(tmp_path):
    path = tmp_path / "vbaProject.bin"
    path.write_bytes(vbaproject.shipped())
    parser = VBA_Parser(str(path))
    try:
        assert parser.detect_vba_macros()
        found = {stream: code for _, stream, _, code in parser.extract_macros()}
    finally:
        parser.close()
    assert set(found) == {"VBA/ThisWorkbook", "VBA/Sheet1", "VBA/Sheet2"}
    ours = {m.name: m.source for m in vba.project(vbaproject.shipped())}
    assert {k.split("/")[1]: v for k, v in found.items()} == ours


def test_shipped_is_deterministic():
    first = vbaproject.shipped()
    vbaproject.shipped.cache_clear()
    assert vbaproject.shipped() == first == vbaproject.without_module(quickstart(), "Module1")


def test_removing_a_module_that_is_not_there_is_refused():
    with pytest.raises(KeyError):
        vbaproject.without_module(vbaproject.shipped(), "Module1")


# ---- MS-OVBA compression ----------------------------------------------------------------------

def test_compress_matches_the_spec_examples():
    # [MS-OVBA] §3.2.1 No Compression Example and §3.2.2 Normal Compression Example
    plain = b"abcdefghijklmnopqrstuv."
    assert vbaproject.compress(plain) == bytes.fromhex("0119B000616263646566676800696A6B6C6D6E6F70007172737475762E")
    text = b"#aaabcdefaaaaghijaaaaaklaaamnopqaaaaaaaaaaaarstuvwxyzaaa"
    spec = bytes.fromhex("012FB00023616161626364658266007061676869 6A013808616B6C00206D6E6F7006710270040072"
                         "73747576107778797A002C".replace(" ", ""))
    assert vba.decompress(spec) == text
    assert vbaproject.compress(text) == spec


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.binary(max_size=9000), st.text("ab c\r\n=", max_size=9000).map(str.encode)))
def test_compress_round_trips(data):
    try:
        packed = vbaproject.compress(data)
    except ValueError:  # a last partial chunk of incompressible bytes cannot be stored (see compress)
        assert len(data) % 4096 > 3640
        return
    assert vba.decompress(packed) == data


def test_an_incompressible_full_chunk_is_stored_raw():
    noise = random.Random(3).randbytes(4096 + 100)
    packed = vbaproject.compress(noise)
    assert packed[1:3] == struct.pack("<H", 0x3FFF) and packed[3:4099] == noise[:4096]  # flag 0, 4096 raw bytes
    assert packed[4099:4101] == struct.pack("<H", 0xB000 | (len(packed) - 4099 - 3))  # then a compressed chunk
    assert vba.decompress(packed) == noise


# ---- compound file writer -------------------------------------------------------------------------

def _tree_of(project: bytes) -> dict:
    """Parsed directory: per entry (name, type, color, left, right, child)."""
    with olefile.OleFileIO(io.BytesIO(project), raise_defects=olefile.DEFECT_POTENTIAL) as ole:
        return {i: (d.name, d.entry_type, d.color, d.sid_left, d.sid_right, d.sid_child)
                for i, d in enumerate(ole.direntries) if d is not None}


def _check_red_black(entries: dict, top: int) -> None:
    """§2.6.4: in-order names strictly ascending, root black, no red child of a red node, equal black
    counts on every path."""
    order, blacks = [], set()

    def walk(i: int, black: int, parent_red: bool) -> None:
        if i == cfb.NOSTREAM:
            blacks.add(black)
            return
        name, _kind, color, left, right, _child = entries[i]
        red = color == cfb.RED
        assert not (red and parent_red), name
        walk(left, black + (not red), red)
        order.append(cfb.sort_key(name))
        walk(right, black + (not red), red)

    assert entries[top][2] == cfb.BLACK
    walk(top, 0, False)
    assert order == sorted(order) and len(set(order)) == len(order)
    assert len(blacks) == 1


def _sample_tree() -> cfb.Node:
    big = bytes(range(256)) * 1200  # 300 KB: several FAT sectors and a long chain
    kids = [cfb.Node(f"s{i:02d}", bytes([i]) * (i * 37)) for i in range(40)]  # 40 small, one empty
    sub = cfb.Node("Storage Ä", children=[cfb.Node("inner", b"x" * 5000), cfb.Node("tiny", b"y")],
                   clsid=bytes(range(16)), created=133715506344870000, modified=133715506344870001)
    return cfb.Node("Root Entry", children=[*kids, sub, cfb.Node("Big", big)])


@pytest.mark.parametrize("make", [quickstart, vbaproject.shipped, lambda: cfb.write(_sample_tree())])
def test_cfb_round_trip(make):
    source = make()
    written = cfb.write(cfb.read(source))
    assert streams(written) == streams(source)
    assert len(written) % cfb.SECTOR == 0
    assert cfb.write(cfb.read(written)) == written  # deterministic, a fixed point
    entries = _tree_of(written)
    for _name, kind, *_rest, child in entries.values():
        if kind in (olefile.STGTY_ROOT, olefile.STGTY_STORAGE) and child != cfb.NOSTREAM:
            _check_red_black(entries, child)
    with olefile.OleFileIO(io.BytesIO(written)) as a, olefile.OleFileIO(io.BytesIO(source)) as b:
        for path in b.listdir(streams=False, storages=True):
            assert a.getclsid(path) == b.getclsid(path)
            assert (a.getctime(path), a.getmtime(path)) == (b.getctime(path), b.getmtime(path))


def test_cfb_header_is_version_3():
    data = vbaproject.shipped()
    sig, _clsid, minor, major, order, shift, mini = struct.unpack_from("<8s16sHHHHH", data)
    assert (sig, minor, major, order, shift, mini) == (cfb.SIGNATURE, 0x3E, 3, 0xFFFE, 9, 6)
    assert struct.unpack_from("<I", data, 56)[0] == 4096  # mini stream cutoff


@pytest.mark.parametrize("name", ["a/b", "x" * 32, ""])
def test_cfb_refuses_bad_names(name):
    with pytest.raises(ValueError, match="name"):
        cfb.write(cfb.Node("Root Entry", children=[cfb.Node(name, b"1")]))


def test_cfb_refuses_duplicate_names():
    with pytest.raises(ValueError, match="same name"):
        cfb.write(cfb.Node("Root Entry", children=[cfb.Node("dir", b"1"), cfb.Node("DIR", b"2")]))


def test_shipped_file_is_written_to_the_template(built):
    with zipfile.ZipFile(Path(built.path)) as z:
        assert z.read("xl/vbaProject.bin") == vbaproject.shipped()


def test_libreoffice_reads_the_shipped_project(soffice, built, tmp_path):
    """An independent reader: LibreOffice's own compound file and MS-OVBA import reads the built
    workbook's project and, saving as .xlsm, writes the same three modules and sources back out
    (its writer adds a blank line; it drops references it cannot resolve, such as the add-in)."""
    from trainbudget.addin import libreoffice as engine

    (saved,) = engine.convert([built.path], "xlsm:Calc MS Excel 2007 VBA XML", tmp_path)
    with zipfile.ZipFile(saved) as z:
        rewritten = z.read("xl/vbaProject.bin")
    assert rewritten != vbaproject.shipped()  # written by LibreOffice from what it read, not copied
    theirs = {m.name: m.source for m in vba.project(rewritten)}
    ours = {m.name: m.source for m in vba.project(vbaproject.shipped())}
    assert set(theirs) == set(ours) == {"ThisWorkbook", "Sheet1", "Sheet2"}
    assert all(vba.code_lines(theirs[n]) == vba.code_lines(ours[n]) for n in ours)
    assert all(theirs[n].startswith(ours[n]) for n in ours)
