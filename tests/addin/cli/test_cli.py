"""The command line: the seed's table, figure for figure; formats; errors; help for every command;
every option of `estimate` honoured on every path, and its refusals. In-process (click's CliRunner via
tests.conftest.invoke) except the entry-point tests."""

import csv
import io
import json
import re

import pytest

from tests.conftest import invoke, run_cli
from trainbudget import calc
from trainbudget.addin.cli.main import cli
from trainbudget.calc.planning import scenarios as calc_plans

H100 = "H100 SXM, BF16 tensor core, dense"
GIB = 2.0 ** 30


def _json(*args: str) -> dict:
    return json.loads(invoke("estimate", *args, "--json", check=True).stdout)


def _csv(*args: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(invoke("estimate", *args, "--csv", check=True).stdout)))


def test_seed_table_figure_for_figure(seed_lines):
    """The starting document's hours and FLOPs line for line; its 112 GB (1e9 bytes) of model
    states printed as it wrote them, with the GiB the devices are measured in beside (112e9 / 2^30 = 104.3)."""
    out = run_cli("estimate", check=True).stdout  # the real entry point
    got = [line.split("   [")[0] for line in out.splitlines() if line.strip()]
    for line in seed_lines[1:]:
        assert line in got, line
    numbers = re.findall(r"\d[\d.,]*", "\n".join(seed_lines[1:]))
    assert numbers == re.findall(r"\d[\d.,]*", "\n".join(got[1:len(seed_lines)]))
    assert "112 GB" in seed_lines[0] and f"112 GB ({112e9 / GIB:.1f} GiB)" in got[0] and "per device" in got[0]
    assert "utilization is never 100%" in out


def test_json_and_csv_agree():
    data = _json("--params", "70B", "--tokens", "2T")
    rows = _csv("--params", "70B", "--tokens", "2T")
    assert [r["device"] for r in rows] == [r["device"] for r in data["rows"]]
    first = data["rows"][0]
    assert first["params"] == 70e9 and first["tokens"] == 2e12
    assert first["memory_per_device_gib"] * GIB == pytest.approx(70e9 * 16)
    assert float(rows[2]["hours"]) == pytest.approx(data["rows"][2]["hours"])


def test_options_change_the_figures():
    (row,) = _json("--device", "h100 sxm, bf16 tensor core, dense", "--utilization", "0.4", "--devices", "8")["rows"]
    assert row["hours"] == pytest.approx(42e18 / (989.5e12 * 0.4 * 8) / 3600)
    assert row["device_hours"] == pytest.approx(8 * row["hours"])
    assert row["days"] == pytest.approx(row["hours"] / 24)
    text = invoke("estimate", "--device", "H100 SXM, FP8 tensor core, dense", "--utilization", "0.5", check=True).stdout
    assert "at 50% utilization" in text


# ---- options were dropped with --price PROVIDER:PLAN, --range, --own, --scenarios -----

MODEL_ARGS = ("--model", "Llama 3.1 8B", "--tokens", "1T", "--devices", "64", "--device", H100)


@pytest.mark.parametrize("extra", [("--price", "aws:on_demand"), ("--range",), ("--own", "30000,5", "--usd-per-kwh",
                                                                                      "0.1")])
def test_model_is_honoured_with_price_range_and_own(extra):
    (row,) = _json(*MODEL_ARGS, *extra)["rows"]
    preset = calc.model_preset("Llama 3.1 8B").params()
    assert row["params"] == pytest.approx(preset.total) and row["params"] > 7.9e9  # was 7B
    assert row["flops"] == pytest.approx(6 * preset.total * 1e12)


def test_price_provider_plan_uses_the_model():
    """Was 9.21 h and $4,056 (a 7B) for Llama 3.1 8B; the model's 8.03B gives the right figures."""
    (row,) = _json(*MODEL_ARGS, "--utilization", "0.4", "--price", "aws:on_demand")["rows"]
    n = calc.model_preset("Llama 3.1 8B").params().total
    hours = calc.train_hours(n, 1e12, H100, utilization=0.4, devices=64)
    assert row["hours"] == pytest.approx(hours)
    assert row["cost_usd"] == pytest.approx(hours * 64 * row["usd_per_device_hour"])
    assert row["price_as_of"] and row["price_age_days"] >= 0


