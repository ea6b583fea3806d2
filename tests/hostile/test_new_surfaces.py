"""Hostile values on the surfaces the step model, the planner's options and Lite's --from added: the
step model's batch options and calc.job's batch fields, plan and fit's batch options and scenarios' layout
columns, and `lite --from`. Every case ends in a result with no NaN, or one line naming the option
(exit 2), never a traceback; calc raises TrainingBudgetError."""

from __future__ import annotations

import csv
import json
import math
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import invoke
from tests.hostile import minimal_package, zip_bomb
from trainbudget import calc

ODD = ["", " ", "\u0667", "1e309", "nan", "inf", "-0", "x" * 100_000, "1,00", "1,0000", " 7B ", "7 B", "7b",
       "1\x07\x1b[31m", "0", "-1", "2.5", "1e30"]
REFUSED = {"", " ", "1e309", "nan", "inf", "-0", "x" * 100_000, "1,00", "1,0000", "1\x07\x1b[31m", "0", "-1"}
MODEL = ["--model", "Llama 3.1 8B"]
STEP = ["estimate", "--step", *MODEL, "--devices", "64", "--device", "H100 SXM, BF16 tensor core, dense"]
PLAN = ["plan", *MODEL, "--tokens", "1T", "--days", "30", "--limit", "2"]
FIT = ["fit", *MODEL, "--devices", "64", "--limit", "2"]


def _sound(proc, option: str | None = None) -> None:
    """No traceback, no NaN printed; a refusal is one short line (naming `option` when given) and status 2."""
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not re.search(r"\bnan\b", proc.stdout, re.I)
    assert proc.returncode in (0, 2), proc.stderr
    if proc.returncode == 2:
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and len(lines[0]) < 400 and "\x1b" not in lines[0], lines
        assert proc.stdout == ""
        if option is not None:
            assert option in lines[0] or option.lstrip("-").replace("-", "_") in lines[0], lines[0]


@pytest.mark.parametrize("value", ODD, ids=lambda v: repr(v)[:20])
@pytest.mark.parametrize("option", ["--seq-len", "--global-batch", "--micro-batch", "--vpp"])
def test_step_batch_options(option: str, value: str) -> None:
    proc = invoke(*STEP, option, value)
    _sound(proc)
    if value in REFUSED or value in ("2.5", "1e30"):
        assert proc.returncode == 2
    if value in REFUSED or value == "2.5":
        assert option in proc.stderr, proc.stderr  # the option as typed, not calc's argument name


@pytest.mark.parametrize("value", ODD, ids=lambda v: repr(v)[:20])
@pytest.mark.parametrize("option", ["--tp", "--pp", "--cp", "--ep", "--devices", "--goodput", "--zero-stage",
                                    "--recompute", "--method"])
def test_step_layout_options(option: str, value: str) -> None:
    proc = invoke(*STEP, option, value)
    _sound(proc)
    if value in REFUSED - {"-0", "0"}:
        assert proc.returncode == 2


def test_global_batch_in_sequences_is_whole() -> None:
    """2.5 sequences was refused as 'global_batch_tokens must be whole sequences ... (got 10240)'."""
    proc = invoke(*STEP, "--global-batch", "2.5")
    assert proc.returncode == 2 and "--global-batch must be a whole number" in proc.stderr and "2.5" in proc.stderr


@pytest.mark.parametrize("option, value", [("--seq-len", "1e30"), ("--seq-len", "7B"), ("--global-batch", "2e12")])
def test_step_sizes_bounded_as_fit(option: str, value: str) -> None:
    proc = invoke(*STEP, option, value)
    assert proc.returncode == 2 and f"{option} must be at most" in proc.stderr


