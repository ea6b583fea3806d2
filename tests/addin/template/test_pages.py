"""Pages: every sheet prints legibly (orientation, one page wide, row heights for wrapped text),
the e-mail PDF's print area holds inputs, results, the comparison and its chart with the date and
the assumptions, and the chart covers Devices rows added later (LibreOffice redraws it)."""

from __future__ import annotations

import re
import zipfile

import openpyxl
import pytest

from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.functions import native
from trainbudget.addin.template import budget_sheet

LAB = calc.Device("Lab box (measured)", 123.4, memory_gib=96.0, watts=500.0, source="bench run 2026-11-28",
                  as_of="2026-11-28")


def _book(built):
    return openpyxl.load_workbook(built.path)


@pytest.mark.parametrize("sheet", ["Devices", "Runs", "Functions", "About"])
def test_landscape_one_page_wide(built, sheet):
    ws = _book(built)[sheet]
    assert ws.page_setup.orientation == "landscape"
    assert ws.sheet_properties.pageSetUpPr.fitToPage and ws.page_setup.fitToWidth == 1
    assert ws.page_setup.fitToHeight == 0  # as many pages tall as needed, never shrunk to one


@pytest.mark.parametrize("sheet", ["Devices", "Runs", "Functions", "About"])
def test_wrapped_text_has_room(built, sheet):
    ws = _book(built)[sheet]
    for row in ws.iter_rows():
        for c in row:
            if isinstance(c.value, str) and c.data_type == "s" and c.alignment.wrap_text:
                width = ws.column_dimensions[c.column_letter].width
                lines = -(-len(c.value) // int(width * 1.1))
                height = ws.row_dimensions[c.row].height or 15
                assert height >= 15 * lines * 0.9, (sheet, c.coordinate, lines, height)


def _printed_rows(ws) -> int:
    area = ws.print_area.split("!")[1].replace("$", "")
    first, last = area.split(":")
    assert first == "A1" and last.startswith("C")  # columns A-C: labels, figures, notes
    return int(re.sub(r"\D", "", last))


def test_budget_detail_prints_the_answer_on_two_portrait_pages(built):
    """The Budget's printed detail (after the Summary): inputs, results, price, the prior's utilization,
    ranges and deadline, portrait on at most two pages, the date the PDF is made in the footer."""
    ws = _book(built)["Budget"]
    last = _printed_rows(ws)
    assert ws.page_setup.orientation == "portrait" and ws.sheet_properties.pageSetUpPr.fitToPage
    assert ws.page_setup.fitToWidth == 1 and ws.page_setup.fitToHeight == budget_sheet.DETAIL_PAGES == 2
    labels = {c.value: c.row for c in ws["A"] if isinstance(c.value, str)}
    for printed in ("Inputs", "Results", "Price and currency", "Deadline and budget", "Tokens for the budget, high"):
        assert labels[printed] <= last, printed
    assert "&D" in ws.oddFooter.left.text  # the date the PDF is made
    assert ws["A3"].value.startswith("Assumptions:") and len(ws["A3"].value) < 260 and "A3:C3" in ws.merged_cells


def test_checks_comparison_chart_and_prior_tables_are_not_printed(built):
    """Input checks (rule labels), the every-device comparison and its chart, the architecture and the
    prior's coefficient tables stay on the sheet, outside the print area."""
    wb = _book(built)
    ws = wb["Budget"]
    last = _printed_rows(ws)
    for unprinted in ("Input checks", "Architecture (optional)", "How the prior is made"):
        assert next(c.row for c in ws["A"] if str(c.value).startswith(unprinted)) > last, unprinted
    assert ws._charts[0].anchor._from.row + 1 > last
    assert next(c.column_letter for c in ws[4] if c.value == budget_sheet.COMPARE_HEADING) > "C"
    for name in ("Prior_intercept", "Prior_span_params_low", native_prefixes(), "Input_error"):
        ref = wb.defined_names[name].attr_text.split("!")[1].replace("$", "")
        assert int(re.sub(r"\D", "", ref.split(":")[0])) > last, (name, ref)


def test_units_spelled_once(built):
    wb = _book(built)
    assert wb["Devices"]["D1"].value == "TFLOP/s" and native.HEADERS["tflops"] == "TFLOP/s"
    tbps = [c.number_format for c in wb["Devices"]["G"][1:]]
    assert all("TB/s" in f for f in tbps)
    functions = wb["Functions"]
    for r in range(2, functions.max_row + 1):
        unit = functions[f"F{r}"].value
        for col in "DE":
            assert not unit or unit not in functions[f"{col}{r}"].number_format, (r, unit)  # no "kWh kWh"


def test_chart_covers_spare_rows(built):
    with zipfile.ZipFile(built.path) as z:
        xml = z.read(next(n for n in z.namelist() if n.startswith("xl/charts/chart"))).decode()
    top = budget_sheet.FIRST_INPUT + 1
    last = top + len(calc.catalog()) + budget_sheet.COMPARE_SPARE - 1
    assert f"$E${top}:$E${last}" in xml and f"$G${top}:$G${last}" in xml


def test_added_device_row_reaches_the_chart(soffice, built, tmp_path):
    wb = openpyxl.load_workbook(built.path, keep_vba=True)
    devices = wb["Devices"]
    row = devices.max_row + 1
    for col, field in enumerate(native.HEADERS, start=1):
        devices.cell(row, col, getattr(LAB, field))
    devices.tables["Devices"].ref = f"A1:L{row}"
    path = tmp_path / "added.xlsm"
    wb.save(path)
    (out,) = engine.convert([path], "xlsx", tmp_path / "out")
    with zipfile.ZipFile(out) as z:
        xml = z.read(next(n for n in z.namelist() if n.startswith("xl/charts/chart"))).decode()
    assert LAB.name in xml


def test_chart_starts_a_page_and_small_rates_keep_three_digits(built):
    ws = _book(built)["Budget"]
    anchor = ws._charts[0].anchor._from.row  # 0-based: the break is after the row above the chart
    arch = next(c.row for c in ws["A"] if str(c.value).startswith("Architecture (optional)"))
    step = next(c.row for c in ws["A"] if str(c.value).startswith("Step time:"))
    appendix = next(c.row for c in ws["A"] if str(c.value).startswith("How the prior is made"))
    # model blocks', the step block's and the prior's pages
    assert [b.id for b in ws.row_breaks.brk] == [anchor, arch - 1, step - 1, appendix - 1]
    fmt = ws["F6"].number_format
    assert "[<1]0.000" in fmt and "[<10]0.00" in fmt  # 0.206 TFLOP/s is not shown as 0.2


def test_dates_shown_are_iso(built):
    """Every date the workbook shows is ISO 8601 (2026-12-01), never 12/01/2026."""
    import datetime as dt
    wb = _book(built)
    seen = 0
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                fmt = c.number_format or ""
                if isinstance(c.value, (dt.date, dt.datetime)) or re.search(r"yy|dd|mmm", fmt):
                    assert fmt.endswith("yyyy-mm-dd"), (ws.title, c.coordinate, fmt)
                    seen += 1
    assert seen >= 40  # the Prices table's as-of column, the Budget's date and price dates, Scenarios'


def test_budget_chart_names_every_device(built):
    """Every bar of the Budget's device chart carries its name: no label skipped (tickLblSkip 1),
    and a label (7 pt, its box 1.15 times that) fits each bar's share of the chart's height, so neither
    Excel nor LibreOffice drops overlapping labels (LibreOffice rendered it: every name shown)."""
    chart = _book(built)["Budget"]._charts[0]
    with zipfile.ZipFile(built.path) as z:
        xml = z.read(next(n for n in z.namelist() if n.startswith("xl/charts/chart"))).decode()
    from lxml import etree
    ns = {"c": "http://schemas.openxmlformats.org/drawingml/2006/chart",
          "a": "http://schemas.openxmlformats.org/drawingml/2006/main"}
    cat_ax = etree.fromstring(xml.encode()).find(".//c:catAx", ns)
    assert cat_ax.find("c:tickLblSkip", ns).get("val") == "1"
    size_pt = int(cat_ax.find("c:txPr//a:defRPr", ns).get("sz")) / 100
    bars = len(calc.catalog()) + budget_sheet.COMPARE_SPARE
    plot_cm = chart.anchor.ext.height / 360000 * 0.8  # EMU to cm; the plot, less the title and hours axis
    assert size_pt * 1.15 * 2.54 / 72 <= plot_cm / bars, (size_pt, plot_cm / bars)  # a label box: 1.15 x its size


def native_prefixes() -> str:
    from trainbudget.addin.functions import prior_native
    return prior_native.PREFIXES
