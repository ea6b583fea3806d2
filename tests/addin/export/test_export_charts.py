"""The e-mail copy's charts: a huge chart range is clamped to the used range (the reference kept), and a
refreshed chart keeps its axes visible and its number format."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from lxml import etree

from tests import hostile
from tests.conftest import invoke
from trainbudget.addin.export import charts
from trainbudget.addin.ooxml import package, partedit

H100 = "H100 SXM, BF16 tensor core, dense"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A small workbook (written by openpyxl) calling the add-in, with a chart."""
    return hostile.chart_workbook(tmp_path_factory.mktemp("hostile") / "base.xlsx", H100)


def test_huge_chart_range_is_clamped(soffice, base, tmp_path):
    def huge(parts):
        chart = next(p for p in parts if p.startswith("xl/charts/chart"))

        def fn(root):
            for f in root.iter(f"{{{charts.C}}}f"):
                f.text = "'Plan'!$A$1:$XFD$1048576"
        partedit.change(parts, chart, fn)
    src = hostile.variant(base, tmp_path / "huge.xlsx", huge)
    proc = invoke("export", str(src), "--out", str(tmp_path / "out.xlsx"))
    assert proc.returncode == 0, proc.stderr
    parts = package.read_parts(tmp_path / "out.xlsx")
    chart = etree.fromstring(parts[next(p for p in parts if p.startswith("xl/charts/chart"))])
    (count,) = [int(e.get("val")) for e in chart.iter(f"{{{charts.C}}}ptCount")]
    assert count == 3 * 2  # the used range A1:B3, not 17 billion cells
    assert "'Plan'!$A$1:$XFD$1048576" in [f.text for f in chart.iter(f"{{{charts.C}}}f")]  # the reference kept


def test_chart_refresh_keeps_axes_visible():
    xml = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<c:chartSpace xmlns:c="' + charts.C.encode()
           + b'"><c:chart><c:plotArea><c:barChart><c:ser><c:val><c:numRef><c:f>Plan!$A$1:$A$2</c:f><c:numCache>'
           b'<c:formatCode>0.0</c:formatCode><c:ptCount val="1"/></c:numCache></c:numRef></c:val></c:ser>'
           b'</c:barChart><c:catAx><c:axId val="1"/><c:delete val="0"/></c:catAx><c:valAx><c:axId val="2"/>'
           b'<c:delete val="0"/></c:valAx></c:plotArea></c:chart></c:chartSpace>')
    wb = openpyxl.Workbook()
    wb.active.title = "Plan"
    wb.active["A1"], wb.active["A2"] = 1.5, 2.5
    root = etree.fromstring(charts.refresh(xml, wb))
    assert [d.get("val") for d in root.iter(f"{{{charts.C}}}delete")] == ["0", "0"]
    assert [v.text for v in root.iter(f"{{{charts.C}}}v")] == ["1.5", "2.5"]
    assert root.find(f".//{{{charts.C}}}formatCode").text == "0.0"