def test_seq_len_alone_keeps_1024_sequences() -> None:
    """--seq-len without --global-batch: the help's default of 1,024 sequences, not 4M tokens (4097 gave
    'global_batch_tokens must be whole sequences')."""
    proc = invoke(*STEP, "--seq-len", "8192", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    rows = rows["rows"]
    assert {r["global_batch_tokens"] for r in rows} == {calc.DEFAULT_GLOBAL_BATCH * 8192}


@pytest.mark.parametrize("option", ["--recompute", "--method", "--zero-stage"])
def test_long_choice_value_is_clipped(option: str) -> None:
    proc = invoke(*STEP, option, "y" * 100_000)
    assert proc.returncode == 2 and option in proc.stderr and len(proc.stderr) < 400
    assert "characters)" in proc.stderr  # the length said, the value cut


M = calc.model_preset("Llama 3.1 8B")
PY_ODD = ["", "nan", "1e309", "x" * 100_000, "7b", -1, 2.5, math.nan, math.inf, -math.inf, True, False,
          np.array([1.0, math.nan]), np.array([[1, -1]]), "4096", {"a": 1}, object()]


@pytest.mark.parametrize("value", PY_ODD, ids=lambda v: repr(v)[:20])
@pytest.mark.parametrize("field", ["seq_len", "global_batch_tokens", "micro_batch", "vpp", "recompute"])
def test_calc_batch_refuses_by_name(field: str, value) -> None:
    if field == "recompute" and isinstance(value, int) and value == -1:
        value = 3  # codes 0, 1, 2 are the modes
    with pytest.raises(calc.TrainingBudgetError, match=field):
        calc.budget(calc.job(model=M, devices=64, tokens=1e12, utilization="step", **{field: value}))


@pytest.mark.parametrize("job", [
    dict(params=7e9),  # no shape
    dict(method="qlora"), dict(method="inference"),  # LoRA is timed (tests/calc/step/test_lora_step.py)
    dict(cp=3), dict(ep=8),  # cp not dividing seq_len; a dense model
    dict(pp=1, vpp=2),
    dict(devices=2048, global_batch_tokens=1024 * 4096),  # fewer sequences than DP ranks
], ids=lambda j: repr(j)[:40])
def test_calc_step_odd_jobs_refused(job: dict) -> None:
    base = dict(model=None if "params" in job else M, devices=job.pop("devices", 64), utilization="step")
    with pytest.raises(calc.TrainingBudgetError):
        calc.budget(calc.job(**base, **job))


@pytest.mark.parametrize("device", ["M3 Ultra, MLX fp32 matmul (measured)", "H100 SXM, FP8 tensor core, dense",
                                    "TPU v5p, BF16, dense", "Trainium3, MXFP8, dense"])
@pytest.mark.parametrize("model", ["Mixtral 8x7B", "Llama 3.1 8B"])
def test_calc_step_answers_are_finite(device: str, model: str) -> None:
    b = calc.budget(calc.job(model=calc.model_preset(model), devices=64, device=device, utilization="step",
                             ep=8 if model.startswith("Mixtral") else 1))
    values = [b.step.step_seconds, b.step.mfu, b.step.tokens_per_second_per_device, *b.step.breakdown.values(),
              *b.hours.as_tuple(), *b.device_hours.as_tuple()]
    assert all(math.isfinite(float(v)) and float(v) >= 0 for v in values), values


def _catalog(tmp_path: Path, **blank: str) -> Path:
    rows = list(csv.DictReader((Path(calc.__file__).parent / "data" / "devices.csv").open(encoding="utf-8")))
    row = next(r for r in rows if r["name"] == "H100 SXM, BF16 tensor core, dense") | {"name": "Odd"} | blank
    path = tmp_path / "cat.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, list(row))
        w.writeheader()
        w.writerow(row)
    return path


def test_row_without_bandwidth_is_named(tmp_path: Path) -> None:
    proc = invoke(*STEP[:-2], "--device", "Odd", "--catalog", str(_catalog(tmp_path, memory_tbps="")))
    assert proc.returncode == 2 and "memory_tbps" in proc.stderr and "Odd" in proc.stderr


def test_row_without_topology_is_timed(tmp_path: Path) -> None:
    cat = _catalog(tmp_path, scale_up_GBps="", scale_up_domain="", scale_out_Gbps="", topology_source="")
    proc = invoke(*STEP[:-2], "--device", "Odd", "--catalog", str(cat), "--json")
    assert proc.returncode == 0, proc.stderr
    _sound(proc)


@pytest.mark.parametrize("value", ODD, ids=lambda v: repr(v)[:20])
@pytest.mark.parametrize("command, option", [(PLAN, "--global-batch"), (PLAN, "--seq-len"), (PLAN, "--node"),
                                             (FIT, "--global-batch"), (FIT, "--seq-len"), (FIT, "--devices")])
def test_plan_and_fit_options(command: list[str], option: str, value: str) -> None:
    proc = invoke(*command, option, value)
    _sound(proc)
    if value in REFUSED - {"-0", "1,00"}:
        assert proc.returncode == 2


def test_plan_moe_layout_it_can_price() -> None:
    """fit lists expert parallel over data x context ranks; the planner priced one (EP 32 on DP 16) and
    the whole plan stopped: 'expert_parallel must divide the data-parallel size'."""
    proc = invoke("plan", "--model", "DeepSeek-V3", "--tokens", "1T", "--days", "30", "--json")
    assert proc.returncode == 0, proc.stderr
    layouts = []

    def walk(x) -> None:
        if isinstance(x, dict):
            if {"ep", "dp"} <= x.keys() and x["ep"]:
                layouts.append(x)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(json.loads(proc.stdout))
    assert layouts and all((r["dp"] * r["cp"]) % r["ep"] == 0 for r in layouts)  # EP within DP x CP


@pytest.mark.parametrize("extra", [["--spot"], ["--committed"], ["--spot", "--committed", "--json"],
                                   ["--node", "3"], ["--global-batch", "1"], ["--device", "TPU v5p, BF16, dense"],
                                   ["--catalog", "/dev/null"]], ids=lambda v: repr(v)[:20])
def test_plan_flags(extra: list[str]) -> None:
    _sound(invoke(*PLAN, *extra))


@pytest.mark.parametrize("value", [*ODD, "3"], ids=lambda v: repr(v)[:20])
@pytest.mark.parametrize("column", ["zero_stage", "tp", "pp", "cp", "ep", "seq_len", "global_batch"])
def test_scenario_layout_columns(tmp_path: Path, column: str, value: str) -> None:
    row = {"name": "a", "model": "Llama 3.1 8B", "tokens": "1B", "device": "H100 SXM, BF16 tensor core, dense",
           "devices": "64", "utilization": "40%", "price": "2", column: value}
    path = tmp_path / "s.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, list(row))
        w.writeheader()
        w.writerow(row)
    proc = invoke("estimate", "--scenarios", str(path))
    _sound(proc)
    if value.strip() in ("nan", "inf", "1e309", "-1", "x" * 100_000, "1e30"):
        assert proc.returncode == 2 and "scenario 1" in proc.stderr


def _lite_sources(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "notzip.xlsx").write_text("hello")
    (tmp_path / "link.xlsx").symlink_to(tmp_path / "notzip.xlsx")
    norels = tmp_path / "norels.xlsx"
    with zipfile.ZipFile(norels, "w") as z:
        z.writestr("[Content_Types].xml", b"<Types/>")
    return {"notzip": tmp_path / "notzip.xlsx", "link": tmp_path / "link.xlsx",
            "nodevices": minimal_package(tmp_path / "nodev.xlsx"), "norels": norels,
            "bomb": zip_bomb(tmp_path / "bomb.xlsx", 272 << 20)}


@pytest.mark.parametrize("kind", ["notzip", "link", "nodevices", "norels", "bomb"])
def test_lite_from_hostile_workbooks(tmp_path: Path, kind: str) -> None:
    """A workbook without its relationships part gave a KeyError traceback (lite --from, --catalog)."""
    source = _lite_sources(tmp_path)[kind]
    out = tmp_path / "out.xlsx"
    proc = invoke("lite", "--from", str(source), "--out", str(out))
    _sound(proc, "--from")
    assert proc.returncode == 2 and not out.exists()
    if kind in ("nodevices", "norels"):
        catalog = invoke("estimate", "--catalog", str(source))
        _sound(catalog)
        assert catalog.returncode == 2 and source.name in catalog.stderr


@pytest.mark.parametrize("out", ["", "x.xlsm", "/tmp"], ids=lambda v: repr(v)[:20])
def test_lite_bad_out(tmp_path: Path, out: str) -> None:
    proc = invoke("lite", "--out", out)
    _sound(proc, "--out")
    assert proc.returncode == 2


H100_ROW = "H100 SXM, BF16 tensor core, dense"


@pytest.mark.parametrize("kwargs", [{"tp": 10**400}, {"micro_batch": 10**400}, {"recompute": None},
                                    {"recompute": np.array(["full", None], dtype=object)}])
def test_layouts_past_a_float_or_without_a_name_are_refused_by_name(kwargs: dict) -> None:
    base = {"devices": 64, "seq_len": 8192, "global_batch_tokens": 4194304}
    field = next(iter(kwargs))
    with pytest.raises(calc.TrainingBudgetError, match=field):
        calc.StepLayout(**{**base, **kwargs})


def test_recompute_names_in_any_case_and_as_arrays_count_memory_as_each_alone() -> None:
    """"OFFLOAD" is "offload" on the memory side too; an array of names is each name's Budget."""
    def ask(recompute: object) -> calc.Budget:
        return calc.budget(calc.job(model="Llama 3.1 70B", device=H100_ROW, devices=64, tp=8, tokens=1e12,
                                    utilization="step", recompute=recompute))
    assert ask(" OFFLOAD").memory.total == ask("offload").memory.total < ask("full").memory.total
    both = ask(np.array(["offload", "full"]))
    assert list(both.memory.total) == [ask("offload").memory.total, ask("full").memory.total]
    with pytest.raises(calc.TrainingBudgetError, match="recompute"):
        ask(np.array(["offload", "cpu"]))


@pytest.mark.parametrize("record", [
    {"scale_up_GBps": "800", "scale_up_domain": "256", "scale_out_Gbps": "25", "scale_up_axis_GBps": "nan"},
    {"scale_up_GBps": "800", "scale_up_domain": "256", "scale_out_Gbps": "25", "scale_up_axis_GBps": "inf"},
    {"scale_up_GBps": "800", "scale_up_domain": "nan", "scale_out_Gbps": "25"},
    {"scale_up_axis_GBps": "90"},
])
def test_a_rows_own_topology_is_finite_and_whole(record: dict) -> None:
    dev = calc.catalog().get("TPU v6e (Trillium), BF16, dense")
    with pytest.raises(calc.TrainingBudgetError, match="scale_up"):
        calc.step_hardware(dev, record=record)
