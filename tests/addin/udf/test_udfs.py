"""The UDF module against xlwings' own code, and called with values shaped as Excel passes them."""

from __future__ import annotations

import types

import numpy as np
import pytest
import xlwings

from tests.xlwings_stub import udfs_with_vba
from trainbudget import calc
from trainbudget.addin.functions.registry import FUNCTIONS
from trainbudget.addin.template import devices_table
from trainbudget.addin.udf import cells, udfs

H100 = "H100 SXM, BF16 tensor core, dense"


def test_xlwings_version_pinned():
    # generate_vba_wrapper, xlfunc/xlarg/xlret and the "caller" convention are internal APIs
    assert xlwings.__version__ == "0.37.8"


@pytest.fixture(scope="module")
def contract(request):
    """udfs reloaded under xlwings' real decorators (pywin32 stubbed), and the VBA it generates."""
    with udfs_with_vba("trainbudget.addin.udf.udfs", "TB.xlsm") as made:
        yield made


def test_every_function_has_a_vba_wrapper_with_its_argument_list(contract):
    _module, vba = contract
    for spec in FUNCTIONS:
        args = ", ".join(("Optional " if a not in spec.required else "") + a.name for a in spec.args)
        assert f"Function {spec.name}({args})" in vba, spec.name
        names = ", ".join(a.name for a in spec.args)
        assert f'"trainbudget.addin.udf.udfs", "{spec.name}", Array({names}, Nothing)' in vba


def test_help_text_within_excel_limits(contract):
    module, _ = contract
    for spec in FUNCTIONS:
        info = getattr(module, spec.name).__xlfunc__
        assert info["category"] == "TrainingBudget"
        assert info["ret"]["doc"] == spec.description and len(spec.description) <= 255
        docs = {a["name"]: a["doc"] for a in info["args"]}
        assert docs.pop("caller").startswith("Positional")  # xlwings passes the calling range
        for a in spec.args:
            assert docs[a.name] == a.doc(spec.default(a)) and len(docs[a.name]) <= 255
            assert a.unit in docs[a.name]
            assert ("Optional" in docs[a.name]) == (a not in spec.required)
            assert info["argmap"][a.name]["options"]["convert"] == "raw"


@pytest.mark.parametrize("spec", FUNCTIONS, ids=lambda s: s.name)
def test_udf_equals_calc_for_scalars(spec):
    values = spec.example_values
    got = getattr(udfs, spec.name)(*values.values())
    want = cells.value_out(spec.call(values))
    assert got == want


def test_ranges_spill_with_broadcast_shape():
    params = ((7e9, 13e9), (70e9, 1e9))  # a 2x2 range, as COM passes it
    got = udfs.TRAIN_HOURS(params, 1e12, H100, ((0.4,), (0.5,)))
    want = calc.train_hours(np.array(params), 1e12, H100, utilization=np.array([[0.4], [0.5]]))
    assert np.allclose(got, want) and len(got) == 2 and len(got[0]) == 2


def test_device_range_and_number_device():
    got = udfs.TRAIN_HOURS(7e9, 1e9, ((H100,), (989.5,)))
    assert got[0][0] == got[1][0] == pytest.approx(calc.train_hours(7e9, 1e9, H100))


def test_omitted_optional_means_default():
    assert udfs.TRAIN_HOURS(7e9, 1e9, H100, None, None) == calc.train_hours(7e9, 1e9, H100)


def test_budget_spills_two_columns():
    rows = udfs.TRAIN_BUDGET(7e9, 1e12, H100, 0.4, 8, 2.5)
    labels = [r[0] for r in rows]
    assert all(len(r) == 2 for r in rows)
    assert dict(rows)["Hours"] == pytest.approx(calc.train_hours(7e9, 1e12, H100, utilization=0.4, devices=8))
    assert dict(rows)["Cost (USD)"] == pytest.approx(calc.train_cost(
        7e9, 1e12, H100, utilization=0.4, devices=8, usd_per_device_hour=2.5))
    assert "Total (GB per device)" in labels


def test_budget_renders_the_budget():
    """TRAIN_BUDGET is a thin wrapper over calc.budget: every row equals the Budget's figure."""
    rows = dict(udfs.TRAIN_BUDGET(70e9, 1e12, H100, 0.4, 64, 2.5, 1.2, "full", "adamw", 3))
    b = calc.budget(calc.job(params=70e9, tokens=1e12, device=H100, utilization=0.4, devices=64, price=2.5,
                             pue=1.2, zero_stage=3))
    assert rows["Total (GB per device)"] == pytest.approx(b.memory.total / 1e9)
    for label, want in (("Hours", b.hours), ("Days", b.days), ("Device-hours", b.device_hours),
                        ("Cost (USD)", b.cost_usd), ("Energy (kWh)", b.energy_kwh), ("FLOPs", b.flops),
                        ("Headroom (GiB per device)", b.headroom_bytes / 2**30), ("Utilization", 0.4),
                        ("Goodput", 1.0)):
        assert rows[label] == pytest.approx(want), label
    assert rows["Fits in memory"] is True


