"""`trainbudget verify` on the template (clean) and on copies with one seeded defect each."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import openpyxl
import xlwings

from tests.conftest import invoke
from tests.xlsx_edit import edit_cell, set_formula, set_text
from trainbudget.addin.ooxml import package
from trainbudget.addin.template import budget_sheet
from trainbudget.addin.verify import check as verify


def _where(problems):
    return [p.where for p in problems]


def test_template_is_clean_with_libreoffice(soffice, built):
    problems = verify.verify(built.path, recalc=True)
    assert verify.errors(problems) == []
    # warnings only about xlwings.conf rows that override the user's settings
    assert all(p.severity == "warning" and p.where.startswith("xlwings.conf!B") for p in problems)


def test_cli_clean_exit_0_and_json(built):
    proc = invoke("verify", str(built.path), "--no-recalc", check=True)
    last = proc.stdout.strip().splitlines()[-1]
    assert last == f"{built.path}: clean" or last.startswith(f"{built.path}: clean (")
    found = json.loads(invoke("verify", str(built.path), "--no-recalc", "--json", check=True).stdout)
    assert [p for p in found if p["severity"] != "warning"] == []


def test_duplicate_device(copy):
    path = copy()
    edit_cell(path, "Devices", "A5", set_text("h100 sxm, BF16 tensor core, dense"))  # A4's name
    problems = verify.errors(verify.verify(path, recalc=False))
    assert _where(problems) == ["Devices!A5"] and "duplicate device name" in problems[0].message
    assert "(first at A4)" in problems[0].message


def test_text_rate(copy):
    path = copy()
    edit_cell(path, "Devices", "D6", set_text("fast"))
    problems = verify.errors(verify.verify(path, recalc=False))
    assert _where(problems) == ["Devices!D6"] and "tflops must be a number (got 'fast')" in problems[0].message


def test_missing_source(copy):
    path = copy()
    edit_cell(path, "Devices", "J9", set_text(""))
    assert _where(verify.errors(verify.verify(path, recalc=False))) == ["Devices!J9"]


def test_edited_formula_exit_1(copy):
    path = copy()
    hours = budget_sheet.FIRST_INPUT + len(budget_sheet.INPUTS) + 10
    edit_cell(path, "Budget", f"B{hours}", set_formula("1+1"))
    problems = verify.errors(verify.verify(path, recalc=False))
    assert _where(problems) == [f"Budget!B{hours}"] and "differs from the template" in problems[0].message
    proc = invoke("verify", str(path), "--no-recalc")
    assert proc.returncode == 1 and proc.stdout.startswith(f"Budget!B{hours}: formula differs")


def test_extra_vba_module(copy):
    path = copy()
    with zipfile.ZipFile(Path(xlwings.__file__).parent / "quickstart_standalone.xlsm") as z:
        other = z.read("xl/vbaProject.bin")  # carries the modules 'xlwings' and 'Dictionary' besides
    package.write_parts(path, path, {"xl/vbaProject.bin": other})
    problems = verify.errors(verify.verify(path, recalc=False))
    assert {p.where for p in problems} == {"xl/vbaProject.bin"}
    # Module1 too: xlwings' sample macro, which the shipped project no longer carries
    assert sorted(p.message.split("'")[1] for p in problems) == ["Dictionary", "Module1", "xlwings"]


def test_external_link(copy):
    path = copy()
    parts = package.read_parts(path)
    part = package.sheet_parts(parts)["About"]
    xml = parts[part].replace(b'<c r="A3"', b'<c r="A3"><f>[1]Prices!A1</f><v>2</v></c><c r="Z3"', 1)
    link = b'<externalLink xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"/>'
    package.write_parts(path, path, {part: xml, "xl/externalLinks/externalLink1.xml": link})
    problems = verify.errors(verify.verify(path, recalc=False))
    assert set(_where(problems)) == {"About!A3", "xl/externalLinks/externalLink1.xml"}


def test_unknown_device_input_recalculates_to_errors(soffice, copy):
    path = copy()
    edit_cell(path, "Budget", budget_sheet.REF["device"].replace("$", ""), set_text("H10"))
    problems = verify.errors(verify.verify(path, recalc=True))
    labels = openpyxl.load_workbook(path)["Budget"]["A"]
    hours = next(c.row for c in labels if c.value == "Wall-clock hours")
    assert f"Budget!B{hours}" in _where(problems)
    refused = "recalculated result is an error: #VALUE! device must be a Name of the Devices sheet (got 'H10')"
    assert next(p for p in problems if p.where == f"Budget!B{hours}").message.endswith(refused)  # the Input check's
    assert all("recalculated result is an error: #N/A" in p.message or p.message.endswith(refused) for p in problems)


def test_not_a_workbook(tmp_path):
    junk = tmp_path / "x.xlsm"
    junk.write_text("hello")
    proc = invoke("verify", str(junk))
    assert proc.returncode == 2 and "not an Excel workbook" in proc.stderr


def test_a_workbook_saved_by_openpyxl_is_one_line_with_the_fix(built, tmp_path):
    """openpyxl keeps formulas but writes no cached values: one grouped line, not one per cell;
    --json keeps every problem."""
    path = tmp_path / "saved.xlsm"
    openpyxl.load_workbook(built.path, keep_vba=True).save(path)
    formulas = sum(len(cells) for cells in built.values.values())
    proc = invoke("verify", str(path), "--no-recalc")
    assert proc.returncode == 1
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2, proc.stdout
    assert lines[0].startswith(f"{formulas} formula cells have no cached value (Summary!")  # the first sheet
    assert lines[0].count("!") == 3 and ", ...): " in lines[0] and "trainbudget export" in lines[0]
    assert lines[1] == f"{path}: {formulas} errors, 0 warnings (--json lists each)"
    found = json.loads(invoke("verify", str(path), "--no-recalc", "--json").stdout)
    assert len(found) == formulas and len({p["where"] for p in found}) == formulas
    assert {p["kind"] for p in found} == {"formula cells have no cached value"}


def test_grouped_lines_keep_lone_findings_whole():
    one = verify.Problem("Budget!B5", "params must be > 0 (got -7000000000)")
    many = [verify.Problem(f"Budget!B{r}", "no cached value", kind="formula cells have no cached value",
                           fix="recalculate") for r in range(6, 11)]
    same = [verify.Problem(f"Devices!A{r}", "odd", "warning") for r in (2, 3)]
    assert verify.grouped([one, *many, *same]) == [
        str(one), "5 formula cells have no cached value (Budget!B6, Budget!B7, Budget!B8, ...): recalculate",
        "warning: odd (2 places: Devices!A2, Devices!A3)"]
