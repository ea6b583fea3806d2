"""`verify` on hostile copies of the template: tampered VBA source, Excel 4.0 macro sheets and
auto-run names, VBA projects under other part names, ActiveX and OLE parts, DDE, links, web
queries, a zip bomb. Each copy is built here part by part; each case checks the finding, the exit
status of `trainbudget verify`, and that the file was not changed."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import olefile
import pytest
from lxml import etree
from oletools.olevba import VBA_Parser

from tests.conftest import invoke
from tests.xlwings_stub import udfs_with_vba
from trainbudget.addin.template import build as template
from trainbudget.addin.vba import vba, vbaproject
from trainbudget.addin.verify import check as verify, vba_check

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PREL = "http://schemas.openxmlformats.org/package/2006/relationships"
CT = "http://schemas.openxmlformats.org/package/2006/content-types"
MS_REL = "http://schemas.microsoft.com/office/2006/relationships"
# the template's worksheet parts, numbered in tab order as openpyxl saves them (the Summary is sheet1)
BUDGET = f"xl/worksheets/sheet{template.SHEETS.index('Budget') + 1}.xml"
BUDGET_RELS = BUDGET.replace("worksheets/", "worksheets/_rels/") + ".rels"
ABOUT = f"xl/worksheets/sheet{template.SHEETS.index('About') + 1}.xml"


# ---- building tampered copies -------------------------------------------------------------------

def rewrite(path: Path, changed: dict[str, bytes | None]) -> None:
    """Rewrite the package at `path` with the parts in `changed` replaced, added or (None) dropped."""
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    parts.update(changed)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            if data is not None:
                z.writestr(name, data)


def read(path: Path, name: str) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read(name)


def xml_edit(path: Path, name: str, edit) -> bytes:
    """The part `name` parsed, changed by `edit(root)`, serialized (prefixes and declarations kept)."""
    root = etree.fromstring(read(path, name))
    edit(root)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)


def add_override(path: Path, part: str, content_type: str) -> bytes:
    return xml_edit(path, "[Content_Types].xml", lambda r: etree.SubElement(
        r, f"{{{CT}}}Override", PartName=f"/{part}", ContentType=content_type))


def add_rel(path: Path, rels_part: str, rel_type: str, target: str, rid: str) -> bytes:
    return xml_edit(path, rels_part, lambda r: etree.SubElement(
        r, f"{{{PREL}}}Relationship", Id=rid, Type=rel_type, Target=target))


def literal_container(text: bytes, size: int) -> bytes:
    """An MS-OVBA CompressedContainer (§2.4.1.1.1) of exactly `size` bytes decompressing to `text`
    padded with spaces: one compressed chunk (§2.4.1.1.4: flag 1, signature 0b011, size - 3) of
    literal tokens, the last optionally a CopyToken (§2.4.1.1.8; offset 1, length 3: three more
    spaces) so that any size is met."""
    for pad in range(4, 3600):
        body = text + b" " * pad
        for copy in (False, True):
            tokens = [bytes([b]) for b in (body[:-3] if copy else body)] + [b"\0\0"] * copy
            data = bytearray()
            for i in range(0, len(tokens), 8):
                group = tokens[i:i + 8]
                data.append(sum(1 << j for j, t in enumerate(group) if len(t) == 2))
                data += b"".join(group)
            if 3 + len(data) == size and len(body) <= 4096 and len(data) <= 4096:
                container = b"\x01" + (0xB000 | (len(data) - 1)).to_bytes(2, "little") + bytes(data)
                assert vba.decompress(container) == body
                return container
    raise AssertionError(f"no literal container of {size} bytes for {len(text)} bytes of text")


def with_module_source(vba_project: bytes, module: str, source: str, tmp: Path) -> bytes:
    """`vba_project` with `module`'s source text replaced (p-code and every other stream kept):
    the module stream keeps its size, so olefile rewrites it in place."""
    offset = _module_offset(vba_project, module)
    path = tmp / "vbaProject.bin"
    path.write_bytes(vba_project)
    with olefile.OleFileIO(str(path), write_mode=True) as ole:
        stream = ole.openstream(f"VBA/{module}").read()
        ole.write_stream(f"VBA/{module}", stream[:offset] + literal_container(source.encode("cp1252"),
                                                                              len(stream) - offset))
    return path.read_bytes()


def _module_offset(vba_project: bytes, module: str) -> int:
    with olefile.OleFileIO(io.BytesIO(vba_project)) as ole:
        d = vba.decompress(ole.openstream("VBA/dir").read())
    name = None
    for rid, payload in vba._records(d):
        if rid == 0x0019:
            name = payload.decode("latin-1")
        elif rid == 0x0031 and name == module:
            return int.from_bytes(payload, "little")
    raise AssertionError(module)


# ---- fixtures and checks ------------------------------------------------------------------------

def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def findings(path: Path) -> list[verify.Problem]:
    """verify's errors, after checking that the CLI exits 1 and that neither run changed the file."""
    before = digest(path)
    problems = verify.errors(verify.verify(path, recalc=False))
    proc = invoke("verify", str(path), "--no-recalc")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert all(len(str(p).splitlines()) == 1 for p in problems)
    assert digest(path) == before
    return problems


