"""A new user's review of `estimate` (findings 3, 4, 6, 7, 10, 12, 14 and the layout words): the
device asked for is kept in every output, the help reads the prior's goodput from calc, options
that fill a scenarios file's blank cells say what they filled, an all-blank row is skipped, an
error leaves stdout empty, Job takes a model's name, counts take parse_count's syntax and
--active-params is honoured, every scenario error names its row."""

import csv
import io
import json
import re

import pytest

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.calc.planning import scenarios as plans
from trainbudget.calc.prior.utilization import GOODPUT

BF16 = "H100 SXM, BF16 tensor core, dense"
FP8 = "H100 SXM, FP8 tensor core, dense"
HEAD = "name,params,tokens,device,devices,utilization,price,own\n"


def _file(tmp_path, text: str, name: str = "plans.csv") -> str:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return str(path)


# --- finding 3: the device asked for, and the row its range is worked out on ----------------------

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


# --- finding 4: the help's goodput is calc's -------------------------------------------------------

def test_help_states_the_priors_goodput_from_calc():
    text = " ".join(invoke("estimate", "--help", check=True).stdout.split())
    assert f"the prior's {GOODPUT:.2f} with --range" in text
    assert GOODPUT != 0.90 and "prior's 0.90" not in text


# --- finding 6: options that fill blank cells say what they filled ----------------------------------

FULL = HEAD + f'a,7B,1T,"{BF16}",8,0.4,2,\nb,7B,1T,"{BF16}",8,0.3,3,\n'
BLANK_U = HEAD + f'a,7B,1T,"{BF16}",8,0.4,2,\nb,7B,1T,"{BF16}",8,,3,\n'  # row 2: no utilization
BLANK_P = HEAD + f'a,7B,1T,"{BF16}",8,0.4,2,\nb,7B,1T,"{BF16}",8,0.3,,\n'  # row 2: no price


@pytest.mark.parametrize(("option", "cells"), [
    (("--price", "9"), "--price 9 filled no cell: every row has its own price or own cell"),
    (("--utilization", "0.2"), "--utilization 0.2 filled no cell: every row has its own utilization"),
    (("--range",), "--range filled no cell: every row has its own utilization"),
    (("--own", "30000,5", "--usd-per-kwh", "0.1"), "--own 30000,5 filled no cell"),
    (("--usd-per-kwh", "0.1"), "--usd-per-kwh 0.1 applied to no row: no row is priced as owned hardware"),
    (("--occupancy", "0.5"), "--occupancy 0.5 applied to no row"),
])
def test_a_filling_option_that_fills_nothing_says_so(tmp_path, option, cells):
    path = _file(tmp_path, FULL)
    proc = invoke("estimate", "--scenarios", path, *option, check=True)
    assert cells in proc.stderr
    got = json.loads(invoke("estimate", "--scenarios", path, *option, "--json", check=True).stdout)
    assert cells in got["filled"][option[0]]


@pytest.mark.parametrize(("option", "key", "words"), [
    (("--price", "9"), "usd_per_device_hour", "--price 9 filled the blank price cells of scenario 2"),
    (("--utilization", "0.2"), "utilization", "--utilization 0.2 filled the blank utilization cells of scenario 2"),
    (("--range",), "utilization_expected", "--range filled the blank utilization cells of scenario 2"),
    (("--own", "30000,5", "--usd-per-kwh", "0.1"), "usd_per_device_hour",
     "--own 30000,5 filled the blank price and own cells of scenario 2"),
])
def test_a_filling_option_says_which_rows_it_filled(tmp_path, option, key, words):
    blank = BLANK_P if option[0] in ("--price", "--own") else BLANK_U
    proc = invoke("estimate", "--scenarios", _file(tmp_path, blank), *option, "--json", check=True)
    got = json.loads(proc.stdout)
    assert words in proc.stderr and got["filled"][option[0]] == words
    assert got["rows"][1].get(key) is not None and got["rows"][0]["usd_per_device_hour"] == 2.0
    if option[0] == "--own":
        assert "--usd-per-kwh 0.1 applied to scenario 2" in proc.stderr


def test_no_filling_option_no_filled_lines(tmp_path):
    proc = invoke("estimate", "--scenarios", _file(tmp_path, FULL), "--json", check=True)
    assert proc.stderr == "" and json.loads(proc.stdout)["filled"] == {}
    assert "filled" not in json.loads(invoke("estimate", "--json", check=True).stdout)


def test_help_says_which_options_fill_blank_cells():
    text = " ".join(invoke("estimate", "--help", check=True).stdout.split())
    for cells in ("the blank utilization cells only", "the blank price cells only",
                  "the blank price and own cells only"):
        assert f"With --scenarios: fills {cells}" in text


# --- finding 7: an all-blank row is skipped; an error prints nothing on stdout ------------------------

@pytest.mark.parametrize("fmt", [(), ("--json",), ("--csv",)])
def test_a_row_of_only_commas_is_skipped(tmp_path, fmt):
    path = _file(tmp_path, FULL + ",,,,,,,\n  ,, ,,,,,\n")
    proc = invoke("estimate", "--scenarios", path, *fmt, check=True)
    if fmt == ("--json",):
        assert [r["name"] for r in json.loads(proc.stdout)["rows"]] == ["a", "b"]
    elif fmt == ("--csv",):
        assert [r["name"] for r in csv.DictReader(io.StringIO(proc.stdout))] == ["a", "b"]
    else:
        assert re.findall(r"^(\w+): 7B params", proc.stdout, re.M) == ["a", "b"]


