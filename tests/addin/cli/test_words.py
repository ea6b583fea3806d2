"""Plain words and the estimate command's finance options."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from tests.conftest import ROOT, invoke

JARGON = re.compile(r"\b(seeds?|quests?|tracks?)\b", re.I)


@pytest.mark.parametrize("args", [["estimate"], ["estimate", "--help"], ["devices"], ["--help"], ["runs"]])
def test_cli_output_has_no_jargon(args):
    out = invoke(*args, check=True).stdout
    assert not JARGON.findall(out)


def test_readme_docs_and_devices_have_no_jargon():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        assert not JARGON.findall(page.read_text()), page.name
    assert not JARGON.findall((ROOT / "calc" / "data" / "devices.csv").read_text())


def test_workbook_strings_have_no_jargon(built):
    with zipfile.ZipFile(built.path) as z:
        text = " ".join(z.read(n).decode("utf-8", "replace") for n in z.namelist()
                        if n.endswith(".xml") and "vba" not in n)
    assert not JARGON.findall(text)
    assert ">TFLOPS<" not in text  # the header says TFLOP/s, as the cells do


def test_m3_ultra_rows_say_what_they_are():
    rows = json.loads(invoke("devices", "--json", check=True).stdout)
    m3 = {r["name"]: r for r in rows if r["hardware"] == "M3 Ultra"}
    assert "MLX fp32" in m3["M3 Ultra, MLX fp32 matmul (measured)"]["note"]
    assert "PyTorch MPS bf16" in m3["M3 Ultra, PyTorch MPS bf16 matmul (measured)"]["note"]
    assert all("Apple M3 Ultra" in r["source"] for r in m3.values())


def test_estimate_prints_memory_cost_and_energy():
    out = invoke("estimate", "--device", "H100 SXM, BF16 tensor core, dense", "--utilization", "40%",
                  "--devices", "8", "--price", "2.5", "--pue", "1.2", "--zero-stage", "3", check=True).stdout
    assert f"14.0 GB ({14e9 / 2**30:.1f} GiB)" in out  # 16 B/param over 8 devices at ZeRO 3, in GB and GiB
    hours = 42e18 / (989.5e12 * 0.4 * 8) / 3600
    assert f"{hours * 8 * 2.5:,.0f}" in out and f"{700 * hours * 8 * 1.2 / 1000:,.1f}" in out
    data = json.loads(invoke("estimate", "--device", "H100 SXM, BF16 tensor core, dense", "--method", "lora",
                              "--optimizer", "sgd", "--json", check=True).stdout)
    assert data["rows"][0]["memory_per_device_gib"] < 16 and data["rows"][0]["cost_usd"] is None


@pytest.mark.parametrize(("value", "needle"), [("40", "did you mean 0.40?"), ("0", "must be in (0, 1]"),
                                               ("abc", "such as 0.4 or 40%")])
def test_utilization_answers(value, needle):
    proc = invoke("estimate", "--utilization", value)
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_utilization_percent_equals_fraction():
    a = json.loads(invoke("estimate", "--utilization", "40%", "--json", check=True).stdout)
    b = json.loads(invoke("estimate", "--utilization", "0.4", "--json", check=True).stdout)
    assert a["rows"] == b["rows"]
