"""Where the Budget's ranges take their utilization and goodput: the step model's whole run (the step
block, calc.run_hours on its architecture and layout: what calc.budget at utilization "step" gives) or the
published runs' prior (calc.budget at "prior"). Ranges_from chooses; the step model applies where the
architecture is Params' model and its layout is taken (Range_is_step), else the published runs do and
the sheet says why. Range_u_expected, Range_u_high, Range_u_low and Range_goodput are what the range
rows divide by; the Summary reads them by name."""

from __future__ import annotations

from typing import Any

from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import layout_pieces, native, pieces
from . import model_block, step_block, styles
from .cached_cells import CachedCells, note_cell, text
from .sheet_job import budget, device_row, input_cell, list_cell, name_cell

STEP_MODEL = "step model"
RANGES_FROM = (STEP_MODEL, "published runs")  # the Ranges_from input: its first is the default
STEP_CHOSEN = "Range_is_step"  # Ranges_from says the step model, and the step block times Params' model
UNUSED = ": not the step block's job or layout"
# the step model's utilization in each case: the one whose hours are the step block's whole run
# (hours at 100% on the ranges' row / (hours x goodput)); the low hours come from the high utilization
STEP_RUN = {"expected": "Step_run_hours", "high": "Step_run_low", "low": "Step_run_high"}
# the step's MFU in the basis line: of the 16-bit peak of the row the ranges use (Prior_device, the step block's
# 16-bit rate), as calc.budget's basis says it (Step_MFU is of the Device row's own peak: half on an FP8 row)
MFU_16BIT = f"Step_tps*Step_model_flops/({native.lookup('Prior_device', 'tflops')}*1E12)"
# MFU counts attention's FLOPs (Step_model_flops); the utilization rows above are of the Budget's 6N alone
MFU_WORDS = "MFU of the 16-bit peak (6N + attention FLOPs) on the Budget's layout"
# whether calc's step model takes the step block's layout: the layout splits the architecture
# (Range_split_ok), takes its CP (Range_cp_ok) and its products divide (Range_layout_ok)
SPLIT_OK, CP_OK, LAYOUT_OK = layout_pieces.SPLIT_OK, layout_pieces.CP_OK, layout_pieces.LAYOUT_OK


def _band_words() -> str:
    g, (fast, slow) = calc.fit_goodput(), calc.STEP_RESIDUAL
    return (f"; band x{fast:g}-x{slow:g} of step time (p10-p90 of its leave-one-out errors on measured layouts) "
            f"and goodput {g.low:.2f}-{g.high:.2f}")


def range_basis() -> str:
    """Where the ranges' utilization comes from, in words: the prior's basis line (Prior_basis), or the
    step's seconds and MFU on the step block's layout and the band calc.budget states at "step"."""
    step = pieces.step_words("Step_seconds", MFU_16BIT, STEP_MODEL, f" {MFU_WORDS}{_band_words()}")
    return pieces.either(STEP_CHOSEN, step, "Prior_basis")


def range_basis_text(v: dict[str, Any], table: calc.DeviceTable, prior_words: str) -> str:
    """range_basis()'s value at the default basis (`prior_words` the Prior_basis line's)."""
    if not step_applies(v):
        return prior_words
    st = step_block.at_defaults(v, table)[1]
    return f"{STEP_MODEL}: step {float(st.step_seconds):.2f} s, {float(st.mfu_16bit):.0%} {MFU_WORDS}{_band_words()}"


def write(ws: Worksheet, cached: CachedCells, b: calc.Budget, v: dict[str, Any], r: int) -> int:
    """Ranges_from (published runs | step model), and the goodput and utilizations the ranges use
    (Range_goodput, Range_u_expected, Range_u_high, Range_u_low); returns the last row."""
    text(ws, f"A{r}", "Ranges from")
    input_cell(ws, f"B{r}", RANGES_FROM[0])
    note_cell(ws, f"C{r}", f"{' | '.join(RANGES_FROM)} (the step block below, or the prior above)")
    name_cell(ws, "Ranges_from", f"B{r}")
    list_cell(ws, f"B{r}", RANGES_FROM, strict=True)
    p, step = b.prior, step_applies(v)
    chosen = pieces.is_text("Ranges_from", STEP_MODEL)
    applies = pieces.step_applies(chosen, "Method", ("Arch_params", "Arch_active_flops"), ("Params", "Active_used"),
                                  STEP_RUN["expected"], LAYOUT_OK)
    goodput = pieces.either(STEP_CHOSEN, "Step_goodput", "Goodput")
    split = layout_pieces.step_split_taken("Tensor_parallel", "Pipeline_parallel", "Expert_parallel", "Arch_heads",
                                    "Arch_layers", "Arch_experts")
    cp = layout_pieces.step_cp_taken("Step_cp", "Step_seq_len", "Step_flash")
    taken = layout_pieces.step_layout_taken(SPLIT_OK, CP_OK, "Step_dp", "Step_cp", "Expert_parallel", "Step_batch",
                                     "Step_micro_batch", "Pipeline_parallel", "Step_vpp")
    split_ok, cp_ok, layout_ok = layout_taken(v["devices"])
    rows = [(SPLIT_OK, "Step layout splits the architecture (TRUE / FALSE)", split, split_ok, styles.BOOLEAN),
            (CP_OK, "Step CP taken (TRUE / FALSE)", cp, cp_ok, styles.BOOLEAN),
            (LAYOUT_OK, "Step layout taken (TRUE / FALSE)", taken, layout_ok, styles.BOOLEAN),
            (STEP_CHOSEN, "Step model used (TRUE / FALSE)", applies, step, styles.BOOLEAN),
            ("Range_goodput", "Goodput the ranges use", goodput, float(b.goodput), "0.0%")]
    rows += [(f"Range_u_{case}", f"Utilization the ranges use, {case}",
              pieces.either(STEP_CHOSEN, pieces.share_of_run("Hours_at_100", STEP_RUN[case], "Step_goodput"),
                            f"Util_{case}"), getattr(p, case), "0.0%")
             for case in ("expected", "high", "low")]
    for i, (name, label, formula, value, fmt) in enumerate(rows, start=r + 1):
        text(ws, f"A{i}", label)
        cached.formula(ws, f"B{i}", formula, value, fmt)
        name_cell(ws, name, f"B{i}")
    said = pieces.either(STEP_CHOSEN, native.fold.literal("the step model"),
                         pieces.unused_words(chosen, pieces.is_text("Ranges_from", RANGES_FROM[1]), "published runs",
                                             UNUSED))
    cached.formula(ws, f"C{r + 4}", said, "the step model" if step else "published runs", font=styles.NOTE,
                   fill=None)
    note_cell(ws, f"C{r + 2}", "CP divides the sequence; 1 without flash attention (no unfused backend runs CP)")
    note_cell(ws, f"C{r + 3}", "as calc's step model takes it: devices whole replicas of TP x PP x CP, CP taken, "
                               "each replica a micro-batch, VPP only with PP")
    return r + len(rows)



