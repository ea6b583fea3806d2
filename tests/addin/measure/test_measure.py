"""`trainbudget measure`: the numpy backend end to end, the correctness guard, and --into."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import openpyxl
import pytest
from openpyxl.chart import LineChart, Reference
from openpyxl.comments import Comment
from openpyxl.drawing.image import Image

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.measure import backends, core as measure, devices_write
from trainbudget.addin.ooxml import package
from trainbudget.addin.template import budget_sheet, devices_table

SMALL = (64, 128, 256)


def test_numpy_backend_end_to_end():
    m = measure.measure(backends.numpy_backend(), "fp64", seconds=2, sizes=SMALL)
    assert [s.n for s in m.sizes] == list(SMALL)
    assert all(s.tflops > 0 and s.repeats >= 3 and s.error < 1e-10 for s in m.sizes)
    best = m.best
    steady = [s for s in m.sizes if s.spread <= measure.SUSTAINED_SPREAD] or m.sizes
    assert best.tflops == max(s.tflops for s in steady)  # the fastest steady size
    d = m.as_dict()
    assert {"date", "host", "hardware", "backend_version", "dtype", "n", "repeats", "spread"} <= set(d)
    assert d["backend"] == "numpy" and d["dtype"] == "fp64" and d["tflops"] == best.tflops


class _Lazy(backends.Backend):
    """A kernel that is fast because it skips work: it returns zeros."""

    def matmul(self, a, b, dtype):
        return np.zeros_like(a)


class _Sloppy(backends.Backend):
    """A kernel that is 1% off."""

    def matmul(self, a, b, dtype):
        return (a @ b) * 1.01


@pytest.mark.parametrize("kind", [_Lazy, _Sloppy])
def test_correctness_guard_rejects_wrong_kernels(kind):
    bad = kind("numpy", "cpu", ("fp32",), np.__version__, "test")
    with pytest.raises(measure.WrongResult, match="is wrong: relative error"):
        measure.measure(bad, "fp32", seconds=1, sizes=(64,))


def test_bad_dtype_and_seconds():
    with pytest.raises(calc.TrainingBudgetError, match="dtype must be one of fp32, fp64"):
        measure.measure(backends.numpy_backend(), "bf16", 1)
    with pytest.raises(calc.TrainingBudgetError, match="seconds must be > 0"):
        measure.measure(backends.numpy_backend(), "fp32", 0)


def test_cli_json_provenance():
    data = json.loads(invoke("measure", "--backend", "numpy", "--seconds", "1", "--json", check=True).stdout)
    assert data["backend"] == "numpy" and data["tflops"] > 0 and data["sizes"]


def _parts(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _devices_parts(path: Path) -> set[str]:
    parts = package.read_parts(path)
    sheet = package.sheet_parts(parts)["Devices"]
    return {sheet, devices_table.find_table_part(parts, sheet)}


def _user_like(template: Path, path: Path) -> Path:
    """A user's workbook: the template plus a chart, an image, a comment and extra sheets."""
    wb = openpyxl.load_workbook(template, keep_vba=True)
    notes = wb.create_sheet("My notes")
    for r in range(1, 6):
        notes.append([f"month {r}", r * 1000])
    chart = LineChart()
    chart.add_data(Reference(notes, min_col=2, min_row=1, max_row=5))
    notes.add_chart(chart, "D2")
    image = np.zeros((8, 8, 3), dtype=np.uint8)
    from PIL import Image as PILImage

    PILImage.fromarray(image).save(path.with_suffix(".png"))
    notes.add_image(Image(str(path.with_suffix(".png"))), "D20")
    notes["A1"].comment = Comment("budget owner: finance", "Planner")
    wb.create_sheet("Scratch")["A1"] = "anything"
    wb["Budget"][budget_sheet.REF["device"].replace("$", "")] = "Lab box (measured)"
    wb.save(path)
    return path


