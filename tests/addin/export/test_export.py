"""`trainbudget export`: the e-mail copy of the template and of a user's own workbook."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import openpyxl
import pytest
from lxml import etree
from openpyxl.chart import BarChart, Reference
from openpyxl.drawing.image import Image
from openpyxl.worksheet.formula import ArrayFormula

from tests.conftest import invoke
from tests.xlsx_edit import edit_cell
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.export import mailcopy as export
from trainbudget.addin.functions import registry
from trainbudget.addin.ooxml import package
from trainbudget.addin.template import budget_sheet
from trainbudget.addin.udf import udfs
from trainbudget.addin.verify import check as verify

H100 = "H100 SXM, BF16 tensor core, dense"
OURS = ("TRAIN_", "CHINCHILLA_", "DEVICE_", "OWNED_", "MODEL_")


@pytest.fixture(scope="module")
def exported(soffice, built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    before = built.path.read_bytes()
    done = export.export(built.path, tmp / "budget.xlsx", tmp / "budget.pdf")
    assert built.path.read_bytes() == before  # the input is never written
    return done


def _formulas(path):
    wb = openpyxl.load_workbook(path)
    return {(ws.title, c.coordinate): c.value for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if verify.is_formula(c)}


def test_template_export_is_macro_free_and_verifies(exported):
    with zipfile.ZipFile(exported.out) as z:
        names = z.namelist()
        types = z.read("[Content_Types].xml").decode()
    assert not any("vbaProject" in n for n in names) and "macroEnabled" not in types and "vbaProject" not in types
    wb = openpyxl.load_workbook(exported.out)
    # it opens on Budget; Budget's tab follows the sheets it reads (export.order: read right unrecalculated)
    assert "xlwings.conf" not in wb.sheetnames and wb.active.title == "Budget"
    assert verify.verify(exported.out, recalc=False) == []


def test_no_function_of_ours_is_left(exported):
    formulas = _formulas(exported.out)
    assert len(formulas) > 250
    ours = re.compile(r"(?<![A-Z0-9_.])(" + "|".join(OURS) + r")[A-Z0-9_]*\(")  # a call, not a name holding one
    assert not [k for k, f in formulas.items() if ours.search(f.upper())]
    with_native = [f for f in registry.FUNCTIONS if f.native is not None]  # one Functions row each
    # The Functions sheet lists the registry from row 2 (template.sheets); a function with no
    # native form (TRAIN_BUDGET, the step functions) is frozen to its value, the rest rewritten.
    without = [f"Functions!D{row}" for row, f in enumerate(registry.FUNCTIONS, start=2) if f.native is None]
    assert exported.rewritten == len(with_native) and exported.frozen == without
    assert "Functions!D12" in without and len(without) == len(registry.FUNCTIONS) - len(with_native)


def test_every_formula_cell_has_a_value_equal_to_calc_and_libreoffice(exported, built, tmp_path):
    assert all(not refs for refs in package.uncached_formulas(exported.out).values())
    cached = openpyxl.load_workbook(exported.out, data_only=True)
    again = openpyxl.load_workbook(engine.recalculate(exported.out, tmp_path), data_only=True)
    for (sheet, ref) in _formulas(exported.out):
        a, b = cached[sheet][ref].value, again[sheet][ref].value
        assert a == b or (isinstance(a, float) and math.isclose(a, b, rel_tol=1e-12)), (sheet, ref, a, b)
        want = built.values[sheet].get(ref)  # computed by calc when the template was built
        if isinstance(want, float):
            assert math.isclose(a, want, rel_tol=1e-9), (sheet, ref, a, want)
    frozen = openpyxl.load_workbook(exported.out)["Functions"]["D12"]
    assert frozen.value == pytest.approx(built.values["Functions"]["D12"])
    assert "Frozen by the e-mail export: TRAIN_BUDGET" in frozen.comment.text


def test_the_copys_footers_carry_the_export_date_in_iso(exported):
    """The copy is printed later, in the reader's locale: its footers' `&D` (12/01/2026 there) is the
    export's ISO date, saying what it is ("exported 2026-12-01"), on every sheet the template dates."""
    wb = openpyxl.load_workbook(exported.out)
    dated = {ws.title: ws.oddFooter.left.text for ws in wb.worksheets if ws.oddFooter.left.text}
    assert {"Budget", "Scenarios"} <= set(dated)
    for title, text in dated.items():
        assert "&D" not in text, title
    assert dated["Budget"].endswith(f"exported {export.today()}")