def step_prior(v: dict[str, Any], table: calc.DeviceTable) -> calc.UtilizationPrior:
    """The step model's utilization range for the sheet's job, as calc.budget takes one: the step block's
    whole run (calc.run_hours on its architecture and layout: the hours calc.budget at utilization "step"
    gives) as shares of the ranges' row, hours at 100% / (hours x goodput); low hours from the high share."""
    run = step_block.at_defaults(v, table)[2]
    at_100 = float(budget(v, table, device=device_row(v["device"], table).name, utilization=1.0).hours)
    u = {case: at_100 / (float(getattr(run, hours)) * run.goodput)
         for case, hours in (("expected", "expected"), ("high", "low"), ("low", "high"))}
    return calc.UtilizationPrior(low=u["low"], expected=u["expected"], high=u["high"], goodput=run.goodput,
                                 n_runs=len(calc.fit_goodput().runs), basis=run.basis, method=STEP_MODEL)


def step_applies(v: dict[str, Any]) -> bool:
    """Range_is_step's value at the default basis: the step model chosen and the architecture (the model
    block's preset) the job's model, its total and active parameters within the 0.5% the Params note
    calls a match, trained in full (the step block times a full training step)."""
    arch = model_block.arch_params()
    active = v.get("active_params") or v["params"]
    pairs = ((float(arch.total), v["params"]), (float(arch.active_with_embedding), active))
    return (RANGES_FROM[0] == STEP_MODEL and v["method"] == "full" and all(abs(a - p) <= 0.005 * p for a, p in pairs)
            and layout_taken(v["devices"])[2])


def layout_taken(devices: float) -> tuple[bool, bool, bool]:
    """(Range_split_ok, Range_cp_ok, Range_layout_ok) at the blocks' default layout and architecture on `devices`: the
    split as calc.budget checks a preset's layout (TP divides the heads, PP at most the layers, EP the
    experts), and the products as calc.step.Layout itself checks them (it refuses what does not divide)."""
    shape = calc.model_preset(model_block.PRESET).shape
    lay = {n: d for n, _, _, d, _ in model_block.LAYOUT_INPUTS}
    s = {n: d for n, _, d, _, _ in step_block.STEP_INPUTS}
    tp, pp, ep = lay["Tensor_parallel"], lay["Pipeline_parallel"], lay["Expert_parallel"]
    split = shape["n_heads"] % tp == 0 and pp <= shape["n_layers"] and shape["n_experts"] % ep == 0
    cp_ok = s["Step_seq_len"] % s["Step_cp"] == 0 and (s["Step_cp"] == 1 or s["Step_flash"] is True)
    try:
        calc.StepLayout(devices=devices, seq_len=s["Step_seq_len"],
                        global_batch_tokens=s["Step_batch"] * s["Step_seq_len"], tp=tp, pp=pp, vpp=s["Step_vpp"],
                        cp=s["Step_cp"], ep=ep, micro_batch=s["Step_micro_batch"], recompute=s["Step_recompute"],
                        flash_attention=s["Step_flash"])
    except calc.TrainingBudgetError:
        return split, cp_ok, False
    return split, cp_ok, split


def ranged(v: dict[str, Any], table: calc.DeviceTable) -> calc.Budget:
    """calc.budget of the sheet's job at the ranges' basis (RANGES_FROM[0] where step_applies): its spans
    are the ranges' and the Summary's cached values."""
    return budget(v, table, utilization=step_prior(v, table) if step_applies(v) else "prior")