def one(problems: list[verify.Problem], where: str, *words: str) -> verify.Problem:
    found = [p for p in problems if p.where == where and all(w in p.message for w in words)]
    assert len(found) == 1, problems
    return found[0]


TAMPERED_MODULE1 = 'Attribute VB_Name = "Module1"\r\nSub Auto_Open()\r\n    Shell "calc.exe"\r\nEnd Sub\r\n'
TAMPERED_SHEET2 = 'Attribute VB_Name = "Sheet2"\r\nSub Auto_Open()\r\n    Shell "calc.exe"\r\nEnd Sub\r\n'


def quickstart_project() -> bytes:
    """xlwings' quickstart project, with the sample Module1 the template no longer ships."""
    return read(Path(vba.QUICKSTART), "xl/vbaProject.bin")


# ---- tampered VBA source ------------------------------------------------------------------------

def test_sheet_module_code_replaced_same_names(copy, tmp_path):
    path = copy()
    project = with_module_source(read(path, "xl/vbaProject.bin"), "Sheet2", TAMPERED_SHEET2, tmp_path)
    assert vba.modules(project) == vbaproject.template_modules()  # the names alone look like the template's
    rewrite(path, {"xl/vbaProject.bin": project})
    problems = findings(path)
    one(problems, "xl/vbaProject.bin", "'Sheet2'", "does not ship", "Sub Auto_Open()")
    one(problems, "xl/vbaProject.bin", "'Sheet2'", "Auto_Open runs by itself")
    assert len(problems) == 2


def test_quickstart_sample_module_is_not_shipped(copy):
    """The quickstart's own project put back: its Module1.SampleCall is code the template does not ship."""
    path = copy()
    rewrite(path, {"xl/vbaProject.bin": quickstart_project()})
    problems = findings(path)
    one(problems, "xl/vbaProject.bin", "'Module1' (procedural)", "does not ship", "Sub SampleCall()")
    assert len(problems) == 1


def test_module1_code_replaced_in_the_quickstart_project(copy, tmp_path):
    path = copy()
    project = with_module_source(quickstart_project(), "Module1", TAMPERED_MODULE1, tmp_path)
    rewrite(path, {"xl/vbaProject.bin": project})
    problems = findings(path)
    one(problems, "xl/vbaProject.bin", "'Module1'", "does not ship", "Sub Auto_Open()")
    one(problems, "xl/vbaProject.bin", "'Module1'", "Auto_Open runs by itself")
    assert len(problems) == 2


def test_document_module_with_workbook_open(copy, tmp_path):
    path = copy()
    source = 'Attribute VB_Name = "ThisWorkbook"\r\nPrivate Sub Workbook_Open()\r\nShell "calc.exe"\r\nEnd Sub\r\n'
    rewrite(path, {"xl/vbaProject.bin": with_module_source(read(path, "xl/vbaProject.bin"), "ThisWorkbook",
                                                          source, tmp_path)})
    problems = findings(path)
    one(problems, "xl/vbaProject.bin", "'ThisWorkbook'", "Private Sub Workbook_Open()")
    one(problems, "xl/vbaProject.bin", "Workbook_Open runs by itself")


