"""The Budget's step block, recalculated by LibreOffice, against calc.step_time on the same inputs.

Copies of the built template with the step, layout, architecture and Budget inputs edited (lxml,
tests/xlsx_edit.py): an FP8 row, a mixture of experts with EP over the network, a pipeline with
virtual stages, context parallelism over the network on 512-token chunks (its ring send exposed),
host offload (timed as full recompute) and ZeRO-3, op-level recompute, a TPU's domain, an FP32 row (its
matmuls at its own rate), unfused attention with and without recomputing it, a blank flash attention
(calc's default, fused, so CP 2 is taken); all recalculated in one LibreOffice run. Every breakdown
figure, the step seconds, tokens/s, MFU and HFU must equal calc's
to 1e-9 relative (calc is asked afresh: no number here is pinned).
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from tests import xlsx_edit
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.template import budget_sheet, model_block, step_block, step_deadline

ARCH = {name: field for name, _, field, _ in model_block.ARCH_INPUTS}
H100 = "H100 SXM, BF16 tensor core, dense"
# (Budget inputs, layout (TP, PP, EP), architecture preset, step inputs)
# (the Budget's tokens and the deadline's days set where the deadline should search past its first count,
# or find none)
CASES = [
    ({"tokens": 1e12}, (2, 1, 1), "Llama 3.1 8B", {"Deadline_days": 7}),
    ({"device": "H100 SXM, FP8 tensor core, dense", "devices": 64, "zero_stage": 1, "tokens": 1e11}, (4, 2, 1),
     "Llama 3.1 70B", {"Step_vpp": 2, "Step_batch": 256, "Step_recompute": "offload", "Deadline_days": 7}),
    ({"devices": 64, "zero_stage": 3, "tokens": 1e12}, (2, 1, 8), "Mixtral 8x7B",
     {"Step_seq_len": 4096, "Step_batch": 1024, "Step_recompute": "op"}),
    ({"devices": 32, "zero_stage": 2, "tokens": 1e12}, (4, 1, 1), "Llama 3.1 8B",
     {"Step_cp": 8, "Step_seq_len": 4096, "Step_batch": 64, "Step_recompute": "none", "Deadline_days": 1}),
    ({"device": "TPU v5p, BF16, dense", "devices": 256, "zero_stage": 3}, (8, 2, 1), "Llama 3.1 405B",
     {"Step_micro_batch": 2, "Step_batch": 512}),
    ({"device": "H100 SXM, FP32", "tokens": 1e10}, (1, 1, 1), "Mistral 7B", {"Step_batch": 64}),
    ({"devices": 16, "zero_stage": 1, "tokens": 1e11}, (2, 2, 1), "Llama 3.1 8B",
     {"Step_flash": False, "Step_recompute": "none", "Step_batch": 64}),
    ({"devices": 64, "zero_stage": 3}, (1, 1, 8), "Mixtral 8x7B", {"Step_flash": False, "Step_seq_len": 4096}),
    ({"devices": 16, "zero_stage": 1}, (2, 1, 1), "Llama 3.1 8B", {"Step_flash": None, "Step_cp": 2}),
]


def _want(budget: dict, layout: tuple, preset: str, step: dict) -> calc.Step:
    return _asked(budget, layout, preset, step)[0]


def _want_run(budget: dict, layout: tuple, preset: str, step: dict) -> calc.RunHours:
    """calc.run_hours of the Budget's tokens on the same step."""
    _, shape, lay, hw, tokens = _asked(budget, layout, preset, step)
    return calc.run_hours(shape, lay, hw, tokens)