@pytest.mark.parametrize("extra", [("--range",), ("--price", "lambda"), ("--own", "30000,5", "--usd-per-kwh", "0.1")])
def test_layout_method_and_zero_are_honoured_on_every_path(extra):
    args = ("--model", "Mixtral 8x7B", "--devices", "64", "--tp", "2", "--ep", "8", "--device", H100,
            "--method", "lora", "--optimizer", "sgd", "--zero-stage", "3", "--pue", "1.3")
    (row,) = _json(*args, *extra)["rows"]
    job = calc.job(model=calc.model_preset("Mixtral 8x7B"), devices=64, tp=2, ep=8,
                   method="lora", optimizer="sgd", zero_stage=3)
    assert row["memory_per_device_gib"] * GIB == pytest.approx(calc.budget(job).memory.total)
    assert row["dp"] == 32 and row["zero_stage"] == 3 and row["method"] == "lora"
    assert row["pue"] == 1.3


def test_scenarios_rows_take_the_command_lines_layout_and_method(tmp_path):
    path = tmp_path / "plans.csv"
    path.write_text(f'name,params,tokens,device,devices,utilization\nA,7B,1T,"{H100}",8,40%\n', "utf-8")
    (row,) = _json("--scenarios", str(path), "--zero-stage", "3", "--tp", "2", "--pue", "1.2")["rows"]
    want = calc.budget(calc.job(params=7e9, tokens=1e12, devices=8, tp=2, zero_stage=3,
                                utilization=0.4, pue=1.2))
    assert row["memory_per_device_gib"] * GIB == pytest.approx(want.memory.total)
    assert row["energy_kwh"] == pytest.approx(want.energy_kwh) and row["utilization"] == 0.4


def test_scenario_rows_take_their_own_method_and_pue(tmp_path):
    """A scenarios file's method and pue columns, as the workbook's Scenarios plans have them: a row's
    cell is that row's Job's (a blank one takes --method / --pue), so each row equals calc.budget of it;
    the text says each row's method and PUE. (Before, both columns were refused as unknown.)"""
    path = tmp_path / "plans.csv"
    path.write_text("name,params,tokens,device,devices,utilization,price,method,pue\n"
                    f'T,7B,1T,"{H100}",8,40%,2.5,,\n'
                    f'I,7B,1T,"{H100}",8,40%,2.5,Inference,1.3\n'
                    f'L,7B,1T,"{H100}",8,40%,2.5,lora,\n', "utf-8")
    rows = _json("--scenarios", str(path), "--method", "qlora", "--pue", "1.1")["rows"]
    for row, method, pue in zip(rows, ("qlora", "inference", "lora"), (1.1, 1.3, 1.1), strict=True):
        want = calc.budget(calc.job(params=7e9, tokens=1e12, devices=8, utilization=0.4, price=2.5,
                                    method=method, pue=pue))
        assert row["method"] == method and row["pue"] == pue
        assert row["hours"] == want.hours and row["energy_kwh"] == want.energy_kwh
        assert row["memory_per_device_gib"] * GIB == want.memory.total
    assert rows[1]["hours"] == pytest.approx(rows[0]["hours"] / 2)  # a forward pass (2) against QLoRA's step (4)
    text = invoke("estimate", "--scenarios", str(path), "--method", "qlora", "--pue", "1.1", check=True).stdout
    assert "I: inference of 7B params" in text and "T: QLoRA fine-tune of 7B params" in text
    assert "(at PUE 1.3)" in text and "(at PUE 1.1)" in text


# ---- item 2: one memory figure, on the layout, with the method; whether it fits ----------------------

def test_one_memory_figure_on_the_layout():
    out = invoke("estimate", "--model", "Llama 3.1 70B", "--devices", "8", "--tp", "8", "--device", H100,
                 check=True).stdout
    want = calc.budget(calc.job(model=calc.model_preset("Llama 3.1 70B"), devices=8, tp=8))
    gib = f"{want.memory.total / GIB:,.1f}"
    assert f"({gib} GiB) of weights, gradients and optimizer state per device" in out and "TP 8" in out
    assert re.findall(r"([\d,.]+) GiB\) of", out) == [gib]  # no second, different figure
    assert re.findall(r"([\d,.]+) GB ", out) == [f"{want.memory.total / 1e9:,.0f}"]  # the same bytes, decimal


