"""A hostile pass over the newest doors (plan, prices by offering, scenarios files, inference): each
test a defect found by comparing doors, failing before its fix. Figures are calc's own (calc.budget,
calc_prices.lookup): nothing here is typed in."""

from __future__ import annotations

import json

import pytest

from trainbudget import calc
from trainbudget.addin.cli.main import cli, run
from trainbudget.calc.money import prices
from trainbudget.calc.planning import rank as plan, scenarios as calc_plans

H100 = "H100 SXM, BF16 tensor core, dense"
B200 = "B200, BF16 tensor core, dense"
PLAN = ("plan", "--params", "7B", "--tokens", "100B", "--days", "10")


def _cli(capsys, *args):
    code = run(cli, list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.parametrize(("extra", "needle"), [
    (("--utilization", "0.4", "--case", "high"), "--case high picks a case of the prior's range"),
    (("--usd-per-kwh", "0.1"), "--usd-per-kwh applies to owned hardware: give --own CAPEX,LIFE too"),
    (("--limit", "-1"), "--limit must be >= 0 (got '-1')"),
])
def test_plan_refuses_an_option_that_would_change_nothing(capsys, extra, needle):
    """plan took --case with a given utilization (one case), --usd-per-kwh without --own and a
    negative --limit (it printed all rows but the last and "... 1 more"), changing nothing: as
    estimate does, it now refuses them, one line and exit 2."""
    code, out, err = _cli(capsys, *PLAN, "--device", H100, *extra)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and needle in err


def test_plan_refuses_a_price_no_planned_device_has_in_calcs_words(capsys):
    """plan --device H100 --price aws:spot printed "no price" rows marked "not feasible: model states
    only" and exit 0, where estimate and calc.budget refuse the spec: now refused in lookup's words."""
    with pytest.raises(calc.TrainingBudgetError) as want:
        calc.budget(calc.Job(params=7e9, device=H100, price="aws:spot"))
    code, out, err = _cli(capsys, *PLAN, "--device", H100, "--price", "aws:spot")
    assert code == 2 and out == "" and err.strip() == f"trainbudget: error: {want.value}"
    code, out, err = _cli(capsys, *PLAN, "--device", H100, "--device", B200, "--price", "aws:spot")
    assert code == 2 and "price: no aws spot price for any of the 2 devices planned" in err
    with pytest.raises(calc.TrainingBudgetError, match="no aws spot price for 'H100"):
        plan.rank_plans(1e11, 10, params=7e9, devices=[H100], price="aws:spot")


def test_a_plan_without_a_price_says_so_before_the_devices_note():
    """A device the price names no row for (B200 at aws's H100 offering), or a device without any
    price: its plans are infeasible for want of a price, and the note says that first (it said only
    "model states only (no shape: no activations)", which is no reason)."""
    plans = plan.rank_plans(1e11, 10, params=7e9, devices=[H100, B200], price="aws:od:p5.48xlarge",
                            utilization=0.4)
    priced = [p for p in plans if p.device == H100]
    unpriced = [p for p in plans if p.device == B200]
    assert priced and unpriced and all(p.feasible for p in priced) and not any(p.feasible for p in unpriced)
    assert all(p.note.startswith("no aws on_demand 'p5.48xlarge' price for this device; ") for p in unpriced)
    assert prices.spec_words("aws:od:p5.48xlarge") == "aws on_demand 'p5.48xlarge'"
    measured = "M3 Ultra, PyTorch MPS bf16 matmul (measured)"
    own = plan.rank_plans(1e11, 10, params=7e9, devices=[measured], utilization=0.4)
    assert own and all(p.note.startswith("no price; ") and not p.feasible for p in own)


def test_a_params_only_plan_has_the_planners_device_bound(capsys):
    """--days 1e-9 planned 193,681,587,499 H100s as feasible for a params-only job, while a model
    with a shape is refused past calc_layouts.MAX_FIT_DEVICES: now the same bound for both."""
    plans = plan.rank_plans(1e11, 1e-9, params=7e9, devices=[H100])
    assert plans and not any(p.feasible for p in plans)
    assert all("the planner considers" in p.note for p in plans)
    code, out, _ = _cli(capsys, *PLAN[:-1], "1e-9", "--device", H100, "--json")
    data = json.loads(out)
    assert code == 0 and data["fastest"] is None and all(r["devices"] is None for r in data["plans"])


@pytest.mark.parametrize(("extra", "needle"), [
    (("--optimizer", "sgd"), "--optimizer does not apply to --method inference"),
    (("--zero-stage", "1"), "--zero-stage 1 shards optimizer states, which --method inference has none of"),
    (("--zero-stage", "2"), "--zero-stage 2 shards optimizer states and gradients"),
])
def test_inference_refuses_an_optimizer_and_a_zero_stage_that_change_nothing(capsys, extra, needle):
    """estimate --method inference --optimizer sgd (or ZeRO 1 / 2) was taken and changed nothing (the
    JSON even said "optimizer": "sgd"); the estimate's own rule is that an option that does not apply
    is refused. ZeRO 3 still shards the weights, and a training job still takes --optimizer."""
    base = ("estimate", "--params", "7B", "--device", H100, "--utilization", "0.4", "--json")
    code, out, err = _cli(capsys, *base, "--method", "inference", *extra)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1
    code, out, _ = _cli(capsys, *base, "--method", "inference", "--zero-stage", "3", "--devices", "8")
    row = json.loads(out)["rows"][0]
    want = calc.budget(calc.Job(params=7e9, tokens=1e9, device=H100, devices=8, utilization=0.4,
                                method="inference", zero_stage=3))
    assert code == 0 and row["memory_per_device_gib"] == want.memory.total / 2 ** 30
    assert row["optimizer"] is None and row["optimizer_gib"] == row["gradients_gib"] == 0.0  # it said "adamw"
    code, out, _ = _cli(capsys, *base, "--optimizer", "sgd")
    assert code == 0 and json.loads(out)["rows"][0]["optimizer"] == "sgd"


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


def test_prices_names_an_unknown_provider_as_calc_does(capsys):
    """prices --provider nope said "no prices for device None from 'nope'" (no device was given);
    now it says the provider is unknown and lists the known ones, as a price spec's refusal does."""
    code, out, err = _cli(capsys, "prices", "--provider", "nope")
    assert code == 2 and out == ""
    assert f"no nope prices, unknown provider (providers: {', '.join(prices.providers())})" in err
    code, out, err = _cli(capsys, "prices", "--provider", " AWS", "--json")
    assert code == 0 and {r["provider"] for r in json.loads(out)} == {"aws"}


def test_the_command_line_reads_method_and_optimizer_in_any_case_as_calc_does(capsys):
    """calc.budget, TRAIN_BUDGET and the Lite functions take method 'Inference' and optimizer 'SGD'
    (calc_checks.choice reads any case); estimate refused them (click's Choice was case sensitive)."""
    base = ("estimate", "--params", "7B", "--device", H100, "--utilization", "0.4", "--json")
    for method, optimizer in (("Inference", None), ("FULL", "SGD")):
        code, out, err = _cli(capsys, *base, "--method", method, *(("--optimizer", optimizer) if optimizer else ()))
        want = calc.budget(calc.Job(params=7e9, tokens=1e9, device=H100, utilization=0.4, method=method,
                                    optimizer=optimizer or "adamw"))
        row = json.loads(out)["rows"][0]
        assert code == 0 and err == ""
        assert (row["flops"], row["hours"], row["memory_per_device_gib"]) == (
            want.flops, want.hours, want.memory.total / 2 ** 30)
        assert row["method"] == method.lower()


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


def test_a_plan_says_how_old_its_prices_are(capsys):
    """azure:3yr prices the A100 80GB from a row of 2024-01-29 (the only one that publishes 3yr for it,
    sold 8 per instance): plan's table showed no date at all and its rows no age, where estimate says
    'as of ... (N days old)'. The rows now carry price_age_days (calc.budget's), the text the oldest
    date shown."""
    a100 = "A100 SXM 80GB, BF16 tensor core, dense"
    args = (*PLAN, "--device", a100, "--price", "azure:3yr")
    row, plan_name = prices.lookup("azure:3yr", a100)
    code, out, _ = _cli(capsys, *args, "--json")
    rows = json.loads(out)["plans"]
    assert code == 0 and rows and {r["price_as_of"] for r in rows} == {row.as_of}
    want = calc.budget(calc.Job(params=7e9, device=a100, price="azure:3yr"))
    assert {r["price_age_days"] for r in rows} == {want.price_age_days} and want.price_age_days > 365
    code, out, _ = _cli(capsys, *args)
    assert code == 0 and f"the oldest shown: azure:{plan_name} {row.offering}, as of {row.as_of}" in out


@pytest.mark.parametrize(("spec", "tail"), [
    ("aws:spot", "; aws publishes on_demand for it)"),
    ("gcp:spot:a3-highgpu-1g", "; gcp publishes on_demand, 1yr, 3yr for it)"),
    ("aws:od:p5en.48xlarge", "; that aws offering prices H200 SXM)"),
    ("lambda:od:8x  H100 SXM", "; lambda's offerings for it: 1x H100 SXM, 8x H100 SXM)"),
])
def test_a_price_refusal_says_what_the_provider_has(capsys, spec, tail):
    """"no aws spot price for 'H100 ...' (providers with prices for it: aws, ...)" listed aws among
    the providers with prices, which reads as a contradiction; the refusal now says which plans the
    provider publishes for the device, which hardware a named offering prices, or the provider's
    offerings for it. The same words from calc, estimate, plan and a scenarios row."""
    with pytest.raises(calc.TrainingBudgetError) as said:
        calc.budget(calc.Job(params=7e9, device=H100, price=spec))
    assert str(said.value).endswith(tail) and str(said.value).startswith("price: no ")
    for args in (("estimate", "--params", "7B", "--device", H100), (*PLAN, "--device", H100)):
        code, out, err = _cli(capsys, *args, "--price", spec)
        assert code == 2 and out == "" and err.strip() == f"trainbudget: error: {said.value}"


def test_a_scenarios_text_block_says_the_method(capsys, tmp_path):
    """estimate --scenarios --method inference printed "a: 7B params, 1B tokens, ..." and hours a
    third of training's, nothing saying they are a forward pass's; each block now names the method
    when it is not a full fine-tune (whose words stay as they were)."""
    path = _scenarios(tmp_path, f'name,params,tokens,device,devices,utilization\na,7B,1B,"{H100}",1,0.4\n')
    for method, lead in (("inference", "a: inference of 7B params, 1B tokens (forward only), 1 x "),
                         ("lora", "a: LoRA fine-tune of 7B params, 1B tokens, 1 x "),
                         ("full", "a: 7B params, 1B tokens, 1 x ")):
        code, out, _ = _cli(capsys, "estimate", "--scenarios", path, "--method", method)
        b = calc.budget(calc.Job(params=7e9, tokens=1e9, device=H100, utilization=0.4, method=method))
        assert code == 0 and out.startswith(lead) and f"{b.memory.total / 2 ** 30:,.1f} GiB per device" in out


def test_plan_says_why_owned_hardware_prices_no_plan_on_a_device_without_watts():
    """plan --own dropped the owned option without a word on a device without watts (a TPU, a
    measured row), where estimate --own refuses it ('has no watts for the energy share'): the plan
    now lists the owned option as not feasible, in calc.budget's words."""
    tpu = "TPU v6e (Trillium), BF16, dense"
    own = calc_plans.parse_own("30000,5", 0.1)
    with pytest.raises(calc.TrainingBudgetError) as said:
        calc.budget(calc.Job(params=7e9, device=tpu, price=own))
    plans = plan.rank_plans(1e10, 10, params=7e9, devices=[tpu], own=own)
    owned = [p for p in plans if p.price_label == own.label()]
    assert len(owned) == 1 and not owned[0].feasible and owned[0].note == str(said.value)
    assert "has no watts" in owned[0].note and owned[0].row()["cost_usd_expected"] is None
    priced = [p for p in plans if p.price_label.startswith("gcp:")]
    assert priced and any(p.feasible for p in priced)


def test_a_scenarios_row_with_a_price_and_an_own_cell_is_refused(capsys, tmp_path):
    """A row with both a price and an own cell was priced as owned hardware, its price cell left
    unread without a word; the command line refuses --price with --own, and so does the row now."""
    text = f'name,params,tokens,device,devices,utilization,price,own\na,7B,1B,"{H100}",1,0.4,aws:od,"30000,5"\n'
    code, out, err = _cli(capsys, "estimate", "--scenarios", _scenarios(tmp_path, text), "--usd-per-kwh", "0.1")
    assert code == 2 and out == "" and "scenario 1: give price or own, not both (got price 'aws:od'" in err
    code, out, _ = _cli(capsys, "estimate", "--scenarios", _scenarios(tmp_path, text.replace("aws:od", "")),
                        "--usd-per-kwh", "0.1", "--json")
    want = calc.budget(calc.Job(params=7e9, tokens=1e9, device=H100, utilization=0.4,
                                price=calc_plans.parse_own("30000,5", 0.1)))
    assert code == 0 and json.loads(out)["rows"][0]["cost_usd"] == want.cost_usd


def test_a_device_named_twice_is_planned_once():
    """plan --device X --device X ranked every plan of X twice (28 rows for 14)."""
    once = plan.rank_plans(1e10, 10, params=7e9, devices=[H100], price="2", utilization=0.4)
    twice = plan.rank_plans(1e10, 10, params=7e9, devices=[H100, H100], price="2", utilization=0.4)
    assert once and [p.row() for p in twice] == [p.row() for p in once]