def _asked(budget: dict, layout: tuple, preset: str, step: dict) -> tuple:
    """(calc's Step, its StepShape, StepLayout, hardware, the Budget's tokens) for a case."""
    v = {**{n: d for n, _, d, *_ in budget_sheet.INPUTS}, **budget}
    inputs = {**{n: d for n, _, d, _, _ in step_block.STEP_INPUTS}, **step}
    shape = calc.model_preset(preset).shape
    p = calc.model_params(**{f: shape.get(f, 0) for f in ARCH.values()}, head_dim=shape["d_model"] // shape["n_heads"])
    head = shape["d_model"] / shape["n_heads"]
    tp, pp, ep = layout
    sh = calc.StepShape(params_active=float(p.active_with_embedding), params_total=float(p.total),
                        n_layers=shape["n_layers"], d_model=shape["d_model"], attn_dim=shape["n_heads"] * head,
                        kv_dim=shape["n_kv_heads"] * head, vocab=shape["vocab"],
                        top_k=shape["top_k"] if shape["n_experts"] > 1 else 0, params_expert=float(p.experts),
                        n_heads=shape["n_heads"])
    lay = calc.StepLayout(devices=v["devices"], seq_len=inputs["Step_seq_len"],
                          global_batch_tokens=inputs["Step_batch"] * inputs["Step_seq_len"], tp=tp, pp=pp,
                          vpp=inputs["Step_vpp"], cp=inputs["Step_cp"], ep=ep, zero_stage=v["zero_stage"],
                          micro_batch=inputs["Step_micro_batch"], recompute=inputs["Step_recompute"],
                          **({} if inputs["Step_flash"] is None else {"flash_attention": inputs["Step_flash"]}))
    hw = calc.step_hardware(v["device"])
    return calc.step_time(sh, lay, hw), sh, lay, hw, v["tokens"]


@pytest.fixture(scope="module")
def recalculated(soffice, built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("step_block")
    wb = openpyxl.load_workbook(built.path)
    names = {n: d.attr_text.split("!")[-1].replace("$", "") for n, d in wb.defined_names.items()}
    paths = []
    for i, (budget, layout, preset, step) in enumerate(CASES):
        path = tmp / f"case{i}.xlsm"
        path.write_bytes(built.path.read_bytes())
        shape = calc.model_preset(preset).shape
        edits = {**{n: shape[f] for n, f in ARCH.items()}, **step,
                 **dict(zip(("Tensor_parallel", "Pipeline_parallel", "Expert_parallel"), layout, strict=True)),
                 **{budget_sheet.NAMES[k]: val for k, val in budget.items()}}
        for name, value in edits.items():
            xlsx_edit.edit_cell(path, "Budget", names[name],
                                lambda s, cell, v=value: s.set_constant(cell, v, cell.get("s")))
        paths.append(path)
    out = engine.convert(paths, "xlsx", tmp / "out")
    return names, [openpyxl.load_workbook(p, data_only=True)["Budget"] for p in out]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_step_block_equals_calc(recalculated, i):
    names, sheets = recalculated
    want = _want(*CASES[i])
    for name in step_block.RESULTS:
        got = sheets[i][names[name]].value
        assert isinstance(got, (int, float)), (name, got)
        assert got == pytest.approx(step_block.figure(want, name), rel=1e-9, abs=1e-12), (name, CASES[i])


@pytest.mark.parametrize("i", range(len(CASES)))
def test_whole_run_rows_equal_calc(recalculated, i):
    """Steps, goodput, the run's hours (low / expected / high), days and device-hours equal
    calc.run_hours on the Budget's tokens; the expected hours are the steps' seconds over goodput."""
    names, sheets = recalculated
    run = _want_run(*CASES[i])
    got = {name: sheets[i][names[name]].value for name in step_block.RUN_RESULTS}
    for name, value in got.items():
        assert isinstance(value, (int, float)), (name, value)
        assert value == pytest.approx(step_block.run_figure(run, name), rel=1e-9), (name, CASES[i])
    assert got["Step_run_low"] < got["Step_run_hours"] < got["Step_run_high"]
    seconds = sheets[i][names["Step_seconds"]].value
    assert got["Step_run_hours"] == pytest.approx(got["Step_steps"] * seconds / 3600 / got["Step_goodput"], rel=1e-12)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_deadline_equals_calc(recalculated, i):
    """The fewest devices for the deadline at the block's layout: the first count of the table that
    meets it, equal to calc.deadline_devices (a count, or the words where none of them does)."""
    names, sheets = recalculated
    _, shape, lay, hw, tokens = _asked(*CASES[i])
    want = calc.deadline_devices(shape, lay, hw, tokens, CASES[i][3].get("Deadline_days", 30.0))
    got = sheets[i][names["Step_deadline_devices"]].value
    assert got == (step_deadline.NONE if math.isinf(want) else want), CASES[i]


def test_the_deadline_cases_search_and_miss():
    """Among the cases: a deadline met past the first count, one met by more than one layout's
    worth of devices, and one that no count meets."""
    found = []
    for case in CASES:
        _, shape, lay, hw, tokens = _asked(*case)
        found.append(calc.deadline_devices(shape, lay, hw, tokens, case[3].get("Deadline_days", 30.0))
                     / (lay.tp * lay.pp * lay.cp * lay.ep))
    assert any(math.isinf(k) for k in found) and sum(1 for k in found if 1 < k < math.inf) >= 3, found


def test_the_cases_reach_every_part_of_the_step():
    for part in calc.STEP_PARTS:
        assert any(float(_want(*c).breakdown[part]) > 0 for c in CASES), part


def test_formulas_a_person_reads_stay_short(built):
    ws = openpyxl.load_workbook(built.path)["Budget"]
    names = openpyxl.load_workbook(built.path).defined_names
    for name in [*step_block.RESULTS, *step_block.RUN_RESULTS, "Step_deadline_devices"]:
        ref = names[name].attr_text.split("!")[-1].replace("$", "")
        assert len(ws[ref].value) < 200, name
    first, last = names["Step_deadline_counts"].attr_text.split("!")[-1].replace("$", "").split(":")
    table = ws[f"A{int(first[1:]) - calc.DEADLINE_BOUNDS}:{step_deadline.LAST}{last[1:]}"]
    formulas = [c.value for row in table for c in row if isinstance(c.value, str) and c.value.startswith("=")]
    assert len(formulas) == 18 * (calc.DEADLINE_BOUNDS + calc.DEADLINE_COUNTS)  # columns A to R, every row
    assert max(len(f) for f in formulas) < 200


def test_block_sits_below_the_layout_block_off_the_printed_detail(built):
    # as the architecture and layout blocks: the printed detail is the Summary's pages (test_printed)
    wb = openpyxl.load_workbook(built.path)
    row = int(wb.defined_names["Step_seconds"].attr_text.split("$")[-1])
    assert row > int(wb.defined_names["Layout_total_GB"].attr_text.split("$")[-1])
    assert int(wb["Budget"].print_area.rsplit("$", 1)[-1]) < row
