"""`estimate`'s options: the device asked for is kept in every output (an FP8 row's range is worked out on
its BF16 row), the help reads the prior's goodput from calc, --devices takes a count, --active-params is
honoured (and refused where it cannot apply), and the layout's words multiply to the device count."""

import csv
import io
import json
import re

import pytest

from tests.conftest import invoke
from trainbudget.calc.prior.utilization import GOODPUT

BF16 = "H100 SXM, BF16 tensor core, dense"

FP8 = "H100 SXM, FP8 tensor core, dense"

HEAD = "name,params,tokens,device,devices,utilization,price,own\n"


def _file(tmp_path, text: str, name: str = "plans.csv") -> str:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return str(path)


def test_range_keeps_the_fp8_device_in_text():
    out = invoke("estimate", "--range", check=True).stdout
    lines = [line for line in out.splitlines() if "TFLOP/s ->" in line]
    assert [line.split("  ")[0] for line in lines[2:]] == [BF16, FP8]
    assert "of its 16-bit row (989.5 TFLOP/s)" in lines[3] and "16-bit row" not in lines[2]
    assert f"range of {FP8} worked out on {BF16}: the prior's utilizations are shares of a 16-bit peak" in out
    assert f"\n{FP8}: " in out  # its own table's head


def test_range_keeps_the_fp8_device_in_json_and_csv():
    rows = json.loads(invoke("estimate", "--range", "--device", FP8, "--json", check=True).stdout)["rows"]
    assert [(r["device"], r["prior_device"]) for r in rows] == [(FP8, BF16)]
    both = json.loads(invoke("estimate", "--range", "--json", check=True).stdout)["rows"]
    assert [r["device"] for r in both[2:]] == [BF16, FP8] and [r["prior_device"] for r in both[2:]] == [None, BF16]
    assert both[2]["hours_expected"] == both[3]["hours_expected"]  # the same 16-bit figures, as calc says
    (row,) = csv.DictReader(io.StringIO(invoke("estimate", "--range", "--device", FP8, "--csv", check=True).stdout))
    assert row["device"] == FP8 and row["prior_device"] == BF16
    point = json.loads(invoke("estimate", "--device", FP8, "--json", check=True).stdout)["rows"][0]
    assert point["device"] == FP8 and point["prior_device"] is None


def test_help_states_the_priors_goodput_from_calc():
    text = " ".join(invoke("estimate", "--help", check=True).stdout.split())
    assert f"the prior's {GOODPUT:.2f} with --range" in text
    assert GOODPUT != 0.90 and "prior's 0.90" not in text

FULL = HEAD + f'a,7B,1T,"{BF16}",8,0.4,2,\nb,7B,1T,"{BF16}",8,0.3,3,\n'


def test_help_says_which_options_fill_blank_cells():
    text = " ".join(invoke("estimate", "--help", check=True).stdout.split())
    for cells in ("the blank utilization cells only", "the blank price cells only",
                  "the blank price and own cells only"):
        assert f"With --scenarios: fills {cells}" in text


def test_devices_take_a_count():
    got = json.loads(invoke("estimate", "--devices", "16k", "--tp", "2", "--json", check=True).stdout)["rows"][0]
    assert got["devices"] == 16000 and got["dp"] == 8000 and got["tp"] == 2
    proc = invoke("estimate", "--devices", "1.5k5")
    assert proc.returncode == 2 and "--devices" in proc.stderr


def test_active_params_is_honoured_in_json_and_csv():
    dense = json.loads(invoke("estimate", "--params", "47B", "--json", check=True).stdout)["rows"][2]
    moe = json.loads(invoke("estimate", "--params", "47B", "--active-params", "13B", "--json",
                            check=True).stdout)["rows"][2]
    assert moe["active_params"] == 13e9 and moe["params"] == 47e9
    assert moe["flops"] == pytest.approx(dense["flops"] * 13 / 47) and moe["hours"] < dense["hours"]
    assert moe["memory_per_device_gib"] == dense["memory_per_device_gib"]
    (row, *_) = csv.DictReader(io.StringIO(invoke("estimate", "--params", "47B", "--active-params", "13B",
                                                  "--range", "--csv", check=True).stdout))
    assert float(row["active_params"]) == 13e9
    text = invoke("estimate", "--params", "47B", "--active-params", "13B", check=True).stdout
    assert "47B, 13B active" in text


@pytest.mark.parametrize(("args", "words"), [
    (("--active-params", "8B"), "--active-params 8e+09 is more than --params 7e+09"),
    (("--params", "7B", "--active-params", "8B"), "is more than --params"),
    (("--model", "Mixtral 8x7B", "--active-params", "8B"), "--active-params goes with --params, not with --model"),
])
def test_active_params_refusals(args, words):
    proc = invoke("estimate", *args)
    assert proc.returncode == 2 and words in proc.stderr and proc.stdout == ""


def test_active_params_does_not_apply_with_scenarios(tmp_path):
    proc = invoke("estimate", "--scenarios", _file(tmp_path, FULL), "--active-params", "1B")
    assert proc.returncode == 2 and "--active-params does not apply with --scenarios" in proc.stderr


def test_layout_words_multiply_to_the_devices():
    out = invoke("estimate", "--model", "Mixtral 8x7B", "--devices", "64", "--tp", "2", "--ep", "8",
                 check=True).stdout
    assert "TP 2 x DP 32 (EP 8 within DP) on 64 devices" in out
    words = re.search(r"ZeRO 0, (.*) on 64 devices", out).group(1)
    product = 1
    for n in re.findall(r"(?:TP|PP|CP|DP) (\d+)", words):
        product *= int(n)
    assert product == 64