def test_header_names_the_method_and_zero_stage():
    out = invoke("estimate", "--method", "lora", "--zero-stage", "3", "--devices", "8", "--device", H100,
                 check=True).stdout
    assert out.startswith("LoRA fine-tune of a 7B") and "ZeRO 3" in out and "ZeRO 0" not in out


def test_a_job_that_does_not_fit_says_so():
    args = ("--model", "Mixtral 8x7B", "--devices", "8", "--device", H100)
    out = invoke("estimate", *args, check=True).stdout
    assert "does NOT fit" in out
    (row,) = _json(*args)["rows"]
    assert row["fits"] is False and row["headroom_gib"] < 0
    (ok,) = _json(*args, "--zero-stage", "3", "--devices", "64")["rows"]
    assert ok["fits"] is True and ok["headroom_gib"] > 0


# ---- item 5: assumptions stated ------------------------------------------------------------------------

@pytest.mark.parametrize("extra", [(), ("--range",), ("--utilization", "40%", "--goodput", "0.9")])
def test_every_text_output_says_fit_utilization_goodput_and_days(extra):
    out = invoke("estimate", "--device", H100, *extra, check=True).stdout
    assert "utilization" in out and "goodput" in out and "days" in out and "fit" in out


def test_goodput_is_applied_and_stated():
    (plain,) = _json("--device", H100, "--utilization", "0.4")["rows"]
    (good,) = _json("--device", H100, "--utilization", "0.4", "--goodput", "90%")["rows"]
    assert plain["goodput"] == 1.0 and good["goodput"] == 0.9
    assert good["hours"] == pytest.approx(plain["hours"] / 0.9)


def test_blank_scenario_utilization_is_an_error_naming_the_row(tmp_path):
    """It became 100% without a word (737 h instead of about 1,900 h)."""
    path = tmp_path / "plans.csv"
    path.write_text(f'name,params,tokens,device,devices,utilization\nA,7B,1T,"{H100}",8,0.4\nB,7B,1T,"{H100}",8,\n',
                    "utf-8")
    proc = invoke("estimate", "--scenarios", str(path))
    assert proc.returncode == 2 and "scenario 2: utilization is blank" in proc.stderr
    (a, b) = _json("--scenarios", str(path), "--utilization", "0.3")["rows"]  # a stated default for blanks
    assert a["utilization"] == 0.4 and b["utilization"] == 0.3


def test_scenario_cells_take_the_command_lines_syntax(tmp_path):
    path = tmp_path / "plans.csv"
    path.write_text(f'name,params,tokens,device,devices,utilization,price\nA,7B,1T,"{H100}",8,40%,2.5\n', "utf-8")
    (row,) = _json("--scenarios", str(path))["rows"]
    assert row["utilization"] == 0.4 and row["params"] == 7e9
    assert row["cost_usd"] == pytest.approx(calc.train_cost(7e9, 1e12, H100, usd_per_device_hour=2.5,
                                                            utilization=0.4, devices=8))


def test_a_scenario_row_names_a_model_or_its_active_params(tmp_path):
    """A model column (a preset in place of params) and an active_params column (a mixture of
    experts): each row is the same job as the command line's --model, or a Job with active_params."""
    path = tmp_path / "plans.csv"
    path.write_text("name,model,params,active_params,tokens,device,devices,utilization\n"
                    f'M,Mixtral 8x7B,,,1T,"{H100}",64,40%\n'
                    f'E,,46.7B,12.9B,1T,"{H100}",64,40%\n', "utf-8")
    (m, e) = _json("--scenarios", str(path), "--zero-stage", "3")["rows"]
    (cli_m,) = _json("--model", "Mixtral 8x7B", "--tokens", "1T", "--device", H100, "--devices", "64",
                     "--utilization", "40%", "--zero-stage", "3")["rows"]
    assert m["hours"] == cli_m["hours"] and m["memory_per_device_gib"] == cli_m["memory_per_device_gib"]
    want = calc.budget(calc.job(params=46.7e9, active_params=12.9e9, tokens=1e12, devices=64, zero_stage=3,
                                utilization=0.4))
    assert e["active_params"] == 12.9e9 and e["hours"] == pytest.approx(want.hours)
    assert e["hours"] < 0.3 * calc.budget(want.job.with_(active_params=None)).hours  # not read as dense


# ---- item 6: one row schema, exact numbers, valid JSON ---------------------------------------------------

