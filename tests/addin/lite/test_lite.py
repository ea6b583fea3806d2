"""The xlwings Lite edition: the workbook `trainbudget lite` writes, and its main.py run in a fresh
interpreter with numpy and a recording stub `xlwings` (tests/lite_stub) and nothing else.

xlwings' own Office.js metadata generator (xlwings.pro.udfs_officejs) refuses to import without
a licence key (LicenseError: "Couldn't find an xlwings license key"), so the stub, which follows
that file's rules for names, descriptions, argument docs and optional flags, stands in for it here.
tests/addin/lite/test_lite_runtime.py runs the same main.py in the real runtime (Pyodide and real xlwings).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import openpyxl
import pytest
from lxml import etree

from tests.conftest import ROOT
from trainbudget import calc
from trainbudget.addin.cli.main import cli, run
from trainbudget.addin.functions import native
from trainbudget.addin.functions.registry import FUNCTIONS
from trainbudget.addin.lite import bundle, runtime, spec as lite_spec, webext, workbook
from trainbudget.addin.ooxml import macrofree, package, partedit, xmlcells
from trainbudget.addin.template import devices_table
from trainbudget.addin.udf import cells

STUB = ROOT / "tests" / "lite_stub"
H100 = "H100 SXM, BF16 tensor core, dense"
MEASURED = "Lab box (measured)"
NS = {"we": webext.WE_NS, "wetp": webext.TP_NS, "r": webext.R_NS,
      "ct": partedit.CT_NS, "pr": partedit.PR_NS}


@pytest.fixture(scope="module")
def lite_file(tmp_path_factory) -> Path:
    return workbook.write(tmp_path_factory.mktemp("lite") / "TrainingBudget-Lite.xlsx").path


@pytest.fixture(scope="module")
def parts(lite_file) -> dict[str, bytes]:
    with zipfile.ZipFile(lite_file) as z:
        return {n: z.read(n) for n in z.namelist()}


@pytest.fixture(scope="module")
def files(parts) -> dict[str, str]:
    return webext.read_files(parts)


def _lite_args(spec, given: dict) -> list:
    """Office.js-shaped arguments: every given value a 1x1 matrix, the rest None."""
    names = [a["name"] for a in lite_spec.function(spec)["args"]]
    return [given.get(n) for n in names]


def _template_rows() -> list[list]:
    """The template's Devices cells (header first) as Office.js hands a range over: plain
    numbers and texts, "" for an empty cell; plus one measured row."""
    rows = [[h for h in native.HEADERS.values()]]
    for d in calc.catalog():
        rows.append([("" if v is None or (isinstance(v, float) and math.isnan(v)) else v)
                     for v in (getattr(d, f) for f in native.HEADERS)])
    measured = dict.fromkeys(native.HEADERS, "")
    measured.update(name=MEASURED, tflops=123.4, kind="measured", memory_gib=24, watts=300,
                    source="trainbudget measure, this machine", as_of="2026-11-30")
    rows.append([measured[f] for f in native.HEADERS])
    return rows


def _cases() -> list[dict]:
    cases = [{"name": s.name, "args": _lite_args(s, {k: [[v]] for k, v in s.example_values.items()})}
             for s in FUNCTIONS]
    hours = next(s for s in FUNCTIONS if s.name == "TRAIN_HOURS")
    budget = next(s for s in FUNCTIONS if s.name == "TRAIN_BUDGET")
    table = _template_rows()
    cases += [
        {"name": "TRAIN_HOURS", "args": _lite_args(hours, {"params": [[7e9], [70e9]], "tokens": [[1e12]],
                                                          "device": [[H100]], "utilization": [[0.4]]})},
        {"name": "TRAIN_HOURS", "args": _lite_args(hours, {"params": [[7e9, 70e9]], "tokens": [[1e12]],
                                                          "device": [[H100]]})},
        {"name": "TRAIN_HOURS", "args": _lite_args(hours, {"params": [[7e9]], "tokens": [[1e9]],
                                                          "device": [["NoSuchGPU"]]})},
        {"name": "TRAIN_HOURS", "args": _lite_args(hours, {"params": [[""]], "tokens": [[1e9]],
                                                          "device": [[H100]]})},
        {"name": "TRAIN_HOURS", "args": _lite_args(hours, {"params": [[7e9]], "tokens": [[1e9]],
                                                          "device": [[MEASURED]], "devices_table": table})},
        {"name": "TRAIN_HOURS", "args": _lite_args(hours, {"params": [[7e9]], "tokens": [[1e9]],
                                                          "device": [[H100]], "devices_table": table})},
        {"name": "TRAIN_HOURS", "args": _lite_args(hours, {"params": [[7e9]], "tokens": [[1e9]],
                                                          "device": [[H100]],
                                                          "devices_table": [["Name", "Watts"], ["x", 1]]})},
        {"name": "TRAIN_BUDGET", "args": _lite_args(budget, {"params": [[7e9], [13e9]], "tokens": [[1e12]],
                                                            "device": [[H100]]})},
    ]
    return cases


@pytest.fixture(scope="module")
def ran(files, tmp_path_factory) -> dict:
    """main.py run as Lite runs it, in `python -I -S` with only the stub and numpy on sys.path."""
    work = tmp_path_factory.mktemp("lite-run")
    (work / "main.py").write_text(files["main.py"], "utf-8")
    (work / "cases.json").write_text(json.dumps(_cases()), "utf-8")
    site = work / "site"
    site.mkdir()
    numpy_dir = Path(np.__file__).resolve().parent
    for name in ("numpy", "numpy.libs"):  # the wheel's bundled libraries sit beside it
        if (numpy_dir.parent / name).exists():
            (site / name).symlink_to(numpy_dir.parent / name)
    proc = subprocess.run([sys.executable, "-I", "-S", str(STUB / "run_main.py"), str(work)],
                          capture_output=True, text=True, cwd=work, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads((work / "results.json").read_text("utf-8"))


# The fresh interpreter ------------------------------------------------------------------------


def test_main_py_needs_only_numpy_and_xlwings(ran):
    assert not ran["trainbudget_importable_before"] and not ran["trainbudget_importable_after"]
    assert ran["xlwings_is_stub"]
    assert ran["calc_origin"].startswith("main.py:trainbudget_lite/calc/")
    loaded = {m.split(".")[0] for m in ran["modules"]}
    assert {"numpy", "xlwings", "trainbudget_lite"} <= loaded
    assert not loaded & {"trainbudget", "openpyxl", "lxml", "click", "rich"}


@pytest.mark.parametrize("i", range(len(FUNCTIONS)), ids=[s.name for s in FUNCTIONS])
def test_every_function_equals_calc_on_its_example(ran, i):
    spec = FUNCTIONS[i]
    got = ran["results"][i]
    assert "error" not in got, got
    want = cells.value_out(spec.call(spec.example_values))
    assert got["value"] == (want if not isinstance(want, list) else [list(r) for r in want])


def _case(ran, k: int) -> dict:
    return ran["results"][len(FUNCTIONS) + k]


def test_ranges_spill_in_their_own_orientation(ran):
    column, row = _case(ran, 0)["value"], _case(ran, 1)["value"]
    assert np.array(column).shape == (2, 1) and np.array(row).shape == (1, 2)
    want = calc.train_hours(np.array([[7e9], [70e9]]), 1e12, H100, utilization=0.4)
    assert column == want.tolist()
    assert row == [calc.train_hours(np.array([7e9, 70e9]), 1e12, H100).tolist()]


def test_errors_are_raised_with_the_message(ran):
    unknown, empty = _case(ran, 2), _case(ran, 3)
    assert unknown["type"] == empty["type"] == "LiteError"
    assert "NoSuchGPU" in unknown["error"] and "closest" in unknown["error"]
    assert empty["error"] == "params is empty"
    bad_table = _case(ran, 6)
    assert bad_table["error"] == "devices_table has no 'TFLOP/s' column in its first row (found: Name, Watts)"
    scenario = _case(ran, 7)
    assert "one scenario" in scenario["error"] and "params" in scenario["error"]
    assert all(len(r.get("error", "")) <= runtime.MESSAGE_CHARS for r in ran["results"])


def test_a_devices_range_makes_measured_rows_count(ran):
    table = calc.DeviceTable.from_records([{"name": MEASURED, "tflops": 123.4, "source": "here"}])
    assert _case(ran, 4)["value"] == calc.train_hours(7e9, 1e9, MEASURED, table=table)
    assert _case(ran, 5)["value"] == calc.train_hours(7e9, 1e9, H100)  # catalog rows still resolve


def test_declared_as_the_desktop_udfs_without_caller(ran):
    meta = {f["name"]: f for f in ran["meta"]["functions"]}
    assert set(meta) == {s.name for s in FUNCTIONS}
    for s in FUNCTIONS:
        f = meta[s.name]
        assert f["decorated_by_func"] and f["description"] == s.description
        params = {p["name"]: p for p in f["parameters"]}
        assert "caller" not in params
        names = [a.name for a in s.args] + ([lite_spec.TABLE_ARG] if lite_spec.uses_devices(s) else [])
        assert [p["name"] for p in f["parameters"]] == names
        for a in s.args:
            assert params[a.name]["description"] == a.doc(s.default(a)) and len(a.doc(s.default(a))) <= 255
            assert params[a.name].get("optional", False) == (a not in s.required)
            assert f["arg_options"][a.name] == {"convert": "raw"}
        if lite_spec.TABLE_ARG in params:
            assert params[lite_spec.TABLE_ARG]["optional"] and "Devices" in params[lite_spec.TABLE_ARG]["description"]


# main.py is generated from the package --------------------------------------------------------


def test_main_py_bundles_the_package_sources_and_data(files):
    calc_dir = Path(calc.__file__).parent
    bundled = bundle.sources()
    assert files["main.py"] == bundle.main_py()
    for path in [*calc_dir.glob("*.py"), *calc_dir.glob("data/*.csv")]:
        key = f"{bundle.ROOT}/calc/{path.relative_to(calc_dir).as_posix()}"
        assert bundled[key] == path.read_text("utf-8"), key
        assert repr(bundled[key]) in files["main.py"]
    assert bundled[f"{bundle.ROOT}/addin/lite/runtime.py"] == Path(runtime.__file__).read_text("utf-8")
    assert len(files["main.py"].encode("utf-8")) < 2_000_000  # Office settings hold 2 MB (office-js#621)


def test_spec_resolves_each_calc_function_and_reads_headers_as_the_desktop():
    for s in FUNCTIONS:
        assert runtime.calc_function(lite_spec.calc_target(s)) is s.calc
    rows = _template_rows()
    headers = lite_spec.headers()
    assert [headers.get(runtime._key(h)) for h in rows[0]] == devices_table.header_fields(rows[0])
    mine = runtime.table_from_rows(rows, headers, lite_spec.build()["required"])
    desktop = devices_table.table_from_rows(rows)
    assert mine.devices == desktop.devices


def test_runtime_reads_cells_as_lite_hands_them():
    assert runtime.number_in("params", 7e9, True) == 7e9
    assert runtime.number_in("utilization", "", False) is None
    with pytest.raises(runtime.LiteError, match=r"params\[1, 0\] is empty"):
        runtime.number_in("params", [[7e9], [""]], True)
    assert runtime.number_in("params", [7e9, 13e9], True).shape == (1, 2)  # one row, as xlwings passes it
    assert runtime.flag_in("sequence_parallel", 1) is True
    with pytest.raises(runtime.LiteError, match="TRUE or FALSE"):
        runtime.flag_in("sequence_parallel", 2)
    assert runtime.value_out(np.array([1.0, math.inf, math.nan]), "no fit") == [[1.0], ["no fit"], ["#NUM!"]]


# The workbook ---------------------------------------------------------------------------------


def test_lite_parts_reread_with_lxml(parts, files):
    we = etree.fromstring(parts[webext.WEBEXT])
    assert we.find("we:reference", NS).get("id").upper() == webext.STORE_ID == "WA200008175"
    assert we.find("we:alternateReferences/we:reference", NS).get("store") == webext.STORE_ID
    assert we.find("we:extLst", NS) is not None and we.find(".//we:containsCustomFunctions", NS) is not None
    values = {p.get("name"): p.get("value") for p in we.iterfind("we:properties/we:property", NS)}
    assert set(values) == {"main.py", "requirements.txt"}
    assert all(v.startswith('"') and "\n" not in v for v in values.values())  # JSON strings, one line
    assert json.loads(values["requirements.txt"]) == files["requirements.txt"]
    tp = etree.fromstring(parts[webext.TASKPANES])
    ref = tp.find("wetp:taskpane/wetp:webextensionref", NS)
    rels = etree.fromstring(parts["xl/webextensions/_rels/taskpanes.xml.rels"])
    rel = rels.find(f"pr:Relationship[@Id='{ref.get(f'{{{webext.R_NS}}}id')}']", NS)
    assert rel.get("Type") == f"{webext.MS_REL}/webextension" and rel.get("Target") == "webextension1.xml"
    root = etree.fromstring(parts["_rels/.rels"])
    panes = [r for r in root.iterfind("pr:Relationship", NS) if r.get("Type").endswith("/webextensiontaskpanes")]
    assert [r.get("Target") for r in panes] == [webext.TASKPANES]
    assert len({r.get("Id") for r in root.iterfind("pr:Relationship", NS)}) == len(root)
    overrides = {e.get("PartName"): e.get("ContentType")
                 for e in etree.fromstring(parts[partedit.CT]).iterfind("ct:Override", NS)}
    assert overrides[f"/{webext.WEBEXT}"] == webext.WEBEXT_CT
    assert overrides[f"/{webext.TASKPANES}"] == webext.TASKPANES_CT
    assert overrides["/xl/workbook.xml"] == partedit.PLAIN_MAIN


def test_requirements_mark_lites_own_and_leave_numpy_unpinned(files):
    lines = files["requirements.txt"].splitlines()
    required = [line.split("#")[0].strip() for line in lines if line.endswith("# required")]
    assert required[0].startswith("xlwings") and "pyodide-http" in required
    assert not any("==" in line for line in lines)  # Lite pins in requirements-pinned.txt (dependencies.md)
    assert "<1" in required[0]  # an upper bound, as Lite's docs suggest
    assert "numpy" in lines and not any(line.startswith("numpy") and "=" in line for line in lines)
    assert not any("trainbudget" in line for line in lines)  # the calculator is in main.py


def test_openpyxl_opens_it_macro_free_with_cached_values(lite_file, parts):
    wb = openpyxl.load_workbook(lite_file)
    assert "xlwings.conf" not in wb.sheetnames and {"Budget", "Devices", "Functions"} <= set(wb.sheetnames)
    assert wb["Functions"]["D1"].value == workbook.RESULT_HEADER
    assert "Lite" in wb["Functions"][f"A{len(FUNCTIONS) + 3}"].value
    assert not any(n.lower().endswith(".bin") or "vba" in n.lower() for n in parts)
    assert macrofree.carriers(parts) == set()
    assert not any(package.uncached_formulas(lite_file).values())
    values = openpyxl.load_workbook(lite_file, data_only=True)["Functions"]
    hours = FUNCTIONS.index(next(s for s in FUNCTIONS if s.name == "TRAIN_HOURS")) + 2
    assert values[f"D{hours}"].value == pytest.approx(calc.train_hours(7e9, 1e9, H100), rel=1e-12)
    about = [c.value for c in openpyxl.load_workbook(lite_file)["About"]["A"] if isinstance(c.value, str)]
    assert workbook.ABOUT_LITE in about and not any(t.startswith(workbook.ABOUT_DESKTOP_PREFIX) for t in about)


def test_only_the_functions_sheet_calls_lite(parts):
    assert workbook.calls_outside_functions(parts) == []


def test_command_line_writes_refuses_and_replaces(tmp_path, capsys):
    out = tmp_path / "lite.xlsx"
    assert run(cli, ["lite", "--out", str(out)]) == 0 and out.is_file()
    first = out.read_bytes()
    assert run(cli, ["lite", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_bytes() == first
    assert run(cli, ["lite", "--out", str(tmp_path / "lite.xlsm")]) == 2
    assert "xlsx" in capsys.readouterr().err and not (tmp_path / "lite.xlsm").exists()
    assert run(cli, ["lite", "--out", str(out), "--force"]) == 0
    assert (tmp_path / "lite.xlsx.bak").read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lite.xlsx", "lite.xlsx.bak"]  # no temporary left


def test_a_call_outside_the_functions_sheet_is_found(parts):
    changed = dict(parts)
    budget = package.sheet_parts(changed)["Budget"]

    def fn(root):
        s = xmlcells.Sheet(root)
        etree.SubElement(s.cell("Z99"), s.q("f")).text = f'TRAIN_HOURS(7E9,1E9,"{H100}")'
    partedit.change(changed, budget, fn)
    assert workbook.calls_outside_functions(changed) == ["Budget!Z99"]
    with pytest.raises(calc.TrainingBudgetError, match="already carries a web add-in"):
        webext.add_parts(parts, "", "")


# trainbudget lite: --from, the symlink, the requirements and the docs -------------------------

SHIPPED = ROOT / "workbook" / "TrainingBudget.xlsm"


def test_from_carries_a_workbooks_devices_rows(tmp_path, capsys):
    from trainbudget.addin.measure.devices_write import upsert_device

    source = tmp_path / "team.xlsm"
    source.write_bytes(SHIPPED.read_bytes())
    upsert_device(source, calc.Device(name=MEASURED, tflops=123.4, watts=300, source="measured here"))
    out = tmp_path / "lite.xlsx"
    assert run(cli, ["lite", "--from", str(source), "--out", str(out)]) == 0
    want = devices_table.table_from_workbook(source)
    assert f"{len(want)} Devices rows from" in capsys.readouterr().out
    got = devices_table.table_from_workbook(out)
    assert got.devices == want.devices and MEASURED in got and MEASURED not in calc.catalog()


@pytest.mark.parametrize("content", [b"name,tflops,source\nx,1,y\n", b"PK\x03\x04 not a zip"])
def test_from_refuses_what_is_not_a_workbook(tmp_path, capsys, content):
    source = tmp_path / "devices.xlsx"
    source.write_bytes(content)
    assert run(cli, ["lite", "--from", str(source), "--out", str(tmp_path / "lite.xlsx")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--from" in err and "Traceback" not in err
    assert not (tmp_path / "lite.xlsx").exists()


def test_force_replaces_a_planted_symlink_never_its_target(tmp_path):
    victim = tmp_path / "victim.xlsx"
    victim.write_bytes(b"not yours to overwrite")
    link = tmp_path / "link.xlsx"
    link.symlink_to(victim)
    assert run(cli, ["lite", "--out", str(link), "--force"]) == 0
    assert victim.read_bytes() == b"not yours to overwrite"
    assert not link.is_symlink() and zipfile.is_zipfile(link)
    assert not (tmp_path / "victim.xlsx.bak").exists()


def test_function_reference_documents_devices_table_with_its_empty_slots():
    from trainbudget.addin.functions import docs

    text = docs.function_reference()
    for s in FUNCTIONS:
        section = text.split(f"#### `{s.name}(")[1].split("#### ")[0]
        assert ("| `devices_table` | range |" in section) == lite_spec.uses_devices(s)
        if lite_spec.uses_devices(s):
            slots = len(s.args) - len(s.example)
            assert f"{','.join(s.example)}{',' * (slots + 1)}Devices[#All])" in section


def test_from_a_workbook_without_a_device_the_template_uses(tmp_path, capsys):
    source = tmp_path / "renamed.xlsm"
    with zipfile.ZipFile(SHIPPED) as z, zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED) as o:
        for info in z.infolist():  # the H100 row renamed: the Budget's device is gone from the table
            o.writestr(info, z.read(info.filename).replace(H100.encode(), b"H100 renamed"))
    assert run(cli, ["lite", "--from", str(source), "--out", str(tmp_path / "lite.xlsx")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"trainbudget: error: --from {source}: unknown device {H100!r}") and "add its row" in err
