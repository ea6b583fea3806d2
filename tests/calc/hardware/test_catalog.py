"""The packaged device catalog: sourced, unique, positive, with the seed's rows verbatim."""

import csv
import re
from importlib import resources

import pytest

from trainbudget import calc
from trainbudget.calc.hardware import catalog as calc_devices
from trainbudget.calc.prior import runs as calc_runs

REQUIRED_HARDWARE = ["A100 SXM 80GB", "H100 SXM", "H100 PCIe", "H200 SXM", "B200", "GB200 (per GPU)",
                     "L40S", "RTX 4090", "MI300X", "MI325X", "TPU v5e", "TPU v5p", "TPU v6e", "Gaudi 3",
                     # the 2026 parts (accuracy review 2026-11-30, section 1b) and Gopher's TPU v3
                     "B300", "GB300 (per GPU)", "RTX 5090", "RTX PRO 6000 Blackwell", "MI355X", "MI350X", "TPU7x",
                     "Trainium2", "Trainium3", "Gaudi 3 PCIe", "H100 NVL", "L4", "TPU v3", "M3 Ultra"]


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
    keys = [calc_devices.normalize(r["name"]) for r in rows]
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
        assert bf16[0]["memory_gib"] and bf16[0]["memory_tbps"], hw


def test_sparsity_halved_where_noted(rows):
    halved = [r for r in rows if "with sparsity, halved" in r["note"]]
    assert len(halved) >= 15
    for r in halved:
        number, unit = re.search(r"([\d,.]+) ([TP])FLOPS with sparsity, halved", r["note"]).groups()
        sparse = float(number.replace(",", "")) * (1000 if unit == "P" else 1)
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


def test_second_hand_figures_say_so(rows):
    """NVIDIA and AMD pages were not readable here: rows from copies say '2nd-hand'."""
    for r in rows:
        if r["as_of"] >= "2026-11-30" and r["hardware"].startswith(("B300", "GB300", "RTX 5090", "RTX PRO", "MI35",
                                                                     "H100 NVL", "L4", "Gaudi 3 PCIe")):
            assert "2nd-hand" in r["source"], r["name"]


def test_b200_bandwidth_settled_and_m3_ultra_usable(rows):
    b200 = [r for r in rows if r["hardware"] == "B200"]
    assert {r["memory_tbps"] for r in b200} == {"7.7"}
    assert all("7,680-bit" in r["source"] for r in b200)
    m3 = calc.catalog().get("M3 Ultra, PyTorch MPS bf16 matmul (measured)")
    assert m3.memory_gib == 96 and m3.memory_tbps == 0.819
    assert calc.devices_needed(7e9, m3.name) >= 1


def test_tpu_v3_is_gophers_device():
    v3 = calc.catalog().get("TPU v3, BF16, dense")
    assert (v3.tflops, v3.memory_gib, v3.memory_tbps) == (123, 32, 0.9)
    (gopher,) = [r for r in calc_runs.load_runs() if r.run.startswith("Gopher")]
    assert gopher.device == v3.name and gopher.use == "main"
    assert calc_runs.implied_utilization(gopher) == pytest.approx(0.302, abs=0.001)
