"""The step model on the command line: `estimate --step` renders calc.budget's Step (text, JSON,
CSV), the batch options apply to --step alone, and a job the step model cannot time is refused
naming why."""

from __future__ import annotations

import json
import random

import pytest

from tests.conftest import invoke
from trainbudget import calc

H100 = "H100 SXM, BF16 tensor core, dense"
MODELS = ["Llama 3.1 8B", "Llama 3.1 70B", "Llama 3.1 405B", "Mixtral 8x7B"]
DEVICES = [H100, "H100 SXM, FP8 tensor core, dense", "A100 SXM 80GB, BF16 tensor core, dense",
           "B200, BF16 tensor core, dense", "TPU v6e (Trillium), BF16, dense"]


def _jobs(n: int) -> list[dict]:
    """Seeded jobs whose layouts the step model accepts: devices = tp x pp x dp, whole sequences."""
    r, jobs = random.Random(30), []
    while len(jobs) < n:
        tp, pp = r.choice([1, 2, 4, 8]), r.choice([1, 2, 4])
        dp = r.choice([1, 2, 8, 32])
        job = {"model": r.choice(MODELS), "device": r.choice(DEVICES), "devices": tp * pp * dp, "tp": tp, "pp": pp,
               "zero": r.choice([0, 1, 3]), "seq": r.choice([2048, 4096, 8192]), "batch": dp * r.choice([4, 16, 64]),
               "recompute": r.choice(calc.RECOMPUTE), "vpp": r.choice([1, 2]) if pp > 1 else 1,
               "method": r.choice(["full", "full", "lora"]), "flash": r.random() < 0.7}
        if job["model"] == "Mixtral 8x7B" and tp > 8:
            continue
        jobs.append(job)
    return jobs


def _args(j: dict) -> list[str]:
    return ["estimate", "--step", "--model", j["model"], "--device", j["device"], "--devices", str(j["devices"]),
            "--tp", str(j["tp"]), "--pp", str(j["pp"]), "--zero-stage", str(j["zero"]), "--seq-len", str(j["seq"]),
            "--global-batch", str(j["batch"]), "--recompute", j["recompute"], "--vpp", str(j["vpp"]),
            "--tokens", "1T", "--price", "2.5", "--method", j["method"],
            "--flash-attention" if j.get("flash", True) else "--no-flash-attention"]


def _budget(j: dict) -> calc.Budget:
    return calc.budget(calc.job(model=j["model"], tokens=1e12, device=j["device"], devices=j["devices"],
                                tp=j["tp"], pp=j["pp"], zero_stage=j["zero"],
                                utilization="step", price=2.5, seq_len=j["seq"],
                                global_batch_tokens=j["batch"] * j["seq"], recompute=j["recompute"], vpp=j["vpp"],
                                method=j["method"], flash_attention=j.get("flash", True)))


@pytest.mark.parametrize("j", _jobs(50), ids=lambda j: f"{j['model']}-{j['devices']}-tp{j['tp']}pp{j['pp']}")
def test_estimate_json_is_calc_budgets_step(j: dict) -> None:
    proc = invoke(*_args(j), "--json")
    b = _budget(j)
    if proc.returncode:  # the command line refuses what calc refuses, in calc's words
        with pytest.raises(calc.TrainingBudgetError) as err:
            _budget(j)
        assert str(err.value) in proc.stderr
        return
    row = json.loads(proc.stdout)["rows"][0]
    assert row == json.loads(json.dumps(calc.budget_row(b)))
    assert row["step_seconds"] == b.step.step_seconds and row["mfu"] == b.step.mfu
    assert row["recompute"] == j["recompute"] and row["flash_attention"] is j.get("flash", True)
    assert row["mfu_16bit"] == b.step.mfu_16bit and row["hfu"] == b.step.hfu
    parts = sum(row[f"step_{p}_seconds"] for p in calc.STEP_PARTS)
    assert parts == pytest.approx(row["step_seconds"], rel=0.35)  # the parts (the bubble scales the rest)
    assert row["hours_expected"] == pytest.approx(1e12 / (row["tokens_per_second_per_device"] * j["devices"])
                                                  / 3600 / row["goodput"], rel=1e-9)


def test_the_text_names_the_step_and_its_parts() -> None:
    out = invoke(*_args({"model": "Llama 3.1 70B", "device": H100, "devices": 512, "tp": 8, "pp": 4, "zero": 1,
                         "seq": 8192, "batch": 2048, "recompute": "selective", "vpp": 1, "method": "full"}),
                 check=True).stdout
    line = next(x for x in out.splitlines() if ": step " in x)
    assert "compute" in line and "TP" in line and "MFU" in line and "tokens/s per device" in line
    assert "the step model's utilization" in out and "goodput" in out


