"""The Budget's ranges take the step model only on a layout calc's step model takes.

Copies of the built template whose step block's layout calc refuses (a tensor-parallel degree on more
devices than the Budget has, TP not dividing the heads, CP not dividing the sequence, VPP without a
pipeline, EP on a dense model, more stages than layers, a micro-batch the global batch cannot give every
replica, CP without flash attention) and ones it takes, recalculated in one LibreOffice run. Each range
basis (Range_is_step) must be the step model exactly where calc.budget at utilization "step" times the
same job, and the Summary's cost to budget calc's figure on that basis: the prior's where calc refuses
the layout (the step block's arithmetic goes on to give a number there, which the ranges must not take),
with no spreadsheet error; and the Summary words the step's MFU as calc does, of the 16-bit peak.
"""

from __future__ import annotations

import pytest

from tests.sheet_cases import flag, named_value, recalculated_copies, set_named
from trainbudget import calc
from trainbudget.addin.template import budget_sheet, model_block, range_basis, ranges_block, step_block, step_deadline

V = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
LAYOUT = {n: d for n, _, _, d, _ in model_block.LAYOUT_INPUTS}
STEP = {n: d for n, _, d, _, _ in step_block.STEP_INPUTS}
CASES = (  # edits of the Budget's, the layout block's and the step block's inputs
    {"Devices_count": 1},  # TP 2 on one device
    {"Tensor_parallel": 3},  # 32 heads
    {"Step_cp": 2, "Step_seq_len": 8191},
    {"Step_vpp": 2},  # PP 1
    {"Expert_parallel": 2, "Devices_count": 16},  # a dense model
    {"Pipeline_parallel": 64, "Tensor_parallel": 1, "Devices_count": 128},  # 32 layers
    {"Step_micro_batch": 200},  # 512 sequences over 4 replicas
    {"Devices_count": 6},  # taken: 3 replicas of TP 2
    {"Device": "H100 SXM, FP32"},  # taken; the ranges on the BF16 row, the step's MFU of the 16-bit peak
    {"Device": "H100 SXM, FP8 tensor core, dense"},
    {"Ranges_from": "step"},  # neither choice: the published runs, and the sheet says why
    {"Step_cp": 2, "Step_flash": False},  # no unfused backend runs CP
    {"Step_flash": False},  # taken: unfused attention without CP
    {"Step_cp": 2, "Step_flash": None},  # taken: a blank flash attention is calc's default, TRUE
    {"Step_micro_batch": 600},  # 512 sequences: short of a micro-batch per replica at any device count
)


def _flash(value: object) -> dict:
    """calc's flash_attention argument for the cell's value: a blank cell leaves calc's default."""
    return {} if value is None else {"flash_attention": value}


def _calc_step(edits: dict) -> calc.Budget | None:
    """calc.budget of the template's job on the edited layout at utilization "step"; None where calc refuses it."""
    s, lay = {**STEP, **edits}, {**LAYOUT, **edits}
    if edits.get("Ranges_from", range_basis.STEP_MODEL) != range_basis.STEP_MODEL:
        return None
    try:
        return calc.budget(calc.job(model=model_block.PRESET, tokens=V["tokens"],
                                    device=edits.get("Device", V["device"]),
                                    devices=edits.get("Devices_count", V["devices"]), zero_stage=V["zero_stage"],
                                    utilization="step", price=V["usd_per_device_hour"], seq_len=s["Step_seq_len"],
                                    global_batch_tokens=s["Step_batch"] * s["Step_seq_len"],
                                    micro_batch=s["Step_micro_batch"], vpp=s["Step_vpp"], cp=s["Step_cp"],
                                    recompute=s["Step_recompute"], **_flash(s["Step_flash"]),
                                    tp=lay["Tensor_parallel"],
                                    pp=lay["Pipeline_parallel"], ep=lay["Expert_parallel"]))
    except calc.TrainingBudgetError:
        return None


@pytest.fixture(scope="module")
def books(soffice, built, tmp_path_factory):
    def edit(inputs: dict):
        def apply(wb) -> None:
            for name, value in inputs.items():
                set_named(wb, name, value)
        return apply
    return recalculated_copies(built.path, tmp_path_factory.mktemp("range_basis"), [edit(e) for e in CASES])