KEYS = {"hours", "days", "device_hours", "cost_usd", "energy_kwh", "memory_per_device_gib", "fits",
        "headroom_gib", "utilization", "goodput", "params", "active_params", "tokens", "devices", "device",
        "usd_per_device_hour", "price", "price_source", "price_as_of", "price_age_days"}


def test_one_row_schema_on_every_path(tmp_path):
    path = tmp_path / "plans.csv"
    path.write_text(f'name,params,tokens,device,devices,utilization\nA,7B,1T,"{H100}",8,0.4\n', "utf-8")
    point = [_json("--device", H100)["rows"][0], _json("--device", H100, "--price", "aws:on_demand")["rows"][0],
             _json("--device", H100, "--own", "30000,5", "--usd-per-kwh", "0.1")["rows"][0],
             _json("--scenarios", str(path))["rows"][0]]
    for row in point:
        assert set(row) >= KEYS, KEYS - set(row)
    ranged = _json("--device", H100, "--range")["rows"][0]
    for fig in ("hours", "days", "device_hours", "cost_usd", "energy_kwh", "utilization"):
        assert {f"{fig}_low", f"{fig}_expected", f"{fig}_high"} <= set(ranged)
    assert set(point[0]) == set(point[1]) == set(point[2]) == set(point[3])
    header = invoke("estimate", "--scenarios", str(path), "--csv", check=True).stdout.splitlines()[0].split(",")
    assert {"params", "tokens", "devices", "hours", "hours_low"} <= set(header)


def test_counts_are_exact():
    """8.03B was written 8029999999.999999."""
    (row,) = _json("--params", "8.03B", "--device", H100)["rows"]
    assert row["params"] == 8030000000 and isinstance(row["params"], int)


def test_json_is_strict_rfc_8259():
    text = invoke("estimate", "--range", "--json", check=True).stdout
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert "NaN" not in text and "Infinity" not in text


# ---- refusals -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "needle"), [
    (["--params", "-7B"], "--params must be > 0"),
    (["--params", "seven"], "--params must be a count"),
    (["--utilization", "0"], "--utilization must be in (0, 1]"),
    (["--devices", "1.5"], "--devices must be a whole number"),
    (["--device", "H10"], "unknown device 'H10'; closest"),
    (["--model", ""], "--model must not be empty"),
    (["--price", ""], "--price must not be empty"),
    (["--own", ""], "--own must not be empty"),
    (["--usd-per-kwh", "nan"], "--usd-per-kwh must be a finite number (got 'nan')"),  # refused as read
    (["--usd-per-kwh", "0.1"], "--usd-per-kwh applies to owned hardware"),
    (["--occupancy", "0"], "--occupancy must be in (0, 1] (got '0')"),  # refused as read
    (["--occupancy", "0.5"], "--occupancy applies to owned hardware"),
    (["--range", "--pue", "nan"], "--pue must be a finite number"),
    (["--range", "--pue", "0.5"], "--pue must be >= 1"),
    (["--model", "Llama 3.1 70B", "--tp", "7", "--devices", "7"], "--tp must divide n_heads"),
    (["--model", "Llama 3.1 70B", "--pp", "81", "--devices", "81"], "--pp must be at most n_layers"),
    (["--model", "Mixtral 8x7B", "--ep", "3", "--devices", "3"], "--ep must divide n_experts"),
    (["--range", "--utilization", "0.4"], "give --range or --utilization, not both"),
    (["--price", "2", "--own", "1,5", "--usd-per-kwh", "0.1"], "give --price or --own, not both"),
    (["--params", "7B", "--model", "Llama 3.1 8B"], "give --params or --model"),
    (["--json", "--csv"], "give --json or --csv"),
    (["--own", "1,2"], "own needs --usd-per-kwh"),
    (["--price", "aws:forever"], "plan must be one of"),
    (["--price", "1e300", "--params", "1e15", "--tokens", "1e15", "--device", H100],
     "the cost overflows float64: usd_per_device_hour 1e+300"),  # was inf, printed as null in JSON
])
def test_bad_input_one_line_exit_2(args, needle):
    proc = invoke("estimate", *args)
    assert proc.returncode == 2, proc.stdout
    assert needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


PLANS = "name,params,tokens,device,devices,utilization,price,own"
MODELS = "name,model,params,active_params,tokens,device,devices,utilization"