def test_comment_or_option_explicit_in_document_module_is_not_code():
    module = vba.Module("Sheet3", "document/class", 'Attribute VB_Name = "Sheet3"\r\nOption Explicit\r\n\r\n')
    assert vba_check._stray(module, vbaproject.template_sources()) is None
    joined = vba.Module("Sheet3", "document/class", 'Attribute VB_Name = "x" _\r\n: Shell "calc"\r\n')
    assert vba_check._stray(joined, vbaproject.template_sources()) is not None  # a continuation does not hide code


def test_sources_match_olevba(copy, tmp_path):
    """Cross-check of the MS-OVBA reader: olevba (oletools) extracts the same source, module by module,
    from the template and from a tampered copy."""
    path, shipped = copy(), copy("shipped.xlsm")
    rewrite(path, {"xl/vbaProject.bin": with_module_source(read(path, "xl/vbaProject.bin"), "Sheet2",
                                                          TAMPERED_SHEET2, tmp_path)})
    for workbook in (Path(vba.QUICKSTART), shipped, path):
        ours = {m.name: m.source for m in vba.project(read(workbook, "xl/vbaProject.bin"))}
        parser = VBA_Parser(str(workbook))
        try:
            theirs = {stream.split("/")[-1]: code for _, stream, _, code in parser.extract_macros()}
        finally:
            parser.close()
        assert ours == theirs
    assert "Shell \"calc.exe\"" in ours["Sheet2"]


def test_decompressor_refuses_a_copy_before_its_chunk():
    bad = b"\x01" + (0xB000 | 2).to_bytes(2, "little") + b"\x01" + (0xFFF0).to_bytes(2, "little")
    with pytest.raises(ValueError, match="before its chunk"):
        vba.decompress(bad)


def test_unreadable_project_is_a_finding_not_a_crash(copy):
    path = copy()
    rewrite(path, {"xl/vbaProject.bin": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600})
    one(findings(path), "xl/vbaProject.bin", "cannot be read")


# ---- xlwings_udfs: accepted only as xlwings' wrappers of registry functions --------------------

@pytest.fixture(scope="module")
def generated_udfs():
    """What xlwings' Import Functions writes for trainbudget.addin.udf.udfs (pywin32 stubbed)."""
    with udfs_with_vba(vba_check.UDF_MODULE, "x.xlsm") as (_, vba):
        header = 'Attribute VB_Name = "xlwings_udfs"\n' + "\n".join(vba_check._UDF_HEADER) + "\n"
        return header + vba


def test_generated_udf_module_is_accepted(generated_udfs):
    assert generated_udfs.count("End Function") == len(vba_check.wrappers())
    assert vba_check.udf_module_stray(generated_udfs) is None


@pytest.mark.parametrize("change, stray", [
    (lambda s: s.replace("Exit Function\n", 'Shell "calc.exe"\n    Exit Function\n', 1), 'shell "calc.exe"'),
    (lambda s: s + "Sub Auto_Open()\nEnd Sub\n", "sub auto_open()"),
    (lambda s: s.replace('"trainbudget.addin.udf.udfs", "TRAIN_FLOPS"', '"os", "system"', 1),
     'xlpy.calludf("os", "system"'),
    (lambda s: s.replace("Function TRAIN_FLOPS(", "Function TRAIN_FLOPZ(", 1), "function train_flopz("),
])
def test_changed_udf_module_is_reported(generated_udfs, change, stray):
    found = vba_check.udf_module_stray(change(generated_udfs))
    assert found is not None and stray in found


# ---- Excel 4.0 macro sheets and auto-run names --------------------------------------------------

