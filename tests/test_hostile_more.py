"""Reviewer's reproductions (issues 10 and 14) of defects found on main: each test states what should
hold and fails on the code it was written against. Workbooks are typed here part by part (as Excel
writes them: formulas with their cached values), never written by trainbudget itself."""

from __future__ import annotations

import hashlib
import json
import resource
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import openpyxl
import pytest
from lxml import etree

from tests.conftest import run_cli

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PREL = "http://schemas.openxmlformats.org/package/2006/relationships"
CT = "http://schemas.openxmlformats.org/package/2006/content-types"
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


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line_refusal(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-300:], proc.stderr[-600:])
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-600:]
    assert "Traceback" not in proc.stderr


# ---- export: no good cached value replaced by an error LibreOffice produced --------------------

def test_export_keeps_value_of_let_wrapping_a_call(tmp_path, soffice):
    """Issue 10 item 1: `=LET(x, TRAIN_HOURS(...), x*2)` (Excel 365) with its cached value. The call
    inside is rewritten, LibreOffice 7.4 lacks LET, and the copy showed #NAME? instead of 23.58."""
    src = workbook(tmp_path / "let.xlsx", {"Plan": [
        _cell("A1", None, 7e9),
        _cell("B1", f'_xlfn.LET(_xlpm.x,TRAIN_HOURS(A1,1E9,"{H100}"),_xlpm.x*2)', 2 * HOURS_7B)]})
    out = tmp_path / "let.out.xlsx"
    run_cli("export", str(src), "--out", str(out), check=True)
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
    proc = run_cli("export", str(src), "--out", str(out))
    if proc.returncode != 0:  # a clear refusal is acceptable
        one_line_refusal(proc)
        assert not out.exists()
        return
    wb = openpyxl.load_workbook(out, data_only=True)
    assert len(wb.sheetnames) == len(set(wb.sheetnames)), wb.sheetnames
    assert wb["Plan"]["B1"].value == pytest.approx(HOURS_7B)


# ---- measure --into: what is written can be read back; datasheet rows are not replaced ----------