@pytest.mark.parametrize(("header", "row", "needle"), [
    (PLANS, "A,7B,1T,{d},8,0.4,nan", "scenario 1: price must be a finite number"),
    (PLANS, "A,7B,1T,{d},8,0.4,-5", "scenario 1: price must be >= 0"),
    (PLANS, "A,7B,1T,{d},8,0.4,1e309", "scenario 1: price must be a finite number"),
    (PLANS, "A,7B,1T,{d},8,0.4,2.5,,surplus", "scenario 1: 1 cell(s) beyond the header's columns"),
    (PLANS, "A,7B,1T,{d},8,40,2.5", "did you mean 0.40?"),
    (MODELS, "M,Mixtral 8x7B,46.7B,,1T,{d},8,0.4", "scenario 1: give params or model, not both"),
    (MODELS, "M,Llama 9,,,1T,{d},8,0.4", "scenario 1: model must be one of"),
    (MODELS, "M,,7B,8B,1T,{d},8,0.4", "scenario 1: active_params '8B' is more than params '7B'"),
    (MODELS, "M,,,,1T,{d},8,0.4", "scenario 1: params (or model) is required"),
    (PLANS + ",method", "A,7B,1T,{d},8,0.4,2.5,,train", "scenario 1: method must be one of full, lora, qlora"),
    (PLANS + ",pue", "A,7B,1T,{d},8,0.4,2.5,,0.5", "scenario 1: pue must be >= 1 (got '0.5')"),
    (PLANS + ",pue", "A,7B,1T,{d},8,0.4,2.5,,x", "scenario 1: pue must be a number"),
])
def test_bad_scenario_cells_are_refused(tmp_path, header, row, needle):
    path = tmp_path / "plans.csv"
    path.write_text(header + "\n" + row.format(d=f'"{H100}"') + "\n", "utf-8")
    proc = invoke("estimate", "--scenarios", str(path), "--json")
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_scenarios_refuse_options_they_replace(tmp_path):
    path = tmp_path / "plans.csv"
    path.write_text(f'name,params,tokens,device,devices,utilization\nA,7B,1T,"{H100}",8,0.4\n', "utf-8")
    proc = invoke("estimate", "--scenarios", str(path), "--params", "13B")
    assert proc.returncode == 2 and "--params does not apply with --scenarios" in proc.stderr


def test_a_fifo_scenarios_file_is_refused_without_blocking(tmp_path):
    import os
    fifo = tmp_path / "plans.fifo"
    os.mkfifo(fifo)
    proc = invoke("estimate", "--scenarios", str(fifo))
    assert proc.returncode == 2 and "not a regular file" in proc.stderr


def test_devices_listing():
    rows = json.loads(invoke("devices", "--json", check=True).stdout)
    assert len(rows) >= 30 and all(r["source"] for r in rows)
    assert H100 in invoke("devices", check=True).stdout


def test_every_command_has_help():
    for name in cli.commands:
        proc = invoke(name, "--help", check=True)
        assert "Usage:" in proc.stdout and cli.commands[name].help.split(".")[0][:30] in proc.stdout


def test_the_entry_point_refuses_in_one_line():
    proc = run_cli("estimate", "--model", "")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_a_large_scenarios_file_is_streamed(tmp_path):
    """A 1e6-row file peaked at 1.3 GB (a list of dicts of everything); rows are now read, made into
    Jobs and written one at a time: reading 10x the rows costs about the same peak memory."""
    import tracemalloc

    from trainbudget.calc.planning import scenarios as plans

    def peak(rows: int) -> int:
        path = tmp_path / f"plans{rows}.csv"
        path.write_text("name,params,tokens,device,devices,utilization\n"
                        + f'A,7B,1T,"{H100}",8,0.4\n' * rows, "utf-8")
        base = calc.job(params=1.0)
        tracemalloc.start()
        n = sum(1 for _ in plans.scenario_jobs(plans.read_scenarios(path), base))
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert n == rows
        return top

    small, large = peak(500), peak(5_000)
    assert large < 1.5 * small + 200_000  # a list of 5,000 row dicts alone would be about 4 MB