def test_macro_sheet_with_auto_open(copy):
    path = copy()
    sheet = etree.Element(f"{{{MAIN}}}macrosheet", nsmap={None: MAIN})
    row = etree.SubElement(etree.SubElement(sheet, f"{{{MAIN}}}sheetData"), f"{{{MAIN}}}row", r="1")
    etree.SubElement(etree.SubElement(row, f"{{{MAIN}}}c", r="A1"), f"{{{MAIN}}}f").text = 'EXEC("calc.exe")'

    def book(root):
        etree.SubElement(root.find(f"{{{MAIN}}}sheets"), f"{{{MAIN}}}sheet",
                         {"name": "Macro1", "sheetId": "9", "state": "hidden", f"{{{REL}}}id": "rIdM"})
        names = root.find(f"{{{MAIN}}}definedNames")
        etree.SubElement(names, f"{{{MAIN}}}definedName", name="_xlnm.Auto_Open", hidden="1").text = "Macro1!$A$1"

    rewrite(path, {
        "xl/macrosheets/sheet1.xml": etree.tostring(sheet),
        "xl/workbook.xml": xml_edit(path, "xl/workbook.xml", book),
        "xl/_rels/workbook.xml.rels": add_rel(path, "xl/_rels/workbook.xml.rels", f"{MS_REL}/xlMacrosheet",
                                              "macrosheets/sheet1.xml", "rIdM"),
        "[Content_Types].xml": add_override(path, "xl/macrosheets/sheet1.xml",
                                            "application/vnd.ms-excel.macrosheet+xml"),
    })
    problems = findings(path)
    one(problems, "xl/macrosheets/sheet1.xml", "Excel 4.0 macro sheet", "'Macro1'", "content type",
        "xlMacrosheet relationship")
    one(problems, "xl/workbook.xml (name _xlnm.Auto_Open)", "runs a macro by itself", "Macro1!$A$1")


# ---- VBA and ActiveX/OLE parts wherever they sit --------------------------------------------------

def test_vba_project_renamed_to_an_image(copy):
    path = copy()
    project = read(path, "xl/vbaProject.bin")
    rels = xml_edit(path, "xl/_rels/workbook.xml.rels", lambda r: [
        e.set("Target", "media/image1.bin") for e in r if e.get("Target") == "vbaProject.bin"])
    rewrite(path, {"xl/vbaProject.bin": None, "xl/media/image1.bin": project, "xl/_rels/workbook.xml.rels": rels})
    one(findings(path), "xl/media/image1.bin", "VBA project", "holding VBA code", "vbaProject relationship")


def test_vba_project_hidden_as_png_found_by_its_bytes(copy):
    path = copy()
    rewrite(path, {"xl/media/image1.png": read(path, "xl/vbaProject.bin"),
                   "[Content_Types].xml": add_override(path, "xl/media/image1.png", "image/png")})
    problem = one(findings(path), "xl/media/image1.png", "VBA project", "an OLE compound file holding VBA code")
    assert "content type" not in problem.message  # only the bytes gave it away


def test_activex_and_ole_parts(copy):
    path = copy()
    control = b'<ax:ocx xmlns:ax="http://schemas.microsoft.com/office/2006/activeX" ax:classid="{x}"/>'
    rewrite(path, {
        "xl/activeX/activeX1.xml": control,
        "xl/embeddings/oleObject1.bin": b"not a compound file",
        "[Content_Types].xml": xml_edit(path, "[Content_Types].xml", lambda r: r.extend([
            etree.Element(f"{{{CT}}}Override", PartName="/xl/activeX/activeX1.xml",
                          ContentType="application/vnd.ms-office.activeX+xml"),
            etree.Element(f"{{{CT}}}Override", PartName="/xl/embeddings/oleObject1.bin",
                          ContentType="application/vnd.openxmlformats-officedocument.oleObject")])),
    })
    problems = findings(path)
    one(problems, "xl/activeX/activeX1.xml", "ActiveX control", "content type")
    one(problems, "xl/embeddings/oleObject1.bin", "OLE object", "content type", "stored in xl/embeddings/")


# ---- links, DDE, web queries --------------------------------------------------------------------

