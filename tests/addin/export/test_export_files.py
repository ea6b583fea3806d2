"""`trainbudget export` on workbooks other tools wrote (tests/data, see its README.md): Excel 365
(shared formulas, XLOOKUP/LET, notes on two sheets), LibreOffice (lowercased unknown functions,
#NAME? caches), the Open XML SDK (`x:` prefix)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import openpyxl
import pytest
from lxml import etree

from tests.conftest import DATA, invoke
from trainbudget.addin.functions.registry import BY_NAME
from trainbudget.addin.ooxml import comments, package, xmlcells
from trainbudget.addin.verify import check as verify

H100 = "H100 SXM, BF16 tensor core, dense"
NOT_OURS = verify.Problem("workbook", "not a TrainingBudget workbook: no Budget, Runs, Functions, About sheet")


def hours(params: float, tokens: float) -> float:
    return BY_NAME["TRAIN_HOURS"].call({"params": params, "tokens": tokens, "device": H100})


def weights_gb(params: float) -> float:
    """Row 1, column 2 of TRAIN_BUDGET(params, 1E9, H100): what the frozen cells must hold."""
    return BY_NAME["TRAIN_BUDGET"].call({"params": params, "tokens": 1e9, "device": H100})[0][1]


@pytest.fixture(scope="module")
def exported(soffice, tmp_path_factory):
    """Each fixture exported through the command line, with its stdout."""
    tmp = tmp_path_factory.mktemp("files")
    done = {}
    for name in ("excel_modern", "excel_notes", "libreoffice_filldown", "sdk_prefixed"):
        src = Path(shutil.copyfile(DATA / f"{name}.xlsx", tmp / f"{name}.xlsx"))
        before = src.read_bytes()
        proc = invoke("export", str(src), "--out", str(tmp / f"{name}-email.xlsx"))
        assert proc.returncode == 0, proc.stderr
        assert src.read_bytes() == before
        done[name] = (tmp / f"{name}-email.xlsx", proc.stdout)
    return done


def _values(path: Path, sheet: str = "Plan") -> openpyxl.worksheet.worksheet.Worksheet:
    return openpyxl.load_workbook(path, data_only=True)[sheet]


def test_fixtures_are_as_the_other_tools_write_them():
    with zipfile.ZipFile(DATA / "excel_modern.xlsx") as z:
        sheet = z.read("xl/worksheets/sheet1.xml")
    assert b't="shared"' in sheet and b"_xlfn.XLOOKUP" in sheet and b"mc:Ignorable" in sheet
    with zipfile.ZipFile(DATA / "sdk_prefixed.xlsx") as z:
        assert b"<x:worksheet" in z.read("xl/worksheets/sheet1.xml")
    with zipfile.ZipFile(DATA / "libreoffice_filldown.xlsx") as z:
        assert b"train_hours(" in z.read("xl/worksheets/sheet1.xml")  # LibreOffice lowercases unknown functions
        assert b"LibreOffice" in z.read("docProps/app.xml")


def test_shared_fill_down_exports_right_on_every_row(exported):
    out, stdout = exported["excel_modern"]
    values, formulas = _values(out), openpyxl.load_workbook(out)["Plan"]
    for r, params in ((2, 1e9), (3, 7e9), (4, 13e9)):
        # INDEX(TRAIN_BUDGET(...)) has no native form: each row frozen to its own cached value
        assert values[f"B{r}"].value == pytest.approx(weights_gb(params))
        assert "TRAIN_BUDGET" in formulas[f"B{r}"].comment.text
        # TRAIN_HOURS filled down: native on every row, each with its own row's reference
        assert values[f"C{r}"].value == pytest.approx(hours(params, 1e9))
        assert f"A{r}" in formulas[f"C{r}"].value and "TRAIN_" not in formulas[f"C{r}"].value
    assert "4 formulas made native, 3 frozen" in stdout


def test_modern_excel_values_are_kept(exported):
    out, _ = exported["excel_modern"]
    values, formulas = _values(out), openpyxl.load_workbook(out)["Plan"]
    assert values["D2"].value == 14 and formulas["D2"].value == "=_xlfn.XLOOKUP(A3,A2:A4,B2:B4)"
    assert values["D3"].value == 2e9  # LibreOffice 7.4 has no LET: its #NAME? must not replace the value


def test_blank_sheet_qualified_argument_means_default(exported):
    out, _ = exported["excel_modern"]
    assert _values(out)["E4"].value == pytest.approx(hours(13e9, 1e9))
    assert 'IF(Other!D1=""' in openpyxl.load_workbook(out)["Plan"]["E4"].value


def test_libreoffice_file(exported):
    out, stdout = exported["libreoffice_filldown"]
    values = _values(out)
    for r, params in ((2, 1e9), (3, 7e9), (4, 13e9)):
        assert values[f"B{r}"].value == pytest.approx(hours(params, 1e12))  # its #NAME? caches replaced
        assert values[f"C{r}"].value == 2 * params
    assert "3 formulas made native" in stdout


def test_sdk_prefixed_parts(exported):
    out, stdout = exported["sdk_prefixed"]
    assert "1 formulas made native, 1 frozen" in stdout
    assert _values(out)["B1"].value == pytest.approx(hours(7e9, 1e9))
    parts = package.read_parts(out)
    sheet = parts["xl/worksheets/sheet1.xml"]
    assert sheet.startswith(b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<x:worksheet')
    root = etree.fromstring(sheet)
    assert root.nsmap["x"] == xmlcells.MAIN and None not in root.nsmap
    assert comments.notes_on(parts, "Plan")["B2"].startswith("Frozen by the e-mail export")


def test_notes_on_two_sheets_are_kept_and_new_ones_unique(exported):
    out, _ = exported["excel_notes"]
    src, parts = package.read_parts(DATA / "excel_notes.xlsx"), package.read_parts(out)
    for part in ("xl/comments1.xml", "xl/comments2.xml", "xl/drawings/vmlDrawing2.vml"):
        assert part in parts
    assert parts["xl/comments2.xml"] == src["xl/comments2.xml"]  # Third's notes untouched
    other = comments.notes_on(parts, "Other")
    assert other["A1"].endswith("a note on Other")
    assert "my own note on the weights" in other["B2"] and "Frozen by the e-mail export" in other["B2"]
    plan = comments.notes_on(parts, "Plan")
    assert list(plan) == ["B1"] and "Frozen by the e-mail export" in plan["B1"]
    # Plan's new parts: new names, a free idmap block, shape ids inside it
    sheet_rels = etree.fromstring(parts["xl/worksheets/_rels/sheet1.xml.rels"])
    targets = sorted(r.get("Target") for r in sheet_rels)
    assert targets == ["/xl/comments3.xml", "/xl/drawings/vmlDrawing3.vml"]
    blocks, ids = {}, {}
    for n in (1, 2, 3):
        vml = etree.fromstring(parts[f"xl/drawings/vmlDrawing{n}.vml"])
        (idmap,) = vml.iter("{urn:schemas-microsoft-com:office:office}idmap")
        blocks[n] = int(idmap.get("data"))
        ids[n] = [int(s.get("id").removeprefix("_x0000_s")) for s in vml.iter("{urn:schemas-microsoft-com:vml}shape")]
    assert len(set(blocks.values())) == 3
    for n, block in blocks.items():
        assert all(1024 * block < i < 1024 * (block + 1) for i in ids[n]), (n, block, ids[n])
    with zipfile.ZipFile(out) as z:
        types = z.read("[Content_Types].xml").decode()
    assert 'PartName="/xl/comments3.xml"' in types and types.count('Extension="vml"') == 1


def test_untouched_parts_and_declarations_are_kept(exported):
    out, _ = exported["excel_modern"]
    src, parts = package.read_parts(DATA / "excel_modern.xlsx"), package.read_parts(out)
    assert parts["xl/sharedStrings.xml"] == src["xl/sharedStrings.xml"]
    assert parts["xl/styles.xml"] == src["xl/styles.xml"]
    root = etree.fromstring(parts["xl/worksheets/sheet1.xml"])
    before = etree.fromstring(src["xl/worksheets/sheet1.xml"])
    assert root.nsmap == before.nsmap and root.get(f"{{{root.nsmap['mc']}}}Ignorable") == "x14ac xr xr2 xr3"


@pytest.mark.parametrize("name", ["excel_modern", "excel_notes", "libreoffice_filldown", "sdk_prefixed"])
def test_verify_and_measure_into_on_other_writers_files(exported, name, tmp_path):
    out, _ = exported[name]
    assert verify.verify(out, recalc=False) == [NOT_OURS]
    original = Path(shutil.copyfile(DATA / f"{name}.xlsx", tmp_path / f"{name}.xlsx"))
    before = original.read_bytes()
    proc = invoke("measure", "--seconds", "0.05", "--into", str(original))  # no Devices sheet: refused
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert original.read_bytes() == before and not original.with_name(original.name + ".bak").exists()
    copy = Path(shutil.copyfile(out, tmp_path / "copy.xlsx"))  # the e-mail copy has one: the row goes in
    proc = invoke("measure", "--seconds", "0.05", "--into", str(copy), "--name", "Test box")
    assert proc.returncode == 0, proc.stderr
    names = [r[0].value for r in openpyxl.load_workbook(copy)["Devices"].iter_rows(min_row=2)]
    assert names[-1] == "Test box"
    first = package.sheet_parts(package.read_parts(out))["Plan"]
    assert package.read_parts(copy)[first] == package.read_parts(out)[first]
