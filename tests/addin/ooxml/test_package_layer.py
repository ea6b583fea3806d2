"""Library callers go through the package layer too: verify, the export and the part editors refuse
a DOCTYPE (and a file that is no workbook) with the layer's one-line error naming the file, before
openpyxl or LibreOffice read it, and write nothing."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from trainbudget.addin.export import mailcopy
from trainbudget.addin.ooxml import package, partedit, xmlcells
from trainbudget.addin.verify import check as verify, macros

LAUGHS = b'<?xml version="1.0"?><!DOCTYPE c [<!ENTITY a "aaaa">]><connections xmlns="x">&a;</connections>'


def _with_part(src: Path, target: Path, name: str, data: bytes) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info, zin.read(info.filename))
        zout.writestr(name, data)
    return target


@pytest.fixture
def hostile(built, tmp_path):
    return _with_part(built.path, tmp_path / "laughs.xlsm", "xl/connections.xml", LAUGHS)


def test_verify_as_a_library_refuses_a_doctype(hostile):
    with pytest.raises(package.BadWorkbookError, match="DOCTYPE") as e:
        verify.verify(hostile, recalc=False)
    assert str(hostile) in str(e.value) and "\n" not in str(e.value)


def test_export_as_a_library_refuses_a_doctype_writing_nothing(hostile, tmp_path):
    with pytest.raises(package.BadWorkbookError, match=r"xl/connections\.xml declares a DOCTYPE") as e:
        mailcopy.export(hostile, tmp_path / "out.xlsx")
    assert str(hostile) in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["laughs.xlsm"]


def test_export_as_a_library_refuses_a_file_that_is_not_a_workbook(tmp_path):
    junk = tmp_path / "junk.xlsm"
    junk.write_text("hello")
    with pytest.raises(package.BadWorkbookError, match="not an Excel workbook") as e:
        mailcopy.export(junk, tmp_path / "out.xlsx")
    assert str(junk) in str(e.value)


def test_export_refuses_a_vml_part_with_a_doctype(built, tmp_path):
    src = _with_part(built.path, tmp_path / "vml.xlsm", "xl/drawings/vmlDrawing9.vml", LAUGHS)
    with pytest.raises(package.BadWorkbookError, match=r"vmlDrawing9\.vml declares a DOCTYPE"):
        mailcopy.export(src, tmp_path / "out.xlsx")


def test_part_editors_and_the_macro_scan_use_the_safe_parser():
    parts = {"xl/workbook.xml": LAUGHS, "[Content_Types].xml": LAUGHS}
    for call in (lambda: partedit.root_of(parts, "xl/workbook.xml"),
                 lambda: partedit.change(parts, "xl/workbook.xml", lambda root: None),
                 lambda: xmlcells.set_values(LAUGHS, {"A1": 1}),
                 lambda: macros.scan(parts, macro_enabled=False)):
        with pytest.raises(package.BadWorkbookError, match="declares a DOCTYPE"):
            call()


def test_edit_keeps_the_declaration_and_prefixes():
    data = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<x:worksheet xmlns:x="http://schemas.'
            b'openxmlformats.org/spreadsheetml/2006/main"><x:sheetData/></x:worksheet>')
    out = package.edit("s", data, lambda root: root.set("a", "1"))
    assert out == data.replace(b'/main">', b'/main" a="1">')
    assert package.edit("s", data.split(b"\n", 1)[1], lambda root: None) == data.split(b"\n", 1)[1]


def test_no_private_copies_of_the_layer():
    for module in (macros, xmlcells, mailcopy, verify):
        assert not hasattr(module, "read_parts") and not hasattr(module, "_PARSER"), module.__name__
    assert not hasattr(xmlcells, "parse") or xmlcells.parse is package.parse
    for module in (macros, mailcopy, verify):  # zips are opened and written by the layer only
        assert not hasattr(module, "zipfile") and not hasattr(module, "write_package"), module.__name__


def test_one_cell_reader_and_writer():
    """xmlcells is the one place cells are read and written (cells_xml folded into it)."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    sheet = (f'<worksheet xmlns="{main}"><sheetData><row r="1"><c r="A1" t="s"><v>1</v></c>'
             '<c r="B1" t="inlineStr"><is><r><t>a</t></r><r><t>b</t></r></is></c><c r="C1" t="b"><v>1</v></c>'
             '<c r="D1"><v>2.5</v></c><c r="E1" t="s"><v>9</v></c></row></sheetData></worksheet>').encode()
    strings = xmlcells.shared_strings(f'<sst xmlns="{main}"><si><t>x</t></si><si><t>y</t></si></sst>'.encode())
    assert strings == ["x", "y"]
    assert xmlcells.read_range(sheet, "A1:F1", strings) == [["y", "ab", True, 2.5, None, None]]

    def change(root):
        s = xmlcells.Sheet(root)
        for ref, value in {"A2": True, "B2": float("inf"), "C2": "=1+1", "D2": 3}.items():
            s.set_constant(s.cell(ref), value)
    assert xmlcells.read_range(package.edit("s", sheet, change), "A2:D2", strings) == [[True, "inf", "=1+1", 3.0]]
    assert xmlcells.grow_ref("A1:C4", 9) == "A1:C9" and xmlcells.grow_ref("A1:C4", 2) == "A1:C4"