def test_pdf_shows_the_budget(exported, tmp_path):
    text = subprocess.run(["pdftotext", str(exported.pdf), "-"], capture_output=True, text=True, check=True).stdout
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}  # the template's default job
    hours = calc.train_hours(v["params"], v["tokens"], v["device"], utilization=v["utilization"], devices=v["devices"])
    assert "Training budget" in text and "Wall-clock hours" in text and f"{hours:.1f} h" in text
    assert f"exported {export.today()}" in text  # the footer's date is ISO, not 12/01/2026
    assert not re.search(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b", text)
    fonts = subprocess.run(["pdffonts", str(exported.pdf)], capture_output=True, text=True, check=True).stdout
    assert all(line.split()[-5] == "yes" for line in fonts.splitlines()[2:])  # every font embedded
    subprocess.run(["pdftoppm", "-png", "-r", "40", "-f", "1", "-l", "1", str(exported.pdf), str(tmp_path / "p")],
                   check=True)
    assert (tmp_path / "p-1.png").stat().st_size > 5000


def _user_workbook(path: Path) -> Path:
    """A user's own workbook calling the add-in: nested, ranged, numeric device, no native form; a chart, an image."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Plan"
    ws.append(["input", "value"])
    for label, value in (("params", 7e9), ("tokens", 1e12), ("device", H100)):
        ws.append([label, value])
    ws["C2"] = "=ROUND(TRAIN_HOURS(B2,B3,B4)/24,1)"
    ws["C5"] = "=TRAIN_GPU_HOURS(B2,B3,989.5)"
    ws["C6"] = "=INDEX(TRAIN_BUDGET(B2,B3,B4),10,2)"
    for r, n in enumerate((1e9, 7e9, 13e9, 70e9), start=10):
        ws[f"A{r}"] = n
    ws["B10"] = ArrayFormula("B10:B13", "=TRAIN_HOURS(A10:A13,B3,B4,0.4,8)")
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=2, min_row=10, max_row=13))
    ws.add_chart(chart, "E2")
    from PIL import Image as PILImage

    PILImage.fromarray(np.full((8, 8, 3), 200, dtype=np.uint8)).save(path.with_suffix(".png"))
    ws.add_image(Image(str(path.with_suffix(".png"))), "E20")
    wb.create_sheet("Notes")["A1"] = "kept as it is"
    wb.save(path)
    # the value Excel, with the add-in, saved for the TRAIN_BUDGET cell (its 10th row: days)
    package.fill_cached_values(path, path, {"Plan": {"C6": calc.train_hours(7e9, 1e12, H100) / 24}})
    return path


def _tree(data: bytes) -> list:
    """A part's elements, attributes and texts in document order (where namespaces are declared aside)."""
    return [(el.tag, sorted(el.attrib.items()), (el.text or "").strip()) for el in etree.fromstring(data).iter()]


def test_user_workbook(soffice, tmp_path):
    src = _user_workbook(tmp_path / "plan.xlsx")
    before = package.read_parts(src)
    done = export.export(src, tmp_path / "plan-email.xlsx")
    assert done.added_devices and done.frozen == ["Plan!C6"] and done.rewritten == 3
    values = openpyxl.load_workbook(done.out, data_only=True)["Plan"]
    hours = calc.train_hours(7e9, 1e12, H100)
    assert values["C2"].value == pytest.approx(round(hours / 24, 1))
    assert values["C5"].value == pytest.approx(calc.gpu_hours(7e9, 1e12, 989.5))
    assert values["C6"].value == pytest.approx(hours / 24)
    spill = [values[f"B{r}"].value for r in range(10, 14)]
    assert spill == pytest.approx(list(calc.train_hours([1e9, 7e9, 13e9, 70e9], 1e12, H100, utilization=0.4,
                                                        devices=8)))
    after = package.read_parts(done.out)
    for part in before:
        if part.startswith(("xl/media/", "xl/worksheets/sheet2", "xl/theme", "xl/styles")):
            assert after[part] == before[part], part  # the user's image, other sheet, styles: untouched
        if part.startswith("xl/drawings/drawing"):  # the same tree; only namespace declarations moved to the root
            assert _tree(after[part]) == _tree(before[part]), part
    chart = after["xl/charts/chart1.xml"].decode()
    assert f"{spill[0]!r}"[:8] in chart  # the chart's cache carries the recalculated values
    wb = openpyxl.load_workbook(done.out)
    assert wb.sheetnames == ["Plan", "Notes", "Devices"] and wb["Notes"]["A1"].value == "kept as it is"
    assert "Frozen by the e-mail export" in wb["Plan"]["C6"].comment.text
    assert verify.verify(done.out, recalc=False) == [
        verify.Problem("workbook", "not a TrainingBudget workbook: no Budget, Runs, Functions, About sheet")]


@pytest.mark.parametrize(("args", "needle"), [
    (["--out", "{src}"], "must end in .xlsx"),
    (["--out", "{xlsx_src}"], "the export never overwrites it"),
    (["--out", "{tmp}/missing/x.xlsx"], "does not exist"),
])
def test_bad_outputs_are_refused(built, tmp_path, args, needle):
    xlsx_src = Path(shutil.copyfile(built.path, tmp_path / "same.xlsx"))
    fill = {"src": built.path, "xlsx_src": xlsx_src, "tmp": tmp_path}
    src = xlsx_src if "{xlsx_src}" in args[1] else built.path
    proc = invoke("export", str(src), *[a.format(**fill) for a in args])
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_pdf_prints_only_the_chosen_sheets(exported, tmp_path):
    pdf = export.print_pdf(exported.out, tmp_path / "runs.pdf", ["Runs"])
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Llama 2 7B" in text and "Training budget" not in text  # Budget's print area does not leak in
    with pytest.raises(calc.TrainingBudgetError, match="no sheet named 'Nope'"):
        export.print_pdf(exported.out, tmp_path / "x.pdf", ["Nope"])


@pytest.mark.parametrize(("args", "needle"), [
    (["--pdf", "{tmp}/report.txt"], "--pdf must end in .pdf"),
    (["--pdf", "{tmp}/report.pdf", "--sheets", "Budget,Nope"], "no sheet named 'Nope'"),
    (["--pdf", "{tmp}/nowhere/report.pdf"], "does not exist"),
])
def test_bad_options_are_refused_before_anything_is_written(built, tmp_path, args, needle):
    proc = invoke("export", str(built.path), "--out", str(tmp_path / "copy.xlsx"),
                   *[a.format(tmp=tmp_path) for a in args])
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_failing_pdf_leaves_nothing_behind(soffice, built, tmp_path, monkeypatch):
    def broken(path, out, page_range=None):
        out.write_bytes(b"%PDF-1.7 half")  # a partial PDF, then the failure
        raise engine.EngineError("LibreOffice did not convert copy.xlsx")
    monkeypatch.setattr(engine, "pdf", broken)
    with pytest.raises(engine.EngineError):
        export.export(built.path, tmp_path / "copy.xlsx", tmp_path / "copy.pdf")
    assert list(tmp_path.iterdir()) == []


def test_libreoffice_timeout_is_one_line(built, tmp_path, tmp_path_factory, monkeypatch):
    fake = tmp_path_factory.mktemp("bin") / "soffice"  # a LibreOffice that hangs
    fake.write_text("#!/bin/sh\nsleep 120\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("TRAINBUDGET_LO_TIMEOUT", "2")
    proc = invoke("export", str(built.path), "--out", str(tmp_path / "copy.xlsx"))
    assert proc.returncode == 2 and "did not finish" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_iso_dates_in_the_footer_keep_literal_ampersands():
    assert export.iso_header_footer("&Lprinted &D, R&&D &&D&Rpage &P", "2026-12-01") == \
        "&Lprinted 2026-12-01, R&&D &&D&Rpage &P"


def test_a_call_the_add_in_refused_stays_refused_in_the_copy(soffice, tmp_path):
    """The add-in answered '#VALUE! pue must be >= 1 (got 0.4)' (arguments in the wrong order); the
    native form would show a number from the same arguments, so the copy keeps the refusal, with a
    note, and a good call beside it is still made native."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Plan"
    ws["A1"] = f'=TRAIN_ENERGY_KWH(7E9,1E12,"{H100}",0.4,8,8)'
    ws["B1"] = f'=TRAIN_ENERGY_KWH(7E9,1E12,"{H100}",1.2,0.4,8)'
    wb.save(tmp_path / "plain.xlsx")
    refusal = udfs.TRAIN_ENERGY_KWH(7e9, 1e12, H100, 0.4, 8, 8)
    assert refusal.startswith("#VALUE! pue must be >= 1")
    edit_cell(tmp_path / "plain.xlsx", "Plan", "A1", lambda s, cell: s.set_value(cell, refusal))
    edit_cell(tmp_path / "plain.xlsx", "Plan", "B1",
              lambda s, cell: s.set_value(cell, udfs.TRAIN_ENERGY_KWH(7e9, 1e12, H100, 1.2, 0.4, 8)))
    done = export.export(tmp_path / "plain.xlsx", tmp_path / "out.xlsx")
    assert done.frozen == ["Plan!A1"] and done.rewritten == 1
    out = openpyxl.load_workbook(done.out)["Plan"]
    assert out["A1"].value == refusal and "the add-in refused these arguments" in out["A1"].comment.text
    assert str(out["B1"].value).startswith("=") and "TRAIN_" not in str(out["B1"].value)
    values = openpyxl.load_workbook(done.out, data_only=True)["Plan"]
    assert values["B1"].value == pytest.approx(calc.train_energy_kwh(7e9, 1e12, H100, pue=1.2, utilization=0.4,
                                                                     devices=8))


def test_calls_without_native_form_are_computed_when_the_file_has_none(soffice, tmp_path):
    """LibreOffice saves #NAME? for TRAIN_BUDGET; the copy computes what it can
    with calc (with its INDEX) and says, in the note, why it could not compute the rest."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Plan"
    ws["A2"] = 7e9
    ws["B2"] = f'=INDEX(TRAIN_BUDGET(A2,1E12,"{H100}"),1,2)'
    ws["C2"] = f'=TRAIN_BUDGET(A2,1E12,"{H100}")'
    ws["D2"] = '=INDEX(TRAIN_BUDGET(A2,1E12,"no such device"),1,2)'
    ws["E2"] = f'=INDEX(TRAIN_BUDGET(A2*2,1E12,"{H100}"),1,2)'
    wb.save(tmp_path / "plain.xlsx")
    saved = engine.convert([tmp_path / "plain.xlsx"], "xlsx", tmp_path / "lo")[0]
    assert openpyxl.load_workbook(saved, data_only=True)["Plan"]["B2"].value == "#NAME?"
    done = export.export(saved, tmp_path / "out.xlsx")
    assert done.computed == 1 and len(done.frozen) == 4
    out = openpyxl.load_workbook(done.out)["Plan"]
    budget = registry.BY_NAME["TRAIN_BUDGET"].call({"params": 7e9, "tokens": 1e12, "device": H100})
    assert out["B2"].value == pytest.approx(budget[0][1])
    assert "computed by TrainingBudget's calculator" in out["B2"].comment.text
    for ref, why in (("C2", "wrap the call in INDEX"), ("D2", "unknown device 'no such device'"),
                     ("E2", "an argument is an expression")):
        assert out[ref].value == "#NAME?" and why in out[ref].comment.text, ref
        assert f"(exported {export.today()})" in out[ref].comment.text