def test_external_link_with_dde_and_dde_formula(copy):
    path = copy()
    link = etree.Element(f"{{{MAIN}}}externalLink", nsmap={None: MAIN})
    etree.SubElement(link, f"{{{MAIN}}}ddeLink", ddeService="cmd", ddeTopic="/C calc")

    def cell(root):
        row = root.find(f"{{{MAIN}}}sheetData")[0]
        c = etree.SubElement(row, f"{{{MAIN}}}c", r="Z1")
        etree.SubElement(c, f"{{{MAIN}}}f").text = "cmd|'/C calc'!A0"

    about = ABOUT
    rewrite(path, {
        "xl/externalLinks/externalLink1.xml": etree.tostring(link),
        about: xml_edit(path, about, cell),
        "xl/_rels/workbook.xml.rels": add_rel(path, "xl/_rels/workbook.xml.rels", f"{REL}/externalLink",
                                              "externalLinks/externalLink1.xml", "rIdL"),
    })
    problems = findings(path)
    one(problems, "xl/externalLinks/externalLink1.xml", "DDE link", "cmd|/C calc")
    one(problems, "About!Z1", "DDE formula", "=cmd|'/C calc'!A0")


def test_pipe_inside_a_quoted_sheet_name_is_not_dde(copy):
    from trainbudget.addin.verify import macros

    assert macros._formula_problems("x", "'a|b'!A1+\"c|d\"+SUM(Devices[a|b])") == []
    assert macros._formula_problems("x", "[1]Prices!A1")[0].message.startswith("formula refers to another")


def test_web_query_connection(copy):
    path = copy()
    conns = etree.Element(f"{{{MAIN}}}connections", nsmap={None: MAIN})
    conn = etree.SubElement(conns, f"{{{MAIN}}}connection", id="1", name="Prices", type="4")
    etree.SubElement(conn, f"{{{MAIN}}}webPr", url="http://example.com/prices")
    query = etree.Element(f"{{{MAIN}}}queryTable", nsmap={None: MAIN}, name="Prices", connectionId="1")
    rewrite(path, {"xl/connections.xml": etree.tostring(conns),
                   "xl/queryTables/queryTable1.xml": etree.tostring(query)})
    problems = findings(path)
    one(problems, "xl/connections.xml (connection 1)", "web query to http://example.com/prices", "'Prices'")
    one(problems, "xl/queryTables/queryTable1.xml", "query table 'Prices'")


# ---- bounds and refusals: one line, exit 2 ------------------------------------------------------