def _measure_into(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("measure", "--seconds", "0.05", "--memory-gib", "1", "--into", str(path), *extra)


@pytest.mark.parametrize("option", [["--watts", "inf"], ["--memory-gib", "nan"], ["--memory-gib", "inf"]])
def test_measure_into_refuses_non_finite_figures(built, tmp_path, option):
    """`--watts inf` wrote the text 'inf' into the Devices table (exit 0); afterwards `devices
    --catalog`, `estimate --catalog` and the next `measure --into` refused the workbook."""
    path = Path(shutil.copyfile(built.path, tmp_path / "b.xlsm"))
    before = digest(path)
    one_line_refusal(_measure_into(path, "--name", "box", *option))
    assert digest(path) == before


def test_measure_into_does_not_replace_a_datasheet_row(built, tmp_path):
    """`--name` equal to a catalog row replaced the vendor's 989.5 TFLOP/s H100 row with this CPU's
    rate (exit 0, 'updated'): every budget on that device became ~500,000x longer. Updating a
    measured row is the documented use; a datasheet row is not a measurement to overwrite."""
    path = Path(shutil.copyfile(built.path, tmp_path / "b.xlsm"))
    _measure_into(path, "--name", H100.lower())
    listing = run_cli("devices", "--catalog", str(path), "--json", check=True)
    rows = {d["name"].casefold(): d for d in json.loads(listing.stdout)}
    assert rows[H100.casefold()]["tflops"] == pytest.approx(989.5), rows[H100.casefold()]


# ---- the command-line contract ----------------------------------------------------------------

def test_overflow_is_one_line(tmp_path):
    """`estimate --params 1e308` printed numpy's RuntimeWarnings (8 lines with source) before the error."""
    one_line_refusal(run_cli("estimate", "--params", "1e308", "--tokens", "1"))


def _limited_cli(*args: str) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    return subprocess.run([sys.executable, "-m", "trainbudget.addin.cli", *args], capture_output=True,
                          text=True, preexec_fn=cap, timeout=120)


@pytest.mark.parametrize("args", [["devices", "--catalog", "/dev/zero"],
                                  ["estimate", "--config", "/dev/zero"],
                                  ["estimate", "--scenarios", "/dev/zero"]])
def test_unbounded_input_files_are_refused(args):
    """Files given on the command line are read whole: /dev/zero (or any huge file) fills memory,
    and under a memory cap ends in a MemoryError traceback with exit 1."""
    one_line_refusal(_limited_cli(*args))


# ---- CSV as Excel saves it ----------------------------------------------------------------------

def test_catalog_csv_with_a_byte_order_mark(tmp_path):
    """Excel's "CSV UTF-8" starts the file with a BOM; the catalog was refused as 'row 1: name is
    required' (the header's first column read as '\\ufeffname')."""
    packaged = Path(__file__).resolve().parents[1] / "calc" / "data" / "devices.csv"
    lines = packaged.read_text("utf-8").splitlines()[:2]
    path = tmp_path / "bom.csv"
    path.write_text("\ufeff" + "\n".join(lines) + "\n", "utf-8")
    proc = run_cli("devices", "--catalog", str(path), "--csv", check=True)
    assert "M3 Ultra" in proc.stdout


def test_scenarios_csv_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "plans.csv"
    path.write_text(f'\ufeffname,params,tokens,device,devices,utilization,price,own\nA,7e9,1e9,"{H100}",8,0.4,2.5,\n',
                    "utf-8")
    proc = run_cli("estimate", "--scenarios", str(path), "--csv", check=True)
    assert proc.stdout.splitlines()[1].startswith("A,")


# ---- limits: one set of bounds for every reader --------------------------------------------------

def test_verify_accepts_what_the_package_layer_accepts(built, tmp_path):
    """The package layer takes parts up to 256 MiB (opening.MAX_PART_BYTES: 'a full 1,048,576-row
    sheet'), and `measure --into` edits such a workbook; verify's macro scan stops at 64 MiB and
    calls it 'a zip bomb?' (exit 2). Seen with a 100,000-row Devices table (4.6 MB file). Here: one
    extra sheet of ~70 MB of text cells that compress about 1.3x (no bomb by any measure)."""
    import base64
    import os

    rows = "".join(f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>'
                   f'{base64.b64encode(os.urandom(24_000)).decode()}</t></is></c></row>' for i in range(1, 2_200))
    sheet = f'<worksheet xmlns="{MAIN}"><sheetData>{rows}</sheetData></worksheet>'.encode()
    path = tmp_path / "large.xlsm"
    ct = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
    with zipfile.ZipFile(built.path) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "xl/workbook.xml":  # one more <sheet> (lxml, namespace-aware)
                root = etree.fromstring(data)
                etree.SubElement(root.find(f"{{{MAIN}}}sheets"), f"{{{MAIN}}}sheet",
                                 {"name": "Log", "sheetId": "99", f"{{{R}}}id": "rIdLog"})
                data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
            elif info.filename == "xl/_rels/workbook.xml.rels":
                root = etree.fromstring(data)
                etree.SubElement(root, f"{{{PREL}}}Relationship", Id="rIdLog", Type=f"{R}/worksheet",
                                 Target="worksheets/sheet99.xml")
                data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
            elif info.filename == "[Content_Types].xml":
                root = etree.fromstring(data)
                etree.SubElement(root, f"{{{CT}}}Override", PartName="/xl/worksheets/sheet99.xml", ContentType=ct)
                data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
            dst.writestr(info.filename, data)
        dst.writestr("xl/worksheets/sheet99.xml", sheet)
    proc = run_cli("verify", str(path), "--no-recalc")
    assert proc.returncode in (0, 1), proc.stderr
    assert "zip bomb" not in proc.stdout + proc.stderr


def test_export_beside_a_users_own_devices_sheet_adds_its_own(tmp_path, soffice):
    """A sheet named Devices that is not ours stays; the copy's table sheet takes a free name."""
    src = workbook(tmp_path / "own.xlsx", {
        "Plan": [_cell("A1", None, 7e9), _cell("B1", f'TRAIN_HOURS(A1,1E9,"{H100}")', HOURS_7B)],
        "Devices": [_cell("A1", None, "my own list", "inlineStr")]})
    out = tmp_path / "own.out.xlsx"
    run_cli("export", str(src), "--out", str(out), check=True)
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
    proc = run_cli("export", str(built.path), "--out", str(out), *args, cwd=tmp_path)
    one_line_refusal(proc)
    assert message in proc.stderr and not out.exists() and not (tmp_path / "x.pdf").exists()


@pytest.mark.parametrize("value", ["inf", "nan", "0", "1e9", "soon"])
def test_libreoffice_timeout_is_bounded(monkeypatch, value):
    from trainbudget.addin import libreoffice as engine

    monkeypatch.setenv("TRAINBUDGET_LO_TIMEOUT", value)
    with pytest.raises(engine.EngineError, match="TRAINBUDGET_LO_TIMEOUT must be seconds"):
        engine.timeout_s()


def test_an_unwritable_out_names_the_file_asked_for(built, tmp_path):
    """The message named our temporary file (/proc/.o.xlsx.tbtmp-...), not --out."""
    proc = run_cli("export", str(built.path), "--out", "/proc/o.xlsx")
    one_line_refusal(proc)
    assert "/proc/o.xlsx" in proc.stderr and "tbtmp" not in proc.stderr


def test_export_over_an_earlier_copy_keeps_it_as_bak(built, tmp_path, soffice):
    out = tmp_path / "copy.xlsx"
    out.write_bytes(b"an earlier copy")
    run_cli("export", str(built.path), "--out", str(out), check=True)
    assert (tmp_path / "copy.xlsx.bak").read_bytes() == b"an earlier copy"
    assert out.read_bytes()[:2] == b"PK"
