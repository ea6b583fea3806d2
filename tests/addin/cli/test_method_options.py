"""The command line reads --method and --optimizer as calc does (any case), and inference refuses an
optimizer and a ZeRO stage that would change nothing."""

from __future__ import annotations

import json

import pytest

from trainbudget import calc
from trainbudget.addin.cli.main import cli, run

H100 = "H100 SXM, BF16 tensor core, dense"


def _cli(capsys, *args):
    code = run(cli, list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


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
    want = calc.budget(calc.job(params=7e9, tokens=1e9, device=H100, devices=8, utilization=0.4,
                                method="inference", zero_stage=3))
    assert code == 0 and row["memory_per_device_gib"] == want.memory.total / 2 ** 30
    assert row["optimizer"] is None and row["optimizer_gib"] == row["gradients_gib"] == 0.0  # it said "adamw"
    code, out, _ = _cli(capsys, *base, "--optimizer", "sgd")
    assert code == 0 and json.loads(out)["rows"][0]["optimizer"] == "sgd"


def test_the_command_line_reads_method_and_optimizer_in_any_case_as_calc_does(capsys):
    """calc.budget, TRAIN_BUDGET and the Lite functions take method 'Inference' and optimizer 'SGD'
    (calc_checks.choice reads any case); estimate refused them (click's Choice was case sensitive)."""
    base = ("estimate", "--params", "7B", "--device", H100, "--utilization", "0.4", "--json")
    for method, optimizer in (("Inference", None), ("FULL", "SGD")):
        code, out, err = _cli(capsys, *base, "--method", method, *(("--optimizer", optimizer) if optimizer else ()))
        want = calc.budget(calc.job(params=7e9, tokens=1e9, device=H100, utilization=0.4, method=method,
                                    optimizer=optimizer or "adamw"))
        row = json.loads(out)["rows"][0]
        assert code == 0 and err == ""
        assert (row["flops"], row["hours"], row["memory_per_device_gib"]) == (
            want.flops, want.hours, want.memory.total / 2 ** 30)
        assert row["method"] == method.lower()


def _row(capsys, *args):
    code = run(cli, ["estimate", "--json", "--device", "H100 SXM, BF16 tensor core, dense", *args])
    got = capsys.readouterr()
    return code, (json.loads(got.out)["rows"][0] if code == 0 else got.err)


@pytest.mark.parametrize(("given", "value"), [("20M", 20e6), ("0.25%", 0.0025), ("0.0025", 0.0025)])
def test_estimate_takes_the_adapters_as_fit_does(capsys, given, value):
    """--trainable on estimate (a count or a share, as fit's): the LoRA memory and step are calc's for
    those adapters; fewer than the default 1% hold less memory."""
    model = calc.model_preset("Llama 3.1 8B")
    code, row = _row(capsys, "--model", "Llama 3.1 8B", "--devices", "8", "--method", "lora", "--trainable", given,
                     "--step")
    assert code == 0
    b = calc.budget(calc.job(model=model, tokens=calc.SEED_TOKENS, device="H100 SXM, BF16 tensor core, dense",
                             devices=8, method="lora", trainable=value, utilization="step"))
    assert row["memory_per_device_gib"] == pytest.approx(float(b.memory.total) / calc.GIB, rel=1e-12)
    assert row["step_seconds"] == pytest.approx(float(b.step.step_seconds), rel=1e-12)
    _, default = _row(capsys, "--model", "Llama 3.1 8B", "--devices", "8", "--method", "lora", "--step")
    assert default["memory_per_device_gib"] > row["memory_per_device_gib"]


@pytest.mark.parametrize(("args", "needle"), [
    (["--trainable", "2%"], "--trainable counts LoRA/QLoRA adapters: give --method lora or qlora"),
    (["--method", "lora", "--trainable", "9e12"], "--trainable must be at most params"),
    (["--method", "lora", "--trainable", "1.5"], "--trainable must be a share of the model"),
])
def test_estimate_refuses_adapters_that_do_not_apply_or_cannot_be(capsys, args, needle):
    code, err = _row(capsys, *args)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
