"""`trainbudget export` on hostile workbooks: every macro carrier is dropped (and the result's content types
checked) or the export fails with one line and exit 2, writing nothing."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pytest
from lxml import etree

from tests import hostile
from tests.conftest import invoke
from trainbudget.addin.functions import native
from trainbudget.addin.ooxml import macrofree, package, partedit

H100 = "H100 SXM, BF16 tensor core, dense"

MS_REL = "http://schemas.microsoft.com/office/2006/relationships"

OFFICE_REL = partedit.OFFICE_REL

OLE = macrofree.OLE_MAGIC + b"\0" * 504 + b"VBA project stream"

MACRO_WORDS = ("vbaproject", "macrosheet", "dialogsheet", "activex", "oleobject", "macroenabled", "auto_open",
               "auto_close")


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A small workbook (written by openpyxl) calling the add-in, with a chart."""
    return hostile.chart_workbook(tmp_path_factory.mktemp("hostile") / "base.xlsx", H100)


def _add(parts: dict[str, bytes], name: str, data: bytes, content_type: str | None = None) -> None:
    parts[name] = data
    if content_type:
        partedit.add_override(parts, name, content_type)


def _name(parts: dict[str, bytes], name: str, formula: str) -> None:
    def fn(wb):
        main = etree.QName(wb).namespace
        names = wb.find(f"{{{main}}}definedNames")
        if names is None:
            names = etree.Element(f"{{{main}}}definedNames")
            wb.find(f"{{{main}}}sheets").addnext(names)
        etree.SubElement(names, f"{{{main}}}definedName", name=name).text = formula
    partedit.change(parts, partedit.WB, fn)


def macro_sheet(parts):
    xlm = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<xm:macrosheet '
           b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
           b'xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main"><sheetData><row r="1"><c r="A1">'
           b'<f>EXEC("calc.exe")</f></c></row><row r="2"><c r="A2"><f>HALT()</f></c></row></sheetData>'
           b'</xm:macrosheet>')
    _add(parts, "xl/macrosheets/sheet1.xml", xlm, "application/vnd.ms-excel.macrosheet+xml")
    rid = partedit.add_relationship(parts, partedit.WB_RELS, "x", "macrosheets/sheet1.xml")
    partedit.change(parts, partedit.WB_RELS, lambda root: [r.set("Type", f"{MS_REL}/xlMacrosheet")
                                                           for r in root if r.get("Id") == rid])

    def fn(wb):
        main = etree.QName(wb).namespace
        etree.SubElement(wb.find(f"{{{main}}}sheets"), f"{{{main}}}sheet",
                         {"name": "Macro1", "sheetId": "9", "state": "hidden", f"{{{OFFICE_REL}}}id": rid})
    partedit.change(parts, partedit.WB, fn)
    _name(parts, "_xlnm.Auto_Open", "Macro1!$A$1")
    _name(parts, "Go", "Macro1!$A$2")
    _name(parts, "Keep", "Plan!$A$1")


def renamed_vba(parts):
    _add(parts, "xl/media/image1.bin", OLE, "application/vnd.ms-office.vbaProject")
    rid = partedit.add_relationship(parts, partedit.WB_RELS, "x", "media/image1.bin")
    partedit.change(parts, partedit.WB_RELS, lambda root: [r.set("Type", f"{MS_REL}/vbaProject")
                                                           for r in root if r.get("Id") == rid])


def hidden_compound_file(parts):
    _add(parts, "xl/media/image9.png", OLE)  # no content type, no relationship: found by its bytes


def activex(parts):
    ax = (b'<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n<ax:ocx '
          b'xmlns:ax="http://schemas.microsoft.com/office/2006/activeX" '
          b'ax:classid="{D7053240-CE69-11CD-A777-00DD01143C57}" ax:persistence="persistStreamInit" '
          b'r:id="rId1" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"/>')
    _add(parts, "xl/activeX/activeX1.xml", ax, "application/vnd.ms-office.activeX+xml")
    _add(parts, "xl/activeX/activeX1.bin", OLE, "application/vnd.ms-office.activeX")
    sheet = package.sheet_parts(parts)["Plan"]
    rid = partedit.add_relationship(parts, partedit.rels_name(sheet), "control", "../activeX/activeX1.xml")

    def fn(ws):
        main = etree.QName(ws).namespace
        controls = etree.SubElement(ws, f"{{{main}}}controls")
        etree.SubElement(controls, f"{{{main}}}control", {"shapeId": "1025", "name": "CommandButton1",
                                                          f"{{{OFFICE_REL}}}id": rid})
    partedit.change(parts, sheet, fn)


