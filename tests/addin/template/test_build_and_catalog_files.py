"""`build` refusals and metadata, visible chart axes, `--catalog` from a workbook, and Devices
rows written with lxml into parts other tools wrote (x: prefixes, mc:Ignorable)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.addin.measure import devices_write
from trainbudget.addin.ooxml import package
from trainbudget.addin.template import build as template, devices_table

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
C = "http://schemas.openxmlformats.org/drawingml/2006/chart"


def test_build_refuses_to_replace_a_workbook_without_force(built, tmp_path):
    out = Path(shutil.copyfile(built.path, tmp_path / "TrainingBudget.xlsm"))
    devices_write.upsert_device(out, calc.Device("Measured box", 12.0, source="s"))
    before = out.read_bytes()
    proc = invoke("build", "--out", str(out))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--force" in proc.stderr
    assert out.read_bytes() == before
    proc = invoke("build", "--out", str(out), "--force")
    assert proc.returncode == 0, proc.stderr
    assert out.with_name("TrainingBudget.xlsm.bak").read_bytes() == before
    assert "Measured box" not in [r[0] for r in devices_table.read_rows(out)]


@pytest.mark.parametrize("name", ["book.xlsx", "book.zip", "book"])
def test_build_refuses_an_output_that_is_not_xlsm(tmp_path, name):
    proc = invoke("build", "--out", str(tmp_path / name))
    assert proc.returncode == 2 and ".xlsm" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_core_properties_are_the_projects(built):
    root = package.parse("core", package.read_parts(built.path)["docProps/core.xml"])
    ns = {"dc": "http://purl.org/dc/elements/1.1/", "dcterms": "http://purl.org/dc/terms/",
          "cp": "http://schemas.openxmlformats.org/package/2006/metadata/core-properties"}
    stamp = template.build_date().strftime("%Y-%m-%dT%H:%M:%SZ")
    assert root.findtext("dc:creator", namespaces=ns) == "TrainingBudget"
    assert root.findtext("cp:lastModifiedBy", namespaces=ns) == "TrainingBudget"
    assert root.findtext("dcterms:created", namespaces=ns) == stamp
    assert root.findtext("dcterms:modified", namespaces=ns) == stamp
    assert b"Felix" not in package.read_parts(built.path)["docProps/core.xml"]


def test_budget_chart_axes_are_not_deleted_and_hours_at_the_bottom(built):
    parts = package.read_parts(built.path)
    charts = [package.parse(n, d) for n, d in parts.items() if n.startswith("xl/charts/chart")]
    charts = [c for c in charts if c.find(f".//{{{C}}}barChart") is not None]  # the Budget's (Scenarios: scatter)
    assert charts
    for chart in charts:
        axes = chart.findall(f".//{{{C}}}catAx") + chart.findall(f".//{{{C}}}valAx")
        assert len(axes) == 2
        for ax in axes:
            assert ax.find(f"{{{C}}}delete").get("val") == "0"
        assert chart.find(f".//{{{C}}}valAx/{{{C}}}crosses").get("val") == "max"
        assert chart.find(f".//{{{C}}}valAx/{{{C}}}axPos").get("val") == "b"  # values along the bottom
        assert chart.find(f".//{{{C}}}catAx/{{{C}}}axPos").get("val") == "l"  # devices down the left


def test_catalog_accepts_a_workbook_with_a_measured_row(built, tmp_path):
    path = Path(shutil.copyfile(built.path, tmp_path / "team.xlsm"))
    devices_write.upsert_device(path, calc.Device("Lab box (measured)", 50.0, kind="measured", source="s"))
    proc = invoke("estimate", "--catalog", str(path), "--device", "Lab box (measured)", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Lab box (measured)" in proc.stdout


@pytest.mark.parametrize("content", [bytes(range(256)) * 4, b"\xff\xfe\x00n\x00a", b"", b"\x00\x01\x02"])
def test_catalog_refuses_binary_or_undecodable_files(tmp_path, content):
    bad = tmp_path / "devices.csv"
    bad.write_bytes(content)
    proc = invoke("devices", "--catalog", str(bad))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "devices.csv" in proc.stderr and "Traceback" not in proc.stderr


def test_catalog_refuses_a_workbook_without_devices(tmp_path):
    import openpyxl

    path = tmp_path / "plain.xlsx"
    openpyxl.Workbook().save(path)
    proc = invoke("devices", "--catalog", str(path))
    assert proc.returncode == 2 and "Devices" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def _prefixed(data: bytes) -> bytes:
    """The part rewritten the Open XML SDK's way: the main namespace under an `x:` prefix, plus an
    mc:Ignorable namespace that nothing else uses."""
    old = package.parse("p", data)
    nsmap = {("x" if k is None else k): v for k, v in old.nsmap.items()}
    nsmap |= {"mc": "http://schemas.openxmlformats.org/markup-compatibility/2006",
              "x14ac": "http://schemas.microsoft.com/office/spreadsheetml/2009/9/ac"}
    new = etree.Element(old.tag, nsmap=nsmap, attrib=dict(old.attrib))
    new.set("{http://schemas.openxmlformats.org/markup-compatibility/2006}Ignorable", "x14ac")
    for child in list(old):
        new.append(child)
    return package.serialize(new)


def test_rows_written_into_x_prefixed_parts_keep_prefixes_and_declarations(built, tmp_path):
    parts = package.read_parts(built.path)
    sheet = package.sheet_parts(parts)["Devices"]
    table = devices_table.find_table_part(parts, sheet)
    parts[sheet], parts[table] = _prefixed(parts[sheet]), _prefixed(parts[table])
    assert parts[sheet].count(b"<x:row ") > 1
    path = tmp_path / "sdk.xlsm"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    assert devices_write.upsert_device(path, calc.Device("SDK box", 3.0, source="s")) == "added"
    after = package.read_parts(path)
    for part in (sheet, table):
        root = package.parse(part, after[part])
        assert root.prefix == "x" and root.nsmap["x14ac"] and root.get(
            "{http://schemas.openxmlformats.org/markup-compatibility/2006}Ignorable") == "x14ac"
        assert b"<row" not in after[part] and b"xmlns=" not in after[part]
    assert {n for n in parts if parts[n] != after[n]} == {sheet, table}
    rows = devices_table.read_rows(path)
    assert rows[-1][0] == "SDK box" and len(rows) == len(calc.catalog()) + 2
    assert package.parse(table, after[table]).get("ref").endswith(str(len(rows)))