@pytest.mark.parametrize("fmt", [(), ("--json",), ("--csv",)])
@pytest.mark.parametrize(("bad", "message"), [
    (f'c,7B,,"{BF16}",8,0.4,,\n', "scenario 3: tokens is required"),
    ("c,7B,1T,h100 sxm bf16,8,0.4,,\n", "scenario 3: unknown device 'h100 sxm bf16'"),
])
def test_an_error_midway_leaves_stdout_empty(tmp_path, fmt, bad, message):
    proc = invoke("estimate", "--scenarios", _file(tmp_path, FULL + ",,,,,,,\n" + bad), *fmt)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"trainbudget: error: {message}") and proc.stderr.count("\n") == 1


def test_the_reader_skips_blank_records_and_counts_the_rest(tmp_path):
    path = _file(tmp_path, HEAD + ",,,,,,,\n" + f'a,7B,1T,"{BF16}",8,0.4,,\n,,,,,,,\nb,7B,,"{BF16}",8,0.4,,\n')
    jobs = plans.scenario_jobs(plans.read_scenarios(path), calc.Job(params=1.0))
    assert next(jobs).name == "a"
    with pytest.raises(calc.TrainingBudgetError, match=r"^scenario 2: tokens is required"):
        next(jobs)


# --- finding 10: Job(model=name) ---------------------------------------------------------------------

def test_job_takes_a_preset_name():
    by_name = calc.budget(calc.Job(model="mixtral 8x7b "))
    by_preset = calc.budget(calc.Job(model=calc.model_preset("Mixtral 8x7B")))
    assert by_name.job.model is by_preset.job.model
    assert (by_name.params, by_name.active_params, by_name.flops) == (by_preset.params, by_preset.active_params,
                                                                      by_preset.flops)
    assert calc.Job(model="Mistral 7B").with_(tokens=2e9).model.name == "Mistral 7B"


@pytest.mark.parametrize(("model", "words"), [("Mixtral 9x7B", "model must be one of .*got 'Mixtral 9x7B'"),
                                              (7e9, "model must be a preset name .*got 7000000000 of type float"),
                                              ({"name": "x"}, "model must be a preset name")])
def test_job_refuses_another_model(model, words):
    with pytest.raises(calc.TrainingBudgetError, match=words):
        calc.budget(calc.Job(model=model))


def test_a_model_with_active_params_is_refused():
    with pytest.raises(calc.TrainingBudgetError, match="give active_params with params, not with a model"):
        calc.budget(calc.Job(model="Mixtral 8x7B", active_params=5e9))


# --- finding 12: counts, and --active-params ------------------------------------------------------------

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


# --- finding 14: every scenario error names its row ------------------------------------------------------

@pytest.mark.parametrize(("row", "words"), [
    (f'c,7B,1T,"{BF16}",8,0.4,,"30000,5"', "scenario 3: own needs usd_per_kwh"),
    ("c,7B,1T,h100 sxm bf16,8,0.4,,", "scenario 3: unknown device 'h100 sxm bf16'"),
])
def test_scenario_errors_name_the_row(tmp_path, row, words):
    proc = invoke("estimate", "--scenarios", _file(tmp_path, FULL + row + "\n"))
    assert proc.returncode == 2 and proc.stderr.startswith(f"trainbudget: error: {words}")


def test_a_model_row_with_active_params_says_what_was_given(tmp_path):
    text = "name,model,tokens,device,devices,utilization,active_params\n" + f'm,Mixtral 8x7B,1T,"{BF16}",8,0.4,5B\n'
    proc = invoke("estimate", "--scenarios", _file(tmp_path, text))
    assert proc.returncode == 2 and "scenario 1: active_params '5B' goes with params, not with model" in proc.stderr
    assert "params or model, not both" not in proc.stderr


# --- the layout's words: the product is the device count -------------------------------------------------

def test_layout_words_multiply_to_the_devices():
    out = invoke("estimate", "--model", "Mixtral 8x7B", "--devices", "64", "--tp", "2", "--ep", "8",
                 check=True).stdout
    assert "TP 2 x DP 32 (EP 8 within DP) on 64 devices" in out
    words = re.search(r"ZeRO 0, (.*) on 64 devices", out).group(1)
    product = 1
    for n in re.findall(r"(?:TP|PP|CP|DP) (\d+)", words):
        product *= int(n)
    assert product == 64


def test_many_filled_rows_are_counted_not_listed(tmp_path):
    path = _file(tmp_path, HEAD + f'p,7B,1T,"{BF16}",8,0.4,,\n' * 10)
    proc = invoke("estimate", "--scenarios", path, "--price", "9", "--csv", check=True)
    assert "--price 9 filled the blank price cells of scenarios 1, 2, 3, 4, 5, 6, 7, 8 and 2 more" in proc.stderr
    assert {r["usd_per_device_hour"] for r in csv.DictReader(io.StringIO(proc.stdout))} == {"9.0"}