@pytest.mark.parametrize(("args", "words"), [
    (["--seq-len", "4096"], "--seq-len applies to --step"),
    (["--seq-len", "4096", "--vpp", "2"], "--seq-len, --vpp apply to --step"),
    (["--step", "--range", "--model", "Llama 3.1 8B"], "give --step or --range"),
    (["--step", "--utilization", "0.4", "--model", "Llama 3.1 8B"], "give --step or --utilization"),
    (["--step", "--params", "7B"], "needs the model's shape"),
    (["--step", "--model", "Llama 3.1 8B", "--method", "qlora"], "method 'qlora' is not modelled"),
    (["--step", "--model", "Llama 3.1 8B", "--devices", "64", "--global-batch", "16", "--seq-len", "4096"],
     "--global-batch 16 sequences (global_batch_tokens=65536) gives each of the 64 data-parallel ranks fewer than "
     "--micro-batch 1"),
    (["--step", "--model", "Llama 3.1 8B", "--recompute", "some"], "--recompute"),
    (["--model", "Llama 3.1 8B", "--no-flash-attention"], "--no-flash-attention applies to --step"),
    (["--step", "--params", "8B", "--no-flash-attention"], "needs the model's shape"),
])
def test_step_refusals_name_what_is_wrong(args: list[str], words: str) -> None:
    proc = invoke("estimate", "--device", H100, *args)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr


def test_fit_ranks_by_the_step_models_speed_and_puts_metas_layout_near_the_top() -> None:
    """Llama 3.1 405B on 16,384 H100 at a 16M-token batch of 8K sequences: rows fastest first by the
    step model, and a TP8 PP16 layout (what Meta ran, arXiv:2407.21783 Table 4) among the first 10."""
    out = json.loads(invoke("fit", "--model", "Llama 3.1 405B", "--devices", "16384", "--seq-len", "8192",
                            "--global-batch", "2048", "--json", check=True).stdout)
    rows = out["layouts"]
    speeds = [r["tokens_per_second_per_device"] for r in rows]
    assert speeds == sorted(speeds, reverse=True) and "step model" in out["ranking"]
    assert any(r["tp"] == 8 and r["pp"] == 16 for r in rows[:10])
    assert all(r["dp"] * r["micro_batch"] * r["accumulation"] == 2048 for r in rows)
    found = calc.fit_layouts(calc.model_preset("Llama 3.1 405B"), H100, 16384, seq_len=8192, global_batch=2048)
    st = calc.layout_steps(found, calc.model_preset("Llama 3.1 405B"), H100, 8192)
    assert rows[0]["step_seconds"] == float(st.step_seconds[calc.layouts_by_speed(st)[0]])


def test_measured_steps_calibrate_the_step_on_the_devices_they_measured(tmp_path) -> None:
    """estimate --step --measured-steps FILE: the team's factor and band (calc.calibrate_from_measured)
    reach the job through its cluster, so hours move on the device the team measured; alone, the
    option is refused by name."""
    from tests.calc.step.test_team import FP8_H100, _csv, _torchtitan

    path = tmp_path / "team.csv"
    path.write_text(_csv(_torchtitan()))
    args = ["estimate", "--model", "Llama 3.1 8B", "--device", FP8_H100, "--devices", "64", "--step", "--json"]
    plain = json.loads(invoke(*args, check=True).stdout)["rows"][0]
    team = json.loads(invoke(*args, "--measured-steps", str(path), check=True).stdout)["rows"][0]
    factor = calc.calibrate_from_measured(path.read_text()).factors[FP8_H100]
    ratio = plain["step_seconds"] / team["step_seconds"]
    assert ratio != 1.0 and (ratio < 1.0) == (factor < 1.0)
    assert team["hours_expected"] / plain["hours_expected"] == pytest.approx(1 / ratio, rel=1e-9)
    refused = invoke("estimate", "--measured-steps", str(path))
    assert refused.returncode == 2 and "--measured-steps applies to --step" in refused.stderr


