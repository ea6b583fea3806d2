"""The template as built: structure, VBA, cached values, look; and no drift from the committed file."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
import xlwings

from tests.conftest import ROOT
from trainbudget import calc
from trainbudget.addin.ooxml import package
from trainbudget.addin.template import budget_sheet, build as template, sheets
from trainbudget.addin.vba import vba, vbaproject
from trainbudget.addin.verify import check as verify

COMMITTED = ROOT / "workbook" / "TrainingBudget.xlsm"


def _content(path: Path) -> dict:
    """What a workbook says, not its bytes: cells, formulas, styles' formats, names, tables, validation."""
    wb = openpyxl.load_workbook(path)
    out = {"sheets": wb.sheetnames, "names": {n: d.attr_text for n, d in wb.defined_names.items()}}
    for ws in wb.worksheets:
        out[ws.title] = {
            "cells": {c.coordinate: (c.value, c.number_format, c.font.name, c.protection.locked)
                      for row in ws.iter_rows() for c in row if c.value is not None},
            "tables": {t.name: t.ref for t in ws.tables.values()},
            "validation": sorted((str(d.sqref), d.formula1) for d in ws.data_validations.dataValidation),
            "state": ws.sheet_state, "protected": ws.protection.sheet, "print_area": ws.print_area,
        }
    return out


def test_committed_workbook_matches_build(built):
    assert COMMITTED.exists(), "run `trainbudget build` and commit workbook/TrainingBudget.xlsm"
    assert _content(COMMITTED) == _content(built.path)
    cached = openpyxl.load_workbook(COMMITTED, data_only=True)
    fresh = openpyxl.load_workbook(built.path, data_only=True)
    for ws in fresh.worksheets:
        for row in ws.iter_rows():
            for c in row:
                assert cached[ws.title][c.coordinate].value == c.value, f"{ws.title}!{c.coordinate}"


def test_vba_project_is_xlwings_quickstart_without_module1(built):
    with zipfile.ZipFile(Path(xlwings.__file__).parent / "quickstart.xlsm") as z:
        original = z.read("xl/vbaProject.bin")
    with zipfile.ZipFile(built.path) as z:
        shipped = z.read("xl/vbaProject.bin")
        assert "application/vnd.ms-excel.sheet.macroEnabled.main+xml" in z.read("[Content_Types].xml").decode()
    assert shipped == vbaproject.shipped()  # tests/addin/vba/test_vbaproject.py checks how it differs from the original
    assert set(vba.modules(original)) == {"ThisWorkbook", "Sheet1", "Sheet2", "Module1"}
    assert set(vba.modules(shipped)) == {"ThisWorkbook", "Sheet1", "Sheet2"}


def test_sheets_conf_and_names(built):
    wb = openpyxl.load_workbook(built.path)
    assert wb.sheetnames == list(template.SHEETS)
    conf = wb["xlwings.conf"]
    assert conf.sheet_state == "hidden"
    assert ("UDF Modules", sheets.UDF_MODULE) in list(conf.iter_rows(values_only=True, max_col=2))
    assert wb["Budget"].sheet_properties.codeName == "Sheet1"
    assert wb.defined_names["DeviceNames"].attr_text == "Devices[Name]"
    devices = wb["Devices"].tables["Devices"]
    assert devices.ref == f"A1:L{len(calc.catalog()) + 1}"


def test_every_formula_carries_a_cached_value(built):
    assert all(not refs for refs in package.uncached_formulas(built.path).values())
    assert sum(len(v) for v in built.values.values()) > 250


def test_no_newer_functions_or_row_shorthand(built):
    wb = openpyxl.load_workbook(built.path)
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if verify.is_formula(c):
                    assert not re.search(r"XLOOKUP|\bLET\(|\[@|\[#This Row\]", c.value), c.coordinate


def test_reads_like_a_finance_document(built):
    wb = openpyxl.load_workbook(built.path)
    budget = wb["Budget"]
    labels = {budget[f"A{r}"].value: r for r in range(1, 60)}
    assert budget.protection.sheet and budget.print_area.startswith("'Budget'!$A$1:$C$")  # the printed detail
    assert budget.sheet_properties.pageSetUpPr.fitToPage
    for row in budget.iter_rows(min_row=5, max_row=16, min_col=2, max_col=2):
        assert row[0].protection.locked is False and row[0].fill.fgColor.rgb.endswith("FFF2CC")
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.value is not None and ws.title != "xlwings.conf":
                    assert c.font.name == "Calibri", f"{ws.title}!{c.coordinate}"
    formats = {label: budget[f"B{r}"].number_format for label, r in labels.items()}
    # money in the Budget's currency (Currency, USD_rate): the label names it, the format has no "$"
    assert formats[f'="{budget_sheet.TYPED_COST} ("&Currency&")"'] == "#,##0" and "GB" in formats["Total per device"]
    assert "days" in formats["Days"] and "h" in formats["Wall-clock hours"]