def test_budget_takes_active_params_as_the_other_functions_do():
    """A mixture of experts: FLOPs, hours and cost follow the active parameters, memory every one
    (the same Budget as calc.budget, and TRAIN_HOURS's hours); above params is refused by name."""
    rows = dict(udfs.TRAIN_BUDGET(46.7e9, 1e12, H100, 0.4, 64, 2.5, 1.0, "full", "adamw", 3, 12.9e9))
    b = calc.budget(calc.job(params=46.7e9, active_params=12.9e9, tokens=1e12, device=H100, utilization=0.4,
                             devices=64, price=2.5, zero_stage=3))
    dense = dict(udfs.TRAIN_BUDGET(46.7e9, 1e12, H100, 0.4, 64, 2.5, 1.0, "full", "adamw", 3))
    assert rows["FLOPs"] == pytest.approx(b.flops) == pytest.approx(6 * 12.9e9 * 1e12)
    assert rows["Hours"] == pytest.approx(b.hours) == pytest.approx(udfs.TRAIN_HOURS(46.7e9, 1e12, H100, 0.4, 64,
                                                                                       12.9e9))
    assert rows["Cost (USD)"] == pytest.approx(b.cost_usd) and rows["Cost (USD)"] < dense["Cost (USD)"]
    assert rows["Total (GB per device)"] == pytest.approx(dense["Total (GB per device)"])
    bad = udfs.TRAIN_BUDGET(46.7e9, 1e12, H100, 0.4, 64, 2.5, 1.0, "full", "adamw", 3, 50e9)
    assert bad.startswith("#VALUE! active_params must be <= params")


@pytest.mark.parametrize(("price", "needle"), [("abc", "#VALUE! price: no abc"),  # was ignored
                                               ("7e9", "#VALUE! usd_per_device_hour must be a number"),
                                               (-5.0, "#VALUE! usd_per_device_hour must be >= 0")])
def test_budget_refuses_a_bad_price(price, needle):
    assert udfs.TRAIN_BUDGET(7e9, 1e12, H100, 0.4, 8, price).startswith(needle)


def test_cost_names_an_unknown_device_before_the_price():
    assert udfs.TRAIN_COST(7e9, 1e12, "H10", "aws").startswith("#N/A unknown device 'H10'")


@pytest.mark.parametrize(("call", "text"), [
    (lambda: udfs.TRAIN_HOURS(-1.0, 1e9, H100), "#VALUE! params must be > 0 (got -1)"),
    (lambda: udfs.TRAIN_HOURS(0.0, 1e9, H100), "#VALUE! params must be > 0 (got 0)"),
    (lambda: udfs.TRAIN_HOURS(None, 1e9, H100), "#VALUE! params is empty"),
    (lambda: udfs.TRAIN_HOURS(((1e9,), (None,)), 1e9, H100), "#VALUE! params[1, 0] is empty"),
    (lambda: udfs.TRAIN_HOURS("7e9", 1e9, H100), "#VALUE! params must be a number (got '7e9')"),
    (lambda: udfs.TRAIN_HOURS(True, 1e9, H100), "#VALUE! params must be a number, not a boolean"),
    (lambda: udfs.TRAIN_HOURS(((1e9, "x"),), 1e9, H100), "#VALUE! params[0, 1] must be a number (got 'x')"),
    (lambda: udfs.TRAIN_HOURS(((1e9,), (True,)), 1e9, H100), "#VALUE! params[1, 0] must be a number (got True)"),
    (lambda: udfs.TRAIN_HOURS(7e9, float("nan"), H100), "#VALUE! tokens must be a finite number"),
    (lambda: udfs.TRAIN_HOURS(7e9, float("inf"), H100), "#VALUE! tokens must be a finite number"),
    (lambda: udfs.TRAIN_HOURS(7e9, 1e9, H100, 1.5), "#VALUE! utilization must be in (0, 1] (got 1.5)"),
    (lambda: udfs.TRAIN_HOURS(7e9, 1e9, H100, 0.5, 0.5), "#VALUE! devices must be a whole number >= 1"),
    (lambda: udfs.TRAIN_HOURS(7e9, 1e9, "H10"), "#N/A unknown device 'H10'; closest: H100"),
    (lambda: udfs.TRAIN_HOURS(7e9, 1e9, None), "#VALUE! device is empty"),
    (lambda: udfs.TRAIN_BYTES(7e9, "dora"), "#VALUE! method must be one of"),
    (lambda: udfs.TRAIN_BYTES(7e9, None, "adam9"), "#VALUE! optimizer must be one of"),
    (lambda: udfs.TRAIN_ACTIVATION_BYTES(1, 2, 3, 4, 5, None, None, "yes"),
     "#VALUE! sequence_parallel must be"),
    (lambda: udfs.TRAIN_HOURS(7e9, 1e9, H100, 1.0000001), "#VALUE! utilization must be in (0, 1] (got 1.0000001)"),
    (lambda: udfs.TRAIN_HOURS(1e308, 1e9, H100), "#VALUE! params (got 1e+308) out of range"),
    (lambda: udfs.TRAIN_BUDGET(((7e9,), (13e9,)), 1e12, H100),
     "#VALUE! TRAIN_BUDGET takes one scenario; params is a range of 2 cells"),
    (lambda: udfs.TRAIN_HOURS("x" * 32_767, 1e9, H100), "#VALUE! params must be a number (got 'xxx"),
])
def test_bad_input_returns_message_and_raises_nothing(call, text):
    got = call()
    assert isinstance(got, str) and got.startswith(text), got
    assert "\n" not in got and "Traceback" not in got


