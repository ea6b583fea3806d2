"""`trainbudget export` on workbooks typed here part by part, as Excel writes them (formulas with their cached
values), never written by trainbudget itself: a good cached value is never replaced by an error LibreOffice
produced, a user's own Devices sheet stays, --sheets is checked first, an unwritable --out is named as
given, and an earlier copy is kept as .bak."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import openpyxl
import pytest

from tests.conftest import invoke

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"

R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

H100 = "H100 SXM, BF16 tensor core, dense"

HOURS_7B = 11.790466565605525  # TRAIN_HOURS(7e9, 1e9, H100): 6 * 7e9 * 1e9 / (989.5e12 * 3600)


def _cell(ref: str, formula: str | None, value: object, kind: str | None = None) -> str:
    t = f' t="{kind}"' if kind else ""
    f = f"<f>{escape(formula)}</f>" if formula else ""
    v = f"<is><t>{escape(str(value))}</t></is>" if kind == "inlineStr" else f"<v>{value}</v>"
    return f'<c r="{ref}"{t}>{f}{v}</c>'


def workbook(path: Path, sheets: dict[str, list[str]], names: str = "") -> Path:
    """A minimal package as Excel saves it: one row of cells per sheet, optional defined names."""
    head = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    ws_ct = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        overrides = "".join(f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="{ws_ct}"/>'
                            for i in range(1, len(sheets) + 1))
        z.writestr("[Content_Types].xml", head + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/'
                   'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
                   'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName='
                   '"/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.'
                   f'sheet.main+xml"/>{overrides}</Types>')
        z.writestr("_rels/.rels", head + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
                   f'relationships"><Relationship Id="rId1" Type="{R}/officeDocument" Target="xl/workbook.xml"/>'
                   "</Relationships>")
        entries = "".join(f'<sheet name="{n}" sheetId="{i}" r:id="rId{i}"/>' for i, n in enumerate(sheets, 1))
        defined = f"<definedNames>{names}</definedNames>" if names else ""
        z.writestr("xl/workbook.xml", head + f'<workbook xmlns="{MAIN}" xmlns:r="{R}"><sheets>{entries}</sheets>'
                   f"{defined}</workbook>")
        rels = "".join(f'<Relationship Id="rId{i}" Type="{R}/worksheet" Target="worksheets/sheet{i}.xml"/>'
                       for i in range(1, len(sheets) + 1))
        z.writestr("xl/_rels/workbook.xml.rels", head + '<Relationships xmlns="http://schemas.openxmlformats.org/'
                   f'package/2006/relationships">{rels}</Relationships>')
        for i, cells in enumerate(sheets.values(), 1):
            z.writestr(f"xl/worksheets/sheet{i}.xml", head + f'<worksheet xmlns="{MAIN}"><sheetData><row r="1">'
                       f'{"".join(cells)}</row></sheetData></worksheet>')
    return path


def one_line_refusal(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-300:], proc.stderr[-600:])
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-600:]
    assert "Traceback" not in proc.stderr


def test_export_keeps_value_of_let_wrapping_a_call(tmp_path, soffice):
    """`=LET(x, TRAIN_HOURS(...), x*2)` (Excel 365) with its cached value. The call
    inside is rewritten, LibreOffice 7.4 lacks LET, and the copy showed #NAME? instead of 23.58."""
    src = workbook(tmp_path / "let.xlsx", {"Plan": [
        _cell("A1", None, 7e9),
        _cell("B1", f'_xlfn.LET(_xlpm.x,TRAIN_HOURS(A1,1E9,"{H100}"),_xlpm.x*2)', 2 * HOURS_7B)]})
    out = tmp_path / "let.out.xlsx"
    invoke("export", str(src), "--out", str(out), check=True)
    value = openpyxl.load_workbook(out, data_only=True)["Plan"]["B1"].value
    assert value == pytest.approx(2 * HOURS_7B), value


def test_export_of_a_workbook_with_its_own_devices_sheet(tmp_path, soffice):
    """A user's workbook already has a sheet named Devices (and a name DeviceNames): the copy held two
    sheets named Devices (Excel repairs the file) and B1's good value became #N/A, exit 0."""
    src = workbook(tmp_path / "own.xlsx", {
        "Plan": [_cell("A1", None, 7e9), _cell("B1", f'TRAIN_HOURS(A1,1E9,"{H100}")', HOURS_7B)],
        "Devices": [_cell("A1", None, "my own list", "inlineStr")]},
        names='<definedName name="DeviceNames">Devices!$A$1</definedName>')
    out = tmp_path / "own.out.xlsx"
    proc = invoke("export", str(src), "--out", str(out))
    if proc.returncode != 0:  # a clear refusal is acceptable
        one_line_refusal(proc)
        assert not out.exists()
        return
    wb = openpyxl.load_workbook(out, data_only=True)
    assert len(wb.sheetnames) == len(set(wb.sheetnames)), wb.sheetnames
    assert wb["Plan"]["B1"].value == pytest.approx(HOURS_7B)


def test_export_beside_a_users_own_devices_sheet_adds_its_own(tmp_path, soffice):
    """A sheet named Devices that is not ours stays; the copy's table sheet takes a free name."""
    src = workbook(tmp_path / "own.xlsx", {
        "Plan": [_cell("A1", None, 7e9), _cell("B1", f'TRAIN_HOURS(A1,1E9,"{H100}")', HOURS_7B)],
        "Devices": [_cell("A1", None, "my own list", "inlineStr")]})
    out = tmp_path / "own.out.xlsx"
    invoke("export", str(src), "--out", str(out), check=True)
    wb = openpyxl.load_workbook(out, data_only=True)
    assert wb.sheetnames == ["Plan", "Devices", "Devices (TB)"]
    assert wb["Devices"]["A1"].value == "my own list"
    assert wb["Plan"]["B1"].value == pytest.approx(HOURS_7B)


@pytest.mark.parametrize(("args", "message"), [
    (("--sheets", "Budget"), "give --pdf too"),
    (("--pdf", "x.pdf", "--sheets", " , "), "names no sheet"),
])
def test_export_sheets_option_is_checked_first(built, tmp_path, args, message):
    out = tmp_path / "copy.xlsx"
    proc = invoke("export", str(built.path), "--out", str(out), *args, cwd=tmp_path)
    one_line_refusal(proc)
    assert message in proc.stderr and not out.exists() and not (tmp_path / "x.pdf").exists()


def test_an_unwritable_out_names_the_file_asked_for(built, tmp_path):
    """The message named our temporary file (/proc/.o.xlsx.tbtmp-...), not --out."""
    proc = invoke("export", str(built.path), "--out", "/proc/o.xlsx")
    one_line_refusal(proc)
    assert "/proc/o.xlsx" in proc.stderr and "tbtmp" not in proc.stderr


def test_export_over_an_earlier_copy_keeps_it_as_bak(built, tmp_path, soffice):
    out = tmp_path / "copy.xlsx"
    out.write_bytes(b"an earlier copy")
    invoke("export", str(built.path), "--out", str(out), check=True)
    assert (tmp_path / "copy.xlsx.bak").read_bytes() == b"an earlier copy"
    assert out.read_bytes()[:2] == b"PK"
