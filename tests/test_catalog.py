"""The packaged device catalog: sourced, unique, positive, with the seed's rows verbatim."""

import csv
import re
from importlib import resources

import pytest

from trainbudget import calc

REQUIRED_HARDWARE = ["A100 SXM 80GB", "H100 SXM", "H100 PCIe", "H200 SXM", "B200", "GB200 (per GPU)",
                     "L40S", "RTX 4090", "MI300X", "MI325X", "TPU v5e", "TPU v5p", "TPU v6e", "Gaudi 3"]


@pytest.fixture(scope="module")
def rows():
    text = resources.files("trainbudget.calc").joinpath("data/devices.csv").read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def test_units_in_column_names(rows):
    assert {"tflops", "memory_gib", "memory_tbps", "watts", "usd_per_device_hour", "source",
            "as_of"} <= set(rows[0])


def test_every_row_sourced_dated_and_positive(rows):
    for r in rows:
        assert r["source"].strip(), r["name"]
        assert len(r["as_of"]) == 10 and r["as_of"][4] == "-", r["name"]
        assert float(r["tflops"]) > 0, r["name"]
        assert r["kind"] in ("vendor dense peak", "measured")


def test_unique_names(rows):
    keys = [calc.devices.normalize(r["name"]) for r in rows]
    assert len(keys) == len(set(keys))


def test_seed_rows_verbatim(seed_lines):
    table = calc.catalog()
    for name in calc.SEED_DEVICES:
        d = table.get(name)
        line = next(x for x in seed_lines if x.startswith(d.name + " "))
        assert f"{d.tflops:.1f} TFLOP/s" in line


def test_required_hardware_has_bf16_rate(rows):
    for hw in REQUIRED_HARDWARE:
        bf16 = [r for r in rows if r["hardware"] == hw and r["precision"] == "bf16"]
        assert bf16, hw
        assert bf16[0]["memory_gib"], hw


def test_sparsity_halved_where_noted(rows):
    halved = [r for r in rows if "with sparsity, halved" in r["note"]]
    assert len(halved) >= 15
    for r in halved:
        sparse = float(re.search(r"([\d,.]+) TFLOPS with sparsity", r["note"]).group(1).replace(",", ""))
        assert float(r["tflops"]) == pytest.approx(sparse / 2, rel=0.001), r["name"]


def test_user_csv_and_checks(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("name,tflops,source\nlab box,50,measured 2026-11-01\n")
    assert calc.train_hours(1e9, 1e9, "Lab Box", table=calc.load_devices(path)) > 0
    path.write_text("name,tflops,source\nlab box,fast,measured\n")
    with pytest.raises(calc.TrainingBudgetError, match="tflops must be a number"):
        calc.load_devices(path)
    path.write_text("name,tflops,source\nlab box,50,\n")
    with pytest.raises(calc.TrainingBudgetError, match="source is required"):
        calc.load_devices(path)
    path.write_text("name,tflops,source\nbox,50,x\nBOX,60,y\n")
    with pytest.raises(calc.TrainingBudgetError, match="duplicate device name"):
        calc.load_devices(path)