def test_into_template_changes_only_the_devices_parts(built, tmp_path):
    path = Path(shutil.copyfile(built.path, tmp_path / "TrainingBudget.xlsm"))
    before = _parts(path)
    proc = invoke("measure", "--backend", "numpy", "--seconds", "1", "--into", str(path), "--name", "=1+1")
    assert proc.returncode == 0, proc.stderr
    after = _parts(path)
    touched = _devices_parts(path)
    assert set(before) == set(after)
    assert {n for n in after if after[n] != before[n]} == touched
    assert _parts(path.with_name(path.name + ".bak")) == before
    ws = openpyxl.load_workbook(path)["Devices"]
    n = len(calc.catalog()) + 2
    assert ws.tables["Devices"].ref == f"A1:L{n}"
    assert ws[f"A{n}"].value == "=1+1" and ws[f"A{n}"].data_type == "s"  # text, never a formula
    assert ws[f"E{n}"].value == "measured" and "trainbudget measure" in ws[f"J{n}"].value


def test_into_user_workbook_keeps_everything_and_budget_sees_it(soffice, built, tmp_path):
    path = _user_like(built.path, tmp_path / "team.xlsm")
    before = _parts(path)
    assert any(n.startswith("xl/media/") for n in before) and any("comments" in n for n in before)
    proc = invoke("measure", "--backend", "numpy", "--seconds", "1", "--into", str(path),
                   "--name", "Lab box (measured)")
    assert proc.returncode == 0, proc.stderr
    after = _parts(path)
    assert {n for n in after if after[n] != before[n]} == _devices_parts(path)
    table = calc.DeviceTable([*calc.catalog(), *[d for d in _read_devices(path) if d.name not in calc.catalog()]])
    rate = table.get("Lab box (measured)").tflops
    got = openpyxl.load_workbook(engine.recalculate(path, tmp_path / "re"), data_only=True)["Budget"]
    values = {got[f"A{r}"].value: got[f"B{r}"].value for r in range(1, 60)}
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    want = calc.train_hours(v["params"], v["tokens"], rate, utilization=v["utilization"], devices=v["devices"])
    assert values["Wall-clock hours"] == pytest.approx(want, rel=1e-9)


def _read_devices(path: Path):
    from trainbudget.addin.template import devices_table
    ws = openpyxl.load_workbook(path)["Devices"]
    return devices_table.table_from_rows([[c.value for c in row] for row in ws[ws.tables["Devices"].ref]])


def test_update_keeps_fields_the_measurement_does_not_know(built, tmp_path):
    path = Path(shutil.copyfile(built.path, tmp_path / "t.xlsm"))
    devices_write.upsert_device(path, calc.Device("Lab", 100.0, memory_gib=96, watts=500, source="a", as_of="x"))
    assert devices_write.upsert_device(path, calc.Device("LAB", 120.0, source="b", as_of="y")) == "updated"
    lab = _read_devices(path).get("lab")
    assert (lab.tflops, lab.memory_gib, lab.watts, lab.source) == (120.0, 96, 500, "b")
    assert len(_read_devices(path)) == len(calc.catalog()) + 1


@pytest.mark.parametrize("case", ["not-a-zip", "foreign", "read-only", "locked"])
def test_refusals_leave_the_file_untouched(built, tmp_path, case):
    path = tmp_path / "book.xlsm"
    if case == "not-a-zip":
        path.write_text("hello")
    elif case == "foreign":
        openpyxl.Workbook().save(path)
    else:
        shutil.copyfile(built.path, path)
    if case == "read-only":
        os.chmod(path, 0o444)
    if case == "locked":
        (tmp_path / f"~${path.name}").write_text("locked")
    before = path.read_bytes()
    proc = invoke("measure", "--backend", "numpy", "--seconds", "1", "--into", str(path))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert path.read_bytes() == before and not path.with_name(path.name + ".bak").exists()


class _Interrupted(backends.Backend):
    """Ctrl-C arrives while the second size runs."""

    def matmul(self, a, b, dtype):
        if a.shape[0] > SMALL[0]:
            raise KeyboardInterrupt
        return a @ b


def test_interrupt_keeps_what_was_measured():
    m = measure.measure(_Interrupted("numpy", "cpu", ("fp64",), np.__version__, "test"), "fp64", 5, sizes=SMALL)
    assert m.interrupted and [s.n for s in m.sizes] == [SMALL[0]] and m.best.tflops > 0
