"""The Lite edition's main.py in its real runtime: Pyodide 0.27.7 (Python 3.12) under Node, numpy
2.0.2's official Pyodide build, and the real xlwings 0.37.8 Office.js decorators and call path,
installed under .cache/lite-runtime/ by tests/lite_runtime/install.sh (tests/run-all.sh runs it).

One Pyodide start for the whole module (tests/lite_runtime/run.mjs, harness.py): every case is
called as Lite calls it, once with empty cells as None (Pyodide 0.27) and once as jsnull (what
Pyodide 0.28 and later hand over for an empty cell inside a range), then again after main.py is
executed a second time, through the new module and through the first. Expected answers come from
trainbudget.calc here, in CPython.

xlwings.server refuses to import without a licence key; the harness runs it with
XLWINGS_LICENSE_KEY=noncommercial (xlwings PRO's PolyForm Noncommercial licence, the value
xlwings-server's own wasm runtime sets), unless the environment gives another key.
Missing runtime: skipped on a developer machine, a failure under CI=true.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import time
from typing import Any

import pytest

from tests.conftest import ROOT
from trainbudget import calc
from trainbudget.addin.functions.registry import FUNCTIONS
from trainbudget.addin.lite import bundle, runtime, spec as lite_spec
from trainbudget.addin.template import devices_table
from trainbudget.addin.udf import cells

RUNTIME = ROOT / ".cache" / "lite-runtime"
HERE = ROOT / "tests" / "lite_runtime"
WORKBOOK = ROOT / "workbook" / "TrainingBudget.xlsm"
H100 = "H100 SXM, BF16 tensor core, dense"
LAB = "Lab box (measured)"
BY_NAME = {s.name: s for s in FUNCTIONS}


def error_cell(error_type: str, shown: str | None = None) -> dict[str, Any]:
    """An error cell as Office.js hands it over (Excel.ErrorCellValue)."""
    cell = {"type": "Error", "errorType": error_type}
    return cell | {"basicType": "Error", "basicValue": shown} if shown else cell


NA = error_cell("NotAvailable", "#N/A")


def table_rows() -> list[list[Any]]:
    """The committed template's Devices table (header first) with empty cells as null, plus a
    measured row the catalog lacks, most of its cells empty."""
    rows = [[None if v == "" else v for v in row] for row in devices_table.read_rows(WORKBOOK)]
    header = rows[0]
    lab = dict.fromkeys(header)
    lab.update({"Name": LAB, "TFLOP/s": 123.4, "Kind": "measured", "Source": "measured here"})
    return [*rows, [lab[h] for h in header]]


def args(name: str, **given: Any) -> list[Any]:
    """A call's arguments in the Lite function's order: each given value as Excel hands it (a scalar
    becomes a 1x1 matrix), every other argument null (omitted)."""
    order = [a["name"] for a in lite_spec.function(BY_NAME[name])["args"]]
    unknown = set(given) - set(order)
    assert not unknown, unknown
    return [None if n not in given else (given[n] if isinstance(given[n], list) else [[given[n]]]) for n in order]


# TRAIN_BUDGET at utilization "step": a preset as params, the layout and batch after its own arguments
STEP_BUDGET = {"params": "Llama 3.1 8B", "tokens": 1e12, "device": H100, "utilization": "step", "devices": 64,
               "zero_stage": 1, "tp": 2, "seq_len": 8192, "global_batch": 512}


def cases() -> dict[str, dict[str, Any]]:
    """Every case by its id: one call each."""
    table = table_rows()
    out = {f"example {s.name}": {"func": s.name, "args": args(s.name, **s.example_values)} for s in FUNCTIONS}
    hours = {"params": 7e9, "tokens": 1e9}
    out |= {
        "column": {"func": "TRAIN_HOURS", "args": args("TRAIN_HOURS", params=[[7e9], [70e9]], tokens=1e12,
                                                       device=H100, utilization=0.4)},
        "row": {"func": "TRAIN_HOURS", "args": args("TRAIN_HOURS", params=[[7e9, 70e9]], tokens=1e12, device=H100)},
        "unknown device": {"func": "TRAIN_HOURS", "args": args("TRAIN_HOURS", **hours, device="NoSuchGPU")},
        "empty params": {"func": "TRAIN_HOURS", "args": args("TRAIN_HOURS", params=[[None]], tokens=1e9,
                                                             device=H100)},
        "empty cell in params": {"func": "TRAIN_HOURS", "args": args("TRAIN_HOURS", params=[[7e9], [None]],
                                                                     tokens=1e9, device=H100)},
        "table, measured row": {"func": "TRAIN_HOURS", "args": args("TRAIN_HOURS", **hours, device=LAB,
                                                                    devices_table=table)},
        "table, empty slot": {"func": "TRAIN_HOURS", "args": args("TRAIN_HOURS", **hours, device=LAB, utilization=0.4,
                                                                  devices=8, devices_table=table)},
        "table, catalog row": {"func": "TRAIN_HOURS", "args": args("TRAIN_HOURS", **hours, device=H100,
                                                                   devices_table=table)},
        "table, template row": {"func": "DEVICE_TFLOPS", "args": args("DEVICE_TFLOPS", device=table[1][0],
                                                                      devices_table=table)},
        "table, budget": {"func": "TRAIN_BUDGET", "args": args("TRAIN_BUDGET", params=7e9, tokens=1e12, device=LAB,
                                                               utilization=0.4, devices_table=table)},
        "table, no watts": {"func": "TRAIN_ENERGY_KWH", "args": args("TRAIN_ENERGY_KWH", **hours, device=LAB,
                                                                     devices_table=table)},
        "table, bad header": {"func": "TRAIN_HOURS", "args": args("TRAIN_HOURS", **hours, device=H100,
                                                                  devices_table=[["Name", "Watts"], ["x", 1]])},
        "budget, step": {"func": "TRAIN_BUDGET", "args": args("TRAIN_BUDGET", **STEP_BUDGET)},
        "budget, a range": {"func": "TRAIN_BUDGET", "args": args("TRAIN_BUDGET", params=[[7e9], [13e9]], tokens=1e12,
                                                                 device=H100)},
    }
    watts = table[0].index("Watts")
    lab_na = [*table[-1][:watts], NA, *table[-1][watts + 1:]]  # the measured row, its Watts #N/A
    errors = {  # id -> (function, its arguments)
        "#N/A in params": ("TRAIN_HOURS", dict(params=NA, tokens=1e9, device=H100)),
        "#DIV/0! in a params range": ("TRAIN_HOURS", dict(params=[[7e9], [error_cell("Div0")]], tokens=1e9,
                                                          device=H100)),
        "#N/A in device": ("TRAIN_HOURS", dict(**hours, device=NA)),
        "#REF! in a device range": ("TRAIN_HOURS", dict(**hours, device=[[H100], [error_cell("Ref", "#REF!")]])),
        "#VALUE! in utilization": ("TRAIN_HOURS", dict(**hours, device=H100, utilization=error_cell("Value"))),
        "#N/A in method": ("TRAIN_BYTES", dict(params=7e9, method=NA)),
        "#N/A in a flag": ("TRAIN_ACTIVATION_BYTES", dict(n_layers=32, d_model=4096, n_heads=32, seq_len=4096,
                                                          micro_batch=1, sequence_parallel=NA)),
        "#N/A as devices_table": ("TRAIN_HOURS", dict(**hours, device=H100, devices_table=NA)),
        "#N/A in devices_table": ("TRAIN_HOURS", dict(**hours, device=H100, devices_table=[*table[:-1], lab_na])),
    }
    out |= {k: {"func": f, "args": args(f, **a)} for k, (f, a) in errors.items()}
    return out


CASES = cases()
IDS = list(CASES)
CONVERSIONS = [  # through the bundle's value_out, then xlwings' own conversion
    {"func": "TRAIN_HOURS", "value": [1.0, math.nan, math.inf, -math.inf], "runtime": "1.4", "through_bundle": True},
    {"func": "TRAIN_HOURS", "value": [1.0, math.nan, math.inf, -math.inf], "runtime": "1.3", "through_bundle": True},
    {"func": "TRAIN_HOURS", "value": 5.0, "runtime": "1.4", "through_bundle": True},
    {"func": "TRAIN_HOURS", "value": [[1.0, None]], "runtime": "1.4", "through_bundle": False},
    {"func": "TRAIN_HOURS", "value": None, "runtime": "1.4", "through_bundle": False},
]


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (RUNTIME / "ready").is_file():
        return f"the Lite runtime is not installed in {RUNTIME}"
    return None


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict[str, Any]:
    """One Pyodide process over every case."""
    missing = _missing()
    if missing:
        message = f"{missing}: run `bash tests/lite_runtime/install.sh` (tests/run-all.sh does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    request = {"main_py": bundle.main_py(), "cases": list(CASES.values()), "conversions": CONVERSIONS,
               "env": {"XLWINGS_LICENSE_KEY": os.environ.get("XLWINGS_LICENSE_KEY", "noncommercial")}}
    path = tmp_path_factory.mktemp("lite-runtime") / "request.json"
    path.write_text(json.dumps(request), "utf-8")
    start = time.monotonic()
    proc = subprocess.run(["node", str(HERE / "run.mjs"), str(RUNTIME), str(HERE / "harness.py"), str(path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    answer = json.loads(proc.stdout)
    answer["seconds"] = time.monotonic() - start
    return answer


def got(ran: dict[str, Any], case: str, run: str = "first", mode: str = "none") -> dict[str, Any]:
    return ran[run][mode][IDS.index(case)]


def num(value: Any) -> Any:
    """Numbers compared to 1e-12 (Pyodide's libm is not glibc's), everything else exactly."""
    if isinstance(value, list):
        return [num(v) for v in value]
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-12)
    return value


def as_excel(result: Any) -> Any:
    """calc's answer as Lite's output conversion hands it to Excel: always rows."""
    out = cells.value_out(result)
    return [list(r) for r in out] if isinstance(out, list) else [[out]]


def test_the_runtime_is_the_real_one(ran):
    assert ran["versions"] | {"jsnull": None} == {"python": "3.12.7", "pyodide": "0.27.7", "numpy": "2.0.2",
                                                  "xlwings": "0.37.8", "platform": "emscripten", "jsnull": None}
    assert ran["func_is_server_func"]  # `from xlwings import func` in main.py is the Office.js decorator
    assert "trainbudget" not in {m.split(".")[0] for m in ran["modules"]}


@pytest.mark.parametrize("mode", ["none", "jsnull"])
@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_function_equals_calc_on_its_example(ran, name, mode):
    s = BY_NAME[name]
    result = got(ran, f"example {name}", mode=mode)
    assert result == {"value": num(as_excel(s.call(s.example_values)))}


def test_the_decorators_metadata_is_the_registrys(ran):
    meta = ran["meta"]
    assert meta["allowErrorForDataTypeAny"] is True
    functions = {f["name"]: f for f in meta["functions"]}
    assert set(functions) == set(BY_NAME)
    for s in FUNCTIONS:
        f = functions[s.name]
        assert f["id"] == s.name and f["description"] == s.description
        assert f["result"] == {"dimensionality": "matrix", "type": "any"}
        want = [(a["name"], a["doc"], not a["required"]) for a in lite_spec.function(s)["args"]]
        assert [(p["name"], p["description"], p.get("optional", False)) for p in f["parameters"]] == want
        assert all(p["dimensionality"] == "matrix" and p["type"] == "any" for p in f["parameters"])
        assert [p["name"] for p in f["parameters"]][-1] == ("devices_table" if lite_spec.uses_devices(s)
                                                            else s.args[-1].name)


def test_ranges_spill_in_their_own_orientation(ran):
    column, row = got(ran, "column")["value"], got(ran, "row")["value"]
    assert column == num(calc.train_hours([[7e9], [70e9]], 1e12, H100, utilization=0.4).tolist())
    assert row == num([calc.train_hours([7e9, 70e9], 1e12, H100).tolist()])


def test_output_conversion(ran):
    num_error = {"type": "Error", "errorType": "Num"}
    fit = lite_spec.build()["does_not_fit"]
    assert ran["conversions"][0] == [[1.0], [num_error], [fit], [num_error]]  # runtime 1.4: an error value
    assert ran["conversions"][1] == [[1.0], ["#NUM!"], [fit], ["#NUM!"]]  # runtime 1.3: the text stays
    assert ran["conversions"][2] == [[5.0]]
    assert ran["conversions"][3] == [[1.0, ""]] and ran["conversions"][4] == [[""]]


@pytest.mark.parametrize("mode", ["none", "jsnull"])
def test_empty_cells_in_ranges(ran, mode):
    assert got(ran, "empty params", mode=mode)["error"] == "params is empty"
    assert got(ran, "empty cell in params", mode=mode)["error"] == "params[1, 0] is empty"


@pytest.mark.parametrize("mode", ["none", "jsnull"])
def test_the_templates_devices_table_with_its_empty_cells(ran, mode):
    rows = table_rows()
    assert sum(v is None for row in rows[:-1] for v in row) > 0  # the template's table has empty cells
    table = devices_table.table_from_rows(rows)
    assert got(ran, "table, measured row", mode=mode) == {"value": num([[calc.train_hours(7e9, 1e9, LAB,
                                                                                           table=table)]])}
    assert got(ran, "table, empty slot", mode=mode) == {
        "value": num([[calc.train_hours(7e9, 1e9, LAB, utilization=0.4, devices=8, table=table)]])}
    assert got(ran, "table, catalog row", mode=mode) == {"value": num([[calc.train_hours(7e9, 1e9, H100,
                                                                                          table=table)]])}
    assert got(ran, "table, template row", mode=mode) == {"value": num([[table.get(rows[1][0]).tflops]])}
    budget = BY_NAME["TRAIN_BUDGET"]
    want = budget.call({"params": 7e9, "tokens": 1e12, "device": LAB, "utilization": 0.4}, table=table)
    assert got(ran, "table, budget", mode=mode) == {"value": num(as_excel(want))}
    assert "no watts" in got(ran, "table, no watts", mode=mode)["error"]


@pytest.mark.parametrize("mode", ["none", "jsnull"])
def test_train_budget_times_the_step_in_the_runtime(ran, mode):
    want = BY_NAME["TRAIN_BUDGET"].call(STEP_BUDGET)
    assert any(label == "Step seconds" for label, _ in want)
    assert got(ran, "budget, step", mode=mode) == {"value": num(as_excel(want))}


def test_errors_name_the_argument(ran):
    assert "NoSuchGPU" in got(ran, "unknown device")["error"] and "closest" in got(ran, "unknown device")["error"]
    assert got(ran, "table, bad header")["error"] == ("devices_table has no 'TFLOP/s' column in its first row "
                                                      "(found: Name, Watts)")
    assert "one scenario" in got(ran, "budget, a range")["error"]


ERROR_MESSAGES = {
    "#N/A in params": "params: the cell holds #N/A",
    "#DIV/0! in a params range": "params[1, 0]: the cell holds #DIV/0!",
    "#N/A in device": "device: the cell holds #N/A",
    "#REF! in a device range": "device[1, 0]: the cell holds #REF!",
    "#VALUE! in utilization": "utilization: the cell holds #VALUE!",
    "#N/A in method": "method: the cell holds #N/A",
    "#N/A in a flag": "sequence_parallel: the cell holds #N/A",
    "#N/A as devices_table": "devices_table: the cell holds #N/A",
    "#N/A in devices_table": f"devices_table row {len(table_rows()) - 1} ('{LAB}'): the 'Watts' cell holds #N/A",
}


@pytest.mark.parametrize("mode", ["none", "jsnull"])
@pytest.mark.parametrize("case", list(ERROR_MESSAGES))
def test_error_cells_are_named(ran, case, mode):
    assert got(ran, case, mode=mode)["error"] == ERROR_MESSAGES[case]


@pytest.mark.parametrize("run", ["second", "stale"])
def test_main_py_executed_again_answers_the_same(ran, run):
    for mode in ("none", "jsnull"):
        assert ran[run][mode] == ran["first"][mode], (run, mode)


def test_no_message_is_unexpected_or_long(ran):
    results = [r for run in ("first", "second", "stale") for mode in ("none", "jsnull") for r in ran[run][mode]]
    errors = [r["error"] for r in results if "error" in r]
    assert len(errors) == 6 * (len(ERROR_MESSAGES) + 6)  # the error cases above, and only they
    assert not [e for e in errors if "unexpected" in e or len(e) > runtime.MESSAGE_CHARS]


def test_one_pyodide_start_for_every_case(ran):
    calls = sum(len(ran[run][mode]) for run in ("first", "second", "stale") for mode in ("none", "jsnull"))
    assert calls == 6 * len(CASES)
    assert ran["seconds"] < 120, ran["seconds"]