@pytest.mark.parametrize("k", range(len(CASES)))
def test_the_ranges_take_the_step_model_only_on_a_layout_calc_takes(books, k):
    edits, wb = CASES[k], books[k]
    want = _calc_step(edits)
    chosen = flag(named_value(wb, range_basis.STEP_CHOSEN))
    assert chosen is (want is not None), (edits, named_value(wb, "Step_seconds"))
    if want is None:
        v = {**V, "devices": edits.get("Devices_count", V["devices"]), "device": edits.get("Device", V["device"])}
        want = ranges_block.budget(v, calc.catalog(), utilization="prior")
    got = [named_value(wb, f"Cost_{case}") for case in ("low", "expected", "high")]
    assert got == pytest.approx([float(x) for x in want.cost_usd.as_tuple()], rel=1e-3), edits
    errors = [c.coordinate for row in wb["Summary"].iter_rows() for c in row
              if isinstance(c.value, str) and c.value.startswith("#")]
    assert not errors, (edits, errors)


@pytest.mark.parametrize("k", [k for k, e in enumerate(CASES) if _calc_step(e) is not None])
def test_the_summary_words_the_steps_mfu_as_calc_does(books, k):
    """The Summary's basis line gives the step's MFU of the 16-bit peak, as calc.budget's basis does (the
    ranges' utilization is a share of that row too): on an FP32 row not 586%, on FP8 not the FP8 peak's."""
    want = _calc_step(CASES[k])
    line = next(c.value for c in books[k]["Summary"]["A"] if str(c.value).startswith(range_basis.STEP_MODEL + ":"))
    assert f", {float(want.step.mfu_16bit):.0%} MFU of the 16-bit peak" in line, (CASES[k], line)
    assert "MFU of the 16-bit peak (6N + attention FLOPs" in want.utilization_basis


def _taken(edits: dict) -> bool:
    """calc's step model takes the edited layout (whatever the ranges' choice)."""
    return _calc_step({k: v for k, v in edits.items() if k != "Ranges_from"}) is not None


@pytest.mark.parametrize("k", range(len(CASES)))
def test_the_step_block_gives_no_step_time_where_calc_refuses_the_layout(books, k):
    """The step's seconds (and the results that follow from them) are #N/A where calc refuses the layout,
    with the reason beside them, and a number where it takes it; the block's deadline says so where no
    device count can take it (the split, CP, VPP without a pipeline), and searches where one can."""
    edits, wb = CASES[k], books[k]
    seconds, taken = named_value(wb, "Step_seconds"), _taken(edits)
    assert isinstance(seconds, float) is taken and (seconds == "#N/A") is not taken, (edits, seconds)
    assert (named_value(wb, "Step_run_hours") == "#N/A") is not taken, edits
    ref = wb.defined_names["Step_seconds"].attr_text.split("!")[-1].replace("$", "")
    note = wb["Budget"]["C" + ref[1:]].value
    assert (note or "").startswith("calc's step model refuses this layout") is not taken, (edits, note)
    lay = {**LAYOUT, **{k: v for k, v in edits.items() if k in LAYOUT}}
    one = lay["Tensor_parallel"] * lay["Pipeline_parallel"] * edits.get("Step_cp", 1) * lay["Expert_parallel"]
    some_count = _taken({**edits, "Devices_count": one})  # k = 1: the deadline's first count
    devices = named_value(wb, "Step_deadline_devices")
    assert (devices == step_deadline.REFUSED) is not some_count, (edits, devices)
    assert devices != "#N/A", edits


def test_a_choice_that_is_neither_says_so(books):
    """Ranges from typed as neither choice: the published runs' prior, and the note beside the choice says
    why (the drop-down refuses other text in Excel; a file written by another tool may still hold it)."""
    k = CASES.index({"Ranges_from": "step"})
    wb = books[k]
    ref = wb.defined_names[range_basis.STEP_CHOSEN].attr_text.split("!")[-1].replace("$", "")
    assert wb["Budget"]["C" + ref[1:]].value == "published runs: Ranges from not a choice"
