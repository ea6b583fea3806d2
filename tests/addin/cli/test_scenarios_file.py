"""`estimate --scenarios FILE`: a file of another dialect is refused saying why, every refusal names its
row, options that fill blank cells say what they filled, an all-blank row is skipped, an error leaves
stdout empty, the text block says the method, and a row with both a price and an own cell is refused."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.addin.cli.main import cli, run
from trainbudget.calc.planning import scenarios as calc_plans, scenarios as plans

H100 = "H100 SXM, BF16 tensor core, dense"


def _cli(capsys, *args):
    code = run(cli, list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def _scenarios(tmp_path, text):
    path = tmp_path / "plans.csv"
    path.write_bytes(text.encode("utf-8"))
    return str(path)


@pytest.mark.parametrize(("text", "needle"), [
    ("name;params;tokens;device;devices;utilization\na;7B;1B;H100 SXM, BF16 tensor core, dense;1;0.4\n",
     "scenario 1: the header is one column ('name;params;tokens;device;devices;utilization'): separate the "
     "cells with commas, not semicolons"),
    ('Name, Params,tokens,device,utilization\na,7B,1B,"H100 SXM, BF16 tensor core, dense",0.4\n',
     "unknown column(s) ' Params', 'Name' (known, lower case: name, params, tokens"),
])
def test_a_scenarios_file_of_another_dialect_is_refused_in_words_that_say_why(capsys, tmp_path, text, needle):
    """A semicolon-separated file (a spreadsheet's export where the decimal mark is a comma) was
    refused as '2 cell(s) beyond the header's columns', a capitalised or spaced header as unknown
    columns without saying what to write: now the message says what is wrong."""
    code, out, err = _cli(capsys, "estimate", "--scenarios", _scenarios(tmp_path, text))
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1
    if "Params" in text:
        assert "write 'params', 'name')" in err


def test_a_scenarios_refusal_names_the_row_as_the_file_does(capsys, tmp_path):
    """"scenario 2" counts the non-blank rows, so in a file with blank lines it is not the line a
    spreadsheet shows; the refusal now ends with the row's own name as well."""
    text = ('name,params,tokens,device,devices,utilization,price\n\n,,,,,,\n'
            f'a,7B,1B,"{H100}",1,40 %,2\n\nb,7B,1B,"{H100}",1,,2\n')
    code, out, err = _cli(capsys, "estimate", "--scenarios", _scenarios(tmp_path, text))
    assert code == 2 and out == ""
    assert err.strip().startswith("trainbudget: error: scenario 2: utilization is blank")
    assert err.strip().endswith("(the row named 'b')")
    nameless = text.replace("\nb,", "\n,")
    code, out, err = _cli(capsys, "estimate", "--scenarios", _scenarios(tmp_path, nameless))
    assert code == 2 and "scenario 2: utilization is blank" in err and "row named" not in err


def test_a_scenarios_text_block_says_the_method(capsys, tmp_path):
    """estimate --scenarios --method inference printed "a: 7B params, 1B tokens, ..." and hours a
    third of training's, nothing saying they are a forward pass's; each block now names the method
    when it is not a full fine-tune (whose words stay as they were)."""
    path = _scenarios(tmp_path, f'name,params,tokens,device,devices,utilization\na,7B,1B,"{H100}",1,0.4\n')
    for method, lead in (("inference", "a: inference of 7B params, 1B tokens (forward only), 1 x "),
                         ("lora", "a: LoRA fine-tune of 7B params, 1B tokens, 1 x "),
                         ("full", "a: 7B params, 1B tokens, 1 x ")):
        code, out, _ = _cli(capsys, "estimate", "--scenarios", path, "--method", method)
        b = calc.budget(calc.job(params=7e9, tokens=1e9, device=H100, utilization=0.4, method=method))
        assert code == 0 and out.startswith(lead) and f"{b.memory.total / 2 ** 30:,.1f} GiB per device" in out


def test_a_scenarios_row_with_a_price_and_an_own_cell_is_refused(capsys, tmp_path):
    """A row with both a price and an own cell was priced as owned hardware, its price cell left
    unread without a word; the command line refuses --price with --own, and so does the row now."""
    text = f'name,params,tokens,device,devices,utilization,price,own\na,7B,1B,"{H100}",1,0.4,aws:od,"30000,5"\n'
    code, out, err = _cli(capsys, "estimate", "--scenarios", _scenarios(tmp_path, text), "--usd-per-kwh", "0.1")
    assert code == 2 and out == "" and "scenario 1: give price or own, not both (got price 'aws:od'" in err
    code, out, _ = _cli(capsys, "estimate", "--scenarios", _scenarios(tmp_path, text.replace("aws:od", "")),
                        "--usd-per-kwh", "0.1", "--json")
    want = calc.budget(calc.job(params=7e9, tokens=1e9, device=H100, utilization=0.4,
                                price=calc_plans.parse_own("30000,5", 0.1)))
    assert code == 0 and json.loads(out)["rows"][0]["cost_usd"] == want.cost_usd


BF16 = "H100 SXM, BF16 tensor core, dense"

HEAD = "name,params,tokens,device,devices,utilization,price,own\n"


def _file(tmp_path, text: str, name: str = "plans.csv") -> str:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return str(path)

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
    jobs = plans.scenario_jobs(plans.read_scenarios(path), calc.job(params=1.0))
    assert next(jobs).name == "a"
    with pytest.raises(calc.TrainingBudgetError, match=r"^scenario 2: tokens is required"):
        next(jobs)


@pytest.mark.parametrize(("row", "words"), [
    (f'c,7B,1T,"{BF16}",8,0.4,,"30000,5"', "scenario 3: own needs --usd-per-kwh"),
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


def test_many_filled_rows_are_counted_not_listed(tmp_path):
    path = _file(tmp_path, HEAD + f'p,7B,1T,"{BF16}",8,0.4,,\n' * 10)
    proc = invoke("estimate", "--scenarios", path, "--price", "9", "--csv", check=True)
    assert "--price 9 filled the blank price cells of scenarios 1, 2, 3, 4, 5, 6, 7, 8 and 2 more" in proc.stderr
    assert {r["usd_per_device_hour"] for r in csv.DictReader(io.StringIO(proc.stdout))} == {"9.0"}


def test_scenario_blanks_fill_only_blank_cells_and_are_counted():
    """calc.ScenarioBlanks: a blank utilization, price or own cell takes the blanks' value, a given cell its
    own; Filled counts the rows each filled (and the owned ones), by row number."""
    rows = [{"name": "a", "params": "7B", "tokens": "1T", "device": BF16, "devices": "8", "utilization": "",
             "price": "", "own": ""},
            {"name": "b", "params": "7B", "tokens": "1T", "device": BF16, "devices": "8", "utilization": "0.5",
             "price": "3", "own": ""},
            {"name": "c", "params": "7B", "tokens": "1T", "device": BF16, "devices": "8", "utilization": "0.5",
             "price": "", "own": "30000,5"}]
    blanks = calc.ScenarioBlanks(utilization=0.25, price=2.0, usd_per_kwh=0.1, occupancy=0.5)
    filled = calc.ScenarioFilled()
    a, b, c = plans.scenario_jobs(rows, calc.job(params=1.0), blanks, filled)
    assert (a.utilization, b.utilization) == (0.25, 0.5)
    assert (calc.budget(a).usd_per_device_hour, calc.budget(b).usd_per_device_hour) == (2.0, 3.0)
    assert isinstance(c.pricing.price, calc.Owned) and c.pricing.price.occupancy == 0.5
    assert filled.counts == {"utilization": 1, "price": 1, "owned": 1} and filled.first["owned"] == [3]
    with pytest.raises(calc.TrainingBudgetError, match=r"^scenario 1: utilization is blank"):
        next(plans.scenario_jobs(rows[:1], calc.job(params=1.0)))  # no blanks: a blank utilization is refused


# --- the step model on a scenarios file ------------------------------------------------------------

STEP_FILE = ("name,model,tokens,device,devices,tp,pp,seq_len,global_batch,utilization\n"
             f'blank,Llama 3.1 70B,1T,"{H100}",64,8,4,,,\n'
             f'batch,Llama 3.1 70B,1T,"{H100}",64,8,4,8192,128,\n'
             f'priced,Llama 3.1 70B,1T,"{H100}",64,8,4,,,prior\n'
             f'asked,Llama 3.1 70B,1T,"{H100}",64,8,4,8192,,step\n')


def _rows(capsys, *args):
    code, out, err = _cli(capsys, "estimate", *args, "--json")
    assert code == 0, err
    return {r["name"]: r for r in json.loads(out)["rows"]}, err


def _one(capsys, *options):
    """estimate --step on the one job the scenarios rows describe, with `options` for its batch."""
    code, out, err = _cli(capsys, "estimate", "--step", "--model", "Llama 3.1 70B", "--tokens", "1T", "--device", H100,
                          "--devices", "64", "--tp", "8", "--pp", "4", *options, "--json")
    assert code == 0, err
    return json.loads(out)["rows"][0]


STEP_KEYS = ("step_seconds", "tokens_per_second_per_device", "mfu", "seq_len", "global_batch_tokens", "hours_expected",
             "cost_usd_expected", "step_tp_seconds", "step_bubble_seconds")


def test_step_fills_the_blank_utilization_cells_and_each_row_is_the_command_lines_answer(capsys, tmp_path):
    """--step with --scenarios: a blank utilization cell is timed by the step model (and the filled line
    says which rows), a "prior" cell keeps the prior, a "step" cell asks for it; a row's seq_len and
    global_batch set its batch as --seq-len and --global-batch do, with the same figures."""
    rows, err = _rows(capsys, "--scenarios", _file(tmp_path, STEP_FILE), "--step")
    assert "--step filled the blank utilization cells of scenarios 1, 2" in err
    plain, batch = _one(capsys), _one(capsys, "--seq-len", "8192", "--global-batch", "128")
    long = _one(capsys, "--seq-len", "8192")  # the default 1,024 sequences, at the row's length
    for key in STEP_KEYS:
        assert rows["blank"][key] == plain[key], key
        assert rows["batch"][key] == batch[key], key
        assert rows["asked"][key] == long[key], key
    assert rows["priced"]["step_seconds"] is None and "prior" in rows["priced"]["utilization_basis"]
    assert rows["batch"]["step_seconds"] != rows["blank"]["step_seconds"]


def test_a_step_cell_works_without_the_option_and_the_command_lines_batch_fills_the_rows(capsys, tmp_path):
    """A row's "step" cell needs no --step; with --step, --global-batch (sequences) fills the rows whose
    global_batch is blank, at each row's own sequence length."""
    rows, _ = _rows(capsys, "--scenarios", _file(tmp_path, STEP_FILE), "--utilization", "0.4")
    assert rows["asked"]["step_seconds"] == _one(capsys, "--seq-len", "8192")["step_seconds"]
    assert rows["blank"]["step_seconds"] is None and rows["blank"]["utilization"] == 0.4
    rows, _ = _rows(capsys, "--scenarios", _file(tmp_path, STEP_FILE), "--step", "--global-batch", "256")
    assert rows["blank"]["global_batch_tokens"] == 256 * 4096
    assert rows["asked"]["global_batch_tokens"] == 256 * 8192
    assert rows["batch"]["global_batch_tokens"] == 128 * 8192  # the row's own cell wins
    assert rows["asked"]["step_seconds"] == _one(capsys, "--seq-len", "8192", "--global-batch", "256")["step_seconds"]


def test_the_scenarios_text_prints_the_step_and_a_row_without_a_shape_is_refused_by_row(capsys, tmp_path):
    code, out, _ = _cli(capsys, "estimate", "--scenarios", _file(tmp_path, STEP_FILE), "--step")
    assert code == 0
    block = out.split("\nbatch:")[0]
    assert re.search(r"\n  step          step [\d.]+ s: compute \d+%.*MFU", block)
    assert "\n  utilization   step model 0." in block
    text = f'name,params,tokens,device,devices\nbare,7B,1T,"{H100}",8\n'
    code, out, err = _cli(capsys, "estimate", "--scenarios", _file(tmp_path, text), "--step")
    assert code == 2 and out == ""
    assert "scenario 1" in err and "needs the model's shape" in err and len(err.strip().splitlines()) == 1