def ole_object(parts):
    _add(parts, "xl/embeddings/oleObject1.bin", OLE, "application/vnd.openxmlformats-officedocument.oleObject")
    sheet = package.sheet_parts(parts)["Plan"]
    rid = partedit.add_relationship(parts, partedit.rels_name(sheet), "oleObject", "../embeddings/oleObject1.bin")

    def fn(ws):
        main = etree.QName(ws).namespace
        objects = etree.SubElement(ws, f"{{{main}}}oleObjects")
        etree.SubElement(objects, f"{{{main}}}oleObject", {"progId": "Package", "shapeId": "1026",
                                                           f"{{{OFFICE_REL}}}id": rid})
    partedit.change(parts, sheet, fn)


def dialog_sheet(parts):
    dialog = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<dialogsheet '
              b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetPr/></dialogsheet>')
    _add(parts, "xl/dialogsheets/sheet1.xml", dialog,
         "application/vnd.openxmlformats-officedocument.spreadsheetml.dialogsheet+xml")
    rid = partedit.add_relationship(parts, partedit.WB_RELS, "dialogsheet", "dialogsheets/sheet1.xml")

    def fn(wb):
        main = etree.QName(wb).namespace
        etree.SubElement(wb.find(f"{{{main}}}sheets"), f"{{{main}}}sheet",
                         {"name": "Dialog1", "sheetId": "8", f"{{{OFFICE_REL}}}id": rid})
    partedit.change(parts, partedit.WB, fn)
    _name(parts, "Auto_Close", "Dialog1!$A$1")

DROPPED = {"macro_sheet": macro_sheet, "dialog_sheet": dialog_sheet, "renamed_vba": renamed_vba,
           "hidden_compound_file": hidden_compound_file,
           "activex": activex, "ole_object": ole_object}


@pytest.mark.parametrize("case", DROPPED)
def test_macro_carriers_are_dropped(soffice, base, tmp_path, case):
    src = hostile.variant(base, tmp_path / f"{case}.xlsx", DROPPED[case])
    proc = invoke("export", str(src), "--out", str(tmp_path / "out.xlsx"))
    assert proc.returncode == 0, proc.stderr
    parts = package.read_parts(tmp_path / "out.xlsx")
    carriers = ("xl/macrosheets", "xl/dialogsheets", "xl/activeX", "xl/embeddings")
    assert not [p for p in parts if p.startswith(carriers)]
    assert not [p for p, d in parts.items() if d[:8] == macrofree.OLE_MAGIC]
    text = b"".join(d for p, d in parts.items() if p.endswith((".xml", ".rels"))).decode().lower()
    assert not [w for w in MACRO_WORDS if w in text]
    assert macrofree.carriers(parts) == set()
    wb = openpyxl.load_workbook(tmp_path / "out.xlsx")
    assert wb.sheetnames == ["Plan", "Devices"]
    assert wb["Plan"]["B2"].value.startswith("=(6*A2")  # the user's formulas still exported
    if case == "macro_sheet":
        assert set(wb.defined_names) == {"Keep", native.NAMES}  # the auto-run name gone; ours added


def dde(parts):
    link = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<externalLink '
            b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><ddeLink ddeService="cmd" '
            b'ddeTopic="/c calc"><ddeItems><ddeItem name="A0"/></ddeItems></ddeLink></externalLink>')
    _add(parts, "xl/externalLinks/externalLink1.xml", link,
         "application/vnd.openxmlformats-officedocument.spreadsheetml.externalLink+xml")


def doctype(parts):
    parts["docProps/app.xml"] = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                                 b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><Properties>&lol2;</Properties>')


def external_entity(parts):
    parts["xl/styles.xml"] = (b'<?xml version="1.0"?><!DOCTYPE s [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                              b'<styleSheet>&x;</styleSheet>')

REFUSED = {"dde": (dde, "DDE"), "doctype": (doctype, "DOCTYPE"), "external_entity": (external_entity, "DOCTYPE")}


@pytest.mark.parametrize("case", REFUSED)
def test_hostile_parts_are_refused_writing_nothing(base, tmp_path, case):
    change, needle = REFUSED[case]
    src = hostile.variant(base, tmp_path / f"{case}.xlsx", change)
    proc = invoke("export", str(src), "--out", str(tmp_path / "out.xlsx"), "--pdf", str(tmp_path / "out.pdf"))
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{case}.xlsx"]


def test_a_zip_that_is_not_a_workbook_is_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "notes.xlsx", "w") as z:
        z.writestr("notes.txt", "not a workbook")
    proc = invoke("export", str(tmp_path / "notes.xlsx"), "--out", str(tmp_path / "out.xlsx"))
    assert proc.returncode == 2 and "not a workbook" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.xlsx"]


def test_a_copy_still_naming_a_macro_type_is_refused(base):
    parts = package.read_parts(base)
    partedit.add_default(parts, "bin", "application/vnd.ms-office.vbaProject")
    with pytest.raises(macrofree.MacroError, match="would still carry a macro"):
        macrofree.check(parts, "base.xlsx")