@pytest.mark.parametrize(("model", "devices", "layout"), [
    ("Llama 3.1 8B", 8, {"tp": 1, "pp": 1, "cp": 1, "zero_stage": 3, "micro_batch": 2, "recompute": "none"}),
    ("Llama 3.1 70B", 64, {"tp": 8, "pp": 4, "cp": 1, "zero_stage": 1, "micro_batch": 1, "recompute": "full"}),
    ("Mixtral 8x7B", 32, {"tp": 2, "pp": 2, "cp": 2, "ep": 4, "zero_stage": 1, "micro_batch": 1, "recompute": "none"}),
])
def test_the_step_counts_the_activations_fit_counts_for_its_layout(model, devices, layout) -> None:
    """At utilization "step" the job's layout and batch are known, so memory holds the busiest
    device's in-flight micro-batches: the same bytes as fit's row for that layout. (The states differ
    on purpose: fit lists Megatron's FP32 main gradients and ZeRO-3's gathered-layer buffers.)"""
    j = calc.job(model=model, device=H100, devices=devices, tokens=1e10, utilization="step", seq_len=4096, **layout)
    b = calc.budget(j)
    assert b.memory.activations > 0
    assert calc.budget(j.with_(utilization=0.4)).memory.activations == 0  # no batch asked: before activations
    found = calc.fit_layouts(model, H100, devices, seq_len=4096, micro_batch=layout["micro_batch"],
                             recompute=layout["recompute"], zero_stages=(layout["zero_stage"],))
    row = next(r for r in found.rows()
               if r["vpp"] == 1 and all(r[k] == layout.get(k, 1) for k in ("tp", "pp", "cp", "ep")))
    assert b.memory.activations == pytest.approx(row["activations_bytes"], rel=1e-12)


def test_a_layout_fit_lists_with_host_offload_can_be_estimated_as_listed() -> None:
    """Llama 3.1 70B on 256 TPU v6e at 8K: fit's first "offload" row (full recompute, layer inputs in
    host memory), given back to `estimate --step`, fits with the same activation bytes and takes the
    step fit ranked it by."""
    v6e = "TPU v6e (Trillium), BF16, dense"
    out = json.loads(invoke("fit", "--model", "Llama 3.1 70B", "--device", v6e, "--devices", "256", "--seq-len",
                            "8192", "--global-batch", "256", "--json", check=True).stdout)
    rows, rows_words = out["layouts"], out["memory_basis"]
    r = next(x for x in rows if x["recompute"] == "offload")
    got = json.loads(invoke("estimate", "--step", "--model", "Llama 3.1 70B", "--device", v6e, "--devices", "256",
                            *(a for k in ("tp", "pp", "cp", "ep", "vpp") for a in (f"--{k}", str(r[k]))),
                            "--zero-stage", str(r["zero_stage"]), "--micro-batch", str(r["micro_batch"]),
                            "--recompute", "offload", "--seq-len", "8192", "--global-batch", "256", "--tokens", "1T",
                            "--json", check=True).stdout)["rows"][0]
    assert got["fits"] and got["activations_gib"] * 2**30 == r["activations_bytes"]
    # fit holds 4-byte gradients and ZeRO-3's buffers, estimate ZeRO's 2-byte gradients: fit's total is the larger,
    # and fit says so
    assert got["memory_per_device_gib"] * 2**30 < r["total_bytes"]
    assert "estimate` counts ZeRO's 2-byte gradients" in rows_words
    assert got["step_seconds"] == pytest.approx(r["step_seconds"], rel=1e-12)


def test_fit_and_plan_take_unfused_attention() -> None:
    """--no-flash-attention: fit searches selective recompute too (the scores are held without it) and
    times each layout's attention unfused; plan needs more devices for the same deadline."""
    fit = ["fit", "--model", "Llama 3.1 8B", "--devices", "8", "--seq-len", "8192", "--global-batch", "64", "--json"]
    fused, unfused = (json.loads(invoke(*fit, *extra, check=True).stdout) for extra in ([], ["--no-flash-attention"]))
    assert fused["flash_attention"] is True and unfused["flash_attention"] is False
    assert "selective" in {r["recompute"] for r in unfused["layouts"]} - {r["recompute"] for r in fused["layouts"]}
    assert unfused["layouts"][0]["step_seconds"] > fused["layouts"][0]["step_seconds"]
    plan = ["plan", "--model", "Llama 3.1 8B", "--tokens", "1T", "--days", "30", "--device", H100, "--seq-len", "8192",
            "--global-batch", "512", "--json"]
    got = [json.loads(invoke(*plan, *extra, check=True).stdout)["plans"][0]["devices"]
           for extra in ([], ["--no-flash-attention"])]
    assert got[1] > got[0]