def test_zip_bomb_is_refused_not_clean(copy):
    from trainbudget.addin.ooxml import opening

    path = copy()
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as z, z.open("xl/media/filler.xml", "w") as f:
        for _ in range(opening.MAX_PART_BYTES // 2**20 + 1):
            f.write(b" " * 2**20)
    before = digest(path)
    assert path.stat().st_size < 2 * 2**20
    proc = invoke("verify", str(path), "--no-recalc")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "zip bomb" in proc.stderr and "filler.xml" in proc.stderr
    assert digest(path) == before


def test_doctype_is_refused(copy):
    path = copy()
    laughs = b'<?xml version="1.0"?><!DOCTYPE c [<!ENTITY a "aaaa">]><connections xmlns="%s">&a;</connections>'
    rewrite(path, {"xl/connections.xml": laughs % MAIN.encode()})
    proc = invoke("verify", str(path), "--no-recalc")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "DOCTYPE" in proc.stderr


def test_template_has_no_macro_findings(built):
    from trainbudget.addin.ooxml import package
    from trainbudget.addin.verify import macros

    assert macros.scan(package.read_parts(built.path), macro_enabled=True) == []


def test_pcode_differs_from_source_is_a_warning(copy, tmp_path):
    path = copy()
    project = read(path, "xl/vbaProject.bin")
    offset = _module_offset(project, "Sheet1")
    file = tmp_path / "stomped.bin"
    file.write_bytes(project)
    with olefile.OleFileIO(str(file), write_mode=True) as ole:
        stream = bytearray(ole.openstream("VBA/Sheet1").read())
        stream[offset // 2] ^= 0xFF  # the compiled code changes, the source does not
        ole.write_stream("VBA/Sheet1", bytes(stream))
    rewrite(path, {"xl/vbaProject.bin": file.read_bytes()})
    problems = verify.verify(path, recalc=False)
    assert verify.errors(problems) == []
    one(problems, "xl/vbaProject.bin", "'Sheet1'", "VBA stomping")
    assert invoke("verify", str(path), "--no-recalc").returncode == 0


def test_xlsx_carrying_a_vba_project(copy):
    path = copy("copy.xlsx")
    problem = one(findings(path), "xl/vbaProject.bin", "VBA project", "vbaProject relationship", "holding VBA code")
    assert "content type application/vnd.ms-office.vbaProject" in problem.message


def test_linked_ole_object_outside_the_package(copy):
    path = copy()
    rels = BUDGET_RELS
    rewrite(path, {rels: xml_edit(path, rels, lambda r: etree.SubElement(
        r, f"{{{PREL}}}Relationship", Id="rIdO", Type=f"{REL}/oleObject",
        Target="http://example.com/payload.sct", TargetMode="External"))})
    one(findings(path), BUDGET, "OLE object relationship", "http://example.com/payload.sct")


def test_shape_with_an_assigned_macro(copy):
    path = copy()
    drawing = "xl/drawings/drawing1.xml"
    xdr = "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
    rewrite(path, {drawing: xml_edit(path, drawing, lambda r: r.iter(f"{{{xdr}}}graphicFrame").__next__().set(
        "macro", "'C:\\Users\\Public\\x.xlsm'!Run"))})
    one(findings(path), drawing, "runs macro", "x.xlsm'!Run", "when clicked")


def test_dde_in_a_defined_name(copy):
    path = copy()
    rewrite(path, {"xl/workbook.xml": xml_edit(path, "xl/workbook.xml", lambda r: etree.SubElement(
        r.find(f"{{{MAIN}}}definedNames"), f"{{{MAIN}}}definedName", name="Rate").__setattr__(
        "text", "msexcel|'\\..\\..\\Windows\\System32\\cmd.exe /c calc'!A1"))})
    one(findings(path), "xl/workbook.xml (name Rate)", "DDE formula")


def test_corrupted_projects_are_findings_never_crashes():
    """Random byte changes anywhere in the project: always a list of findings, never an exception."""
    import random

    project = vbaproject.shipped()
    rng, outcomes = random.Random(14), set()
    for _ in range(300):
        data = bytearray(project)
        for _ in range(rng.randint(1, 20)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        problems = vba_check.check(bytes(data), "x")
        assert all(isinstance(p, verify.Problem) and "\n" not in p.message for p in problems)
        outcomes.add("unreadable" if any("cannot be read" in p.message for p in problems) else bool(problems))
    assert outcomes == {"unreadable", True, False}  # the corruptions reached every path


# ---- one carrier table: every kind is reported by verify and dropped by export --------------------

def _carrying(path: Path, carrier) -> str:
    """Add one part of `carrier`'s kind to the workbook at `path`, named by its folder, content
    type and a relationship from the Budget sheet (whichever the table gives); its name."""
    from trainbudget.addin.ooxml import carriers

    folder = carrier.folders[0] if carrier.folders else "xl/extra/"
    name = f"{folder}carrier1.dat"  # .bin defaults to the VBA project type in the template
    changed = {name: b"not a real " + carrier.kind.encode()}
    if carrier.types:
        changed["[Content_Types].xml"] = add_override(path, name, carrier.types[0])
    rels = BUDGET_RELS
    changed[rels] = add_rel(path, rels, f"{REL}/{carrier.rels[0]}", f"../../{name}", "rIdCarrier")
    rewrite(path, changed)
    assert carriers.by_rel(carrier.rels[0]) == carrier.kind
    return name


@pytest.mark.parametrize("carrier", __import__("trainbudget.addin.ooxml.carriers", fromlist=["CARRIERS"]).CARRIERS,
                         ids=lambda c: c.kind)
def test_every_carrier_is_reported_and_exported_away(soffice, copy, tmp_path, carrier):
    path = copy()
    name = _carrying(path, carrier)
    problems = verify.errors(verify.verify(path, recalc=False))
    found = [p for p in problems if p.where == name and carrier.kind in p.message]
    assert len(found) == (1 if carrier.reported else 0), problems
    out = tmp_path / "mail.xlsx"
    proc = invoke("export", str(path), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(out) as z:
        assert name not in z.namelist() and b"rIdCarrier" not in z.read(
            BUDGET_RELS)
    assert verify.verify(out, recalc=False) == []