class _Book:
    fullname = "C:/Budgets/team.xlsm"


class _Caller:
    sheet = types.SimpleNamespace(book=_Book())


def test_workbook_devices_first_then_catalog_and_cached(monkeypatch):
    rows = [["Name", "TFLOPS", "Kind", "Source"], ["Lab A100 (measured)", 250.0, "measured", "bench 2026-11"]]
    reads = []
    now = [100.0]

    def read(book):
        reads.append(book.fullname)
        return rows

    devices_table._cache.clear()
    table = lambda: devices_table.devices_for(_Caller(), clock=lambda: now[0], read=read)  # noqa: E731
    assert table().value("lab a100 (measured)") == 250.0
    assert table().value(H100) == 989.5  # falls back on the catalog
    for _ in range(1000):
        table()
    assert len(reads) == 1
    rows[1][1] = 300.0
    now[0] += devices_table.TTL_S
    assert table().value("Lab A100 (measured)") == 300.0 and len(reads) == 2
    devices_table._cache.clear()


def _table_rows(path):
    """The Devices table of a real workbook file as a 2-D list (what xlwings' table range gives)."""
    import openpyxl

    ws = openpyxl.load_workbook(path)["Devices"]
    return [[c.value for c in row] for row in ws[ws.tables["Devices"].ref]]


def test_devices_table_from_a_real_workbook_with_a_measured_row(built):
    rows = _table_rows(built.path)
    rows.append(["Lab H100 (measured)", "H100 SXM", "bf16", 702.0, "measured", 80, None, 700, 2.1,
                 "trainbudget measure, 2026-11-28", "2026-11-28", ""])
    table = devices_table.table_from_rows(rows)
    assert len(table) == len(calc.catalog()) + 1
    assert udfs.TRAIN_HOURS(7e9, 1e9, "Lab H100 (measured)").startswith("#N/A")  # not in the catalog
    assert calc.train_hours(7e9, 1e9, "lab h100 (measured)", table=table) == pytest.approx(42e18 / 702e12 / 3600)
    assert calc.train_cost(7e9, 1e9, "Lab H100 (measured)", table=table) == pytest.approx(
        2.1 * 42e18 / 702e12 / 3600)


def test_devices_table_reordered_and_snake_case_headers(built):
    rows = _table_rows(built.path)
    order = list(reversed(range(len(rows[0]))))
    shuffled = [[row[i] for i in order] for row in rows]
    shuffled[0] = [{"TFLOPS": "tflops", "Memory GB": "memory_gib"}.get(h, h) for h in shuffled[0]]
    table = devices_table.table_from_rows(shuffled)
    assert table.value(H100) == 989.5 and table.get(H100).memory_gib == 80


def test_devices_table_renamed_rate_column_is_refused(built, monkeypatch):
    rows = _table_rows(built.path)
    rows[0] = ["Rate" if h == "TFLOP/s" else h for h in rows[0]]
    with pytest.raises(calc.TrainingBudgetError, match="Devices table has no 'TFLOP/s' column"):
        devices_table.table_from_rows(rows)

    devices_table._cache.clear()
    monkeypatch.setattr(devices_table, "read_book_rows", lambda book: rows)
    got = udfs.DEVICE_TFLOPS(H100, caller=_Caller())  # in Excel, the same message reaches the cell
    devices_table._cache.clear()
    assert got.startswith("#VALUE! Devices table has no 'TFLOP/s' column")