def test_chart_carries_cached_data(built):
    with zipfile.ZipFile(built.path) as z:
        charts = [n for n in z.namelist() if n.startswith("xl/charts/chart")]
        xml = z.read(charts[0]).decode()
    n = len(calc.catalog())  # the ranges also hold the comparison's spare rows, left blank
    total = n + budget_sheet.COMPARE_SPARE
    assert xml.count(f'ptCount val="{total}"') == 2 and len(re.findall(r"<(c:)?pt idx=", xml)) == 2 * n
    assert calc.catalog().devices[0].name in xml


def test_xlwings_conf_holds_only_needed_rows(built):
    conf = openpyxl.load_workbook(built.path)["xlwings.conf"]
    rows = [r for r in conf.iter_rows(values_only=True, max_col=2) if any(v is not None for v in r)]
    assert rows == [("UDF Modules", sheets.UDF_MODULE)]


def test_about_gives_the_windows_steps(built):
    about = " ".join(str(c.value) for c in openpyxl.load_workbook(built.path)["About"]["A"] if c.value)
    for step in ("xlwings addin install", "Trust access to the VBA project object model", "Import Functions",
                 "Ctrl+Alt+F9", "pip install"):
        assert step in about, step


def test_about_states_the_runs_range_and_both_flavours(built):
    """The About sheet's utilization line is the Runs sheet's own range (it said 30-55% while the
    runs imply 5%-51%), and its flavour paragraph holds for the e-mail copy too (no macros)."""
    from trainbudget.addin.template import sheets
    about = " ".join(str(c.value) for c in openpyxl.load_workbook(built.path)["About"]["A"] if c.value)
    lo, hi = sheets.implied_range()
    assert f"the published runs imply {lo:.0%}-{hi:.0%} of them" in about and "30-55%" not in about
    assert "TrainingBudget.xlsm is the add-in flavour" in about and "e-mail copy" in about


def test_devices_needed_row_states_its_reserve_and_caches_calc(built):
    """The Budget's devices-needed row says it counts usable memory (capacity less
    the reserve of calc/capacity.py) and caches calc.devices_needed, which counts the same."""
    ws = openpyxl.load_workbook(built.path, data_only=True)["Budget"]
    row = next(c.row for c in ws["A"] if c.value == "Devices needed to fit")
    assert ws[f"C{row}"].value == "counted against usable memory: capacity less max(3 GiB, 5%)"
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    want = calc.devices_needed(v["params"], v["device"], zero_stage=v["zero_stage"], method=v["method"],
                               optimizer=v["optimizer"], trainable=v["trainable"])
    assert ws[f"B{row}"].value == want
    usable = next(c.row for c in ws["A"] if str(c.value).startswith("Usable memory (GiB)"))
    assert ws[f"B{usable}"].value == calc.usable_bytes(v["device"]) / 2**30


def test_build_with_no_out_writes_here_not_into_the_package(tmp_path, monkeypatch):
    """From Python: build() with no `out` writes ./TrainingBudget.xlsm in the current
    folder, as the CLI does, refuses to replace it without force, and leaves the shipped copy be."""
    from trainbudget.addin import TEMPLATE_PATH

    shipped = TEMPLATE_PATH.stat().st_mtime_ns
    monkeypatch.chdir(tmp_path)
    built = template.build()
    assert built.path.resolve() == (tmp_path / "TrainingBudget.xlsm").resolve() and built.path.is_file()
    before = built.path.read_bytes()
    with pytest.raises(calc.TrainingBudgetError, match=r"exists.*--force"):
        template.build()
    assert built.path.read_bytes() == before
    assert template.build(force=True).path.resolve() == built.path.resolve()
    assert (tmp_path / "TrainingBudget.xlsm.bak").is_file()
    assert TEMPLATE_PATH.stat().st_mtime_ns == shipped