def test_scenarios_own_column_takes_the_tariff(tmp_path):
    path = tmp_path / "plans.csv"
    path.write_text(f'name,params,tokens,device,devices,utilization,price,own\nC,13B,1T,"{H100}",64,0.3,,"30000,5"\n',
                    "utf-8")
    (row,) = _json("--scenarios", str(path), "--usd-per-kwh", "0.1")["rows"]
    assert row["usd_per_device_hour"] == pytest.approx(30000 / (5 * 8760) + 0.7 * 1.58 * 0.1)
    assert row["pue"] == 1.58 and row["energy_kwh"] == pytest.approx(row["device_hours"] * 0.7 * 1.58)


# --- a file option's missing path: one line naming the option, exit 2, on every command ----------

FILE_OPTIONS = ("--config", "--scenarios", "--catalog")
FILE_OPTION_USES = sorted((name, opt) for name, command in cli.commands.items() for p in command.params
                          for opt in p.opts if opt in FILE_OPTIONS)


def test_every_command_with_a_file_option_is_checked():
    assert {("estimate", "--config"), ("fit", "--config"), ("plan", "--config"), ("estimate", "--scenarios"),
            ("estimate", "--catalog"), ("devices", "--catalog"), ("runs", "--catalog"),
            ("prices", "--catalog")} <= set(FILE_OPTION_USES)


@pytest.mark.parametrize(("command", "option"), FILE_OPTION_USES)
def test_a_missing_or_folder_path_is_one_line_and_exit_2(command, option, tmp_path):
    """`fit --config MISSING` said "is not JSON ... cannot be read"; every command now checks the
    path as `estimate --config` does, before any other option is missing."""
    missing = tmp_path / "nope.json"
    for path, why in ((missing, "does not exist"), (tmp_path, "is a directory")):
        got = invoke(command, option, str(path))
        assert got.returncode == 2 and got.stdout == ""
        assert got.stderr == f"trainbudget: error: Invalid value for '{option}': File '{path}' {why}.\n"


def test_a_missing_config_reads_the_same_through_the_entry_point(tmp_path):
    missing = str(tmp_path / "config.json")
    for command in ("estimate", "fit", "plan"):
        got = run_cli(command, "--config", missing)
        assert got.returncode == 2
        assert got.stderr == f"trainbudget: error: Invalid value for '--config': File '{missing}' does not exist.\n"


# --- a price typed only on the FP8 row the user chose: every range is priced at it ---------------

FP8 = "H100 SXM, FP8 tensor core, dense"


def _priced(prices: dict[str, float]) -> calc.DeviceTable:
    import dataclasses

    return calc.DeviceTable([dataclasses.replace(d, usd_per_device_hour=prices[d.name]) if d.name in prices else d
                             for d in calc.catalog()])


def test_the_chosen_rows_price_prices_the_range_too():
    """The range's rate is the 16-bit row's (the prior is measured against BF16 peaks), but its price
    is the chosen FP8 row's own, as the point figure's: it said "no price" (the BF16 row has none)."""
    table = _priced({FP8: 3.0})
    job = calc.job(params=7e9, tokens=1e10, device=FP8, devices=8, table=table)
    point, ranged = calc.budget(job.with_(utilization=0.4)), calc.budget(job.with_(utilization="prior"))
    assert ranged.device == H100  # the rate's row
    assert point.usd_per_device_hour == ranged.usd_per_device_hour == 3.0
    assert ranged.cost_usd.expected == pytest.approx(ranged.device_hours.expected * 3.0)
    assert ranged.price_label == point.price_label == "the device row's own price"
    row = calc_plans.plan_row(7e9, 1e10, FP8, devices=8, utilization="prior", table=table)
    assert row["usd_expected"] == pytest.approx(ranged.cost_usd.expected)
    # one rule both ways: a price only on the 16-bit row is not the FP8 row's price
    other = calc.budget(job.with_(table=_priced({H100: 2.0}), utilization="prior"))
    assert other.cost_usd is None and other.price_label == "no price"


def test_estimate_range_on_a_priced_fp8_row_prints_its_cost(tmp_path):
    text = invoke("devices", "--csv", check=True).stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    for r in rows:
        if r["name"] == FP8:
            r["usd_per_device_hour"] = "3.0"
    path = tmp_path / "devices.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    got = json.loads(invoke("estimate", "--device", FP8, "--range", "--catalog", str(path), "--json",
                            check=True).stdout)["rows"][0]
    assert got["cost_usd_expected"] == pytest.approx(got["device_hours_expected"] * 3.0)
    assert got["cost_usd_low"] < got["cost_usd_expected"] < got["cost_usd_high"]
