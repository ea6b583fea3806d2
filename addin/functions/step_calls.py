"""The step model's Excel functions: one training step of a preset model on a layout, through calc.

Each function builds the job from flat names (calc.job, the layout in Megatron's words: tp, pp,
vpp, cp, ep, seq_len, micro_batch, recompute; `global_batch` in sequences, as Megatron's
--global-batch-size) and asks calc.budget at utilization "step", so a cell gives the same figures
as `trainbudget estimate --step` (calc.step_row: the Budget's step figures). Imports only
trainbudget.calc and numpy, so the xlwings Lite edition bundles this module beside calc.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ... import calc

PART_WORDS = {"compute": "compute", "tp": "TP", "cp": "CP", "ep": "EP", "bubble": "bubble",
              "dp_exposed": "exposed DP", "optimizer": "optimizer"}  # as calc.step_words names them
# calc.step_row's keys as TRAIN_STEP's rows: (key, label with its unit)
ROWS = (("step_seconds", "step seconds"), ("tokens_per_second_per_device", "tokens/s per device"),
        ("mfu", "MFU (row's dense peak)"), ("mfu_16bit", "MFU (16-bit peak)"), ("hfu", "HFU"),
        *((f"step_{p}_seconds", f"{PART_WORDS[p]} seconds") for p in calc.STEP_PARTS),
        ("seq_len", "sequence length (tokens)"), ("global_batch_tokens", "global batch (tokens)"))


def _one(function: str, name: str, value: Any) -> Any:
    """A single value: a one-cell range is its cell; a larger one is refused, naming the argument."""
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise calc.TrainingBudgetError(f"{function} times one job; {name} is a range of {value.size} cells", name)
        return value.reshape(-1)[0].item() if value.dtype != object else value.reshape(-1)[0]
    return value


def _whole(name: str, value: Any) -> float:
    """A whole number >= 1 (a count of sequences), else a message naming the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1 or float(value) != int(value):
        raise calc.TrainingBudgetError(f"{name} must be a whole number >= 1 (got {calc.show_value(value)})", name)
    return float(value)


@dataclass(frozen=True)
class StepArgs:
    """A step function's Excel arguments, as given (None: blank): the model, device and devices, the
    layout (tp, pp, vpp, cp, ep), the batch (seq_len, global_batch in sequences, micro_batch),
    recompute and the ZeRO stage."""

    model: Any
    device: Any
    devices: Any
    tp: Any = None
    pp: Any = None
    vpp: Any = None
    cp: Any = None
    ep: Any = None
    seq_len: Any = None
    global_batch: Any = None
    micro_batch: Any = None
    recompute: Any = None
    zero_stage: Any = None


def step_figures(function: str, args: StepArgs, table: calc.DeviceTable | None = None) -> dict[str, Any]:
    """calc.step_row of the job: step seconds, tokens/s per device, MFU, HFU and seconds by part;
    `function` (TRAIN_STEP, ...) names the door in a range's refusal."""
    return calc.step_row(calc.budget(step_job(function, args, table)))


def step_job(function: str, args: StepArgs, table: calc.DeviceTable | None = None, tokens: Any = 1e9) -> calc.Job:
    """The Job of a step function's arguments at utilization "step" (None: calc's default), training
    `tokens`; `function` names the door in a range's refusal."""
    cells = {f.name: getattr(args, f.name) for f in fields(args) if f.name != "global_batch"}
    given = {k: _one(function, k, v) for k, v in cells.items() if v is not None}
    if "model" not in given:
        raise calc.TrainingBudgetError("model is empty: give a preset's name, e.g. 'Llama 3.1 70B'", "model")
    if not isinstance(given["model"], str):
        raise calc.TrainingBudgetError(f"model must be a preset's name, e.g. 'Llama 3.1 70B' (got "
                                       f"{calc.show_value(given['model'])})", "model")
    if args.global_batch is not None:  # sequences, as Megatron counts them
        sequences = _whole("global_batch", _one(function, "global_batch", args.global_batch))
        given["global_batch_tokens"] = sequences * given.get("seq_len", calc.DEFAULT_SEQ_LEN)
    return calc.job(**given, table=table, tokens=tokens, utilization="step")


# flat: one argument per TRAIN_STEP argument (Excel's flat call; each one cell)
def train_step(model: Any, device: Any, devices: Any, tp: Any = None, pp: Any = None, vpp: Any = None,
               cp: Any = None, ep: Any = None, seq_len: Any = None, global_batch: Any = None,
               micro_batch: Any = None, recompute: Any = None, zero_stage: Any = None,
               table: calc.DeviceTable | None = None) -> list[list[Any]]:
    """One training step as label/value rows (ROWS): seconds, tokens/s per device, MFU, HFU and
    seconds by part (compute, TP, CP, EP, bubble, exposed DP, optimizer), then the batch timed."""
    row = step_figures("TRAIN_STEP", StepArgs(model, device, devices, tp, pp, vpp, cp, ep, seq_len, global_batch,
                                              micro_batch, recompute, zero_stage), table)
    return [[label, row[key]] for key, label in ROWS]


# flat: one argument per TRAIN_STEP_SECONDS argument (Excel's flat call; each one cell)
def train_step_seconds(model: Any, device: Any, devices: Any, tp: Any = None, pp: Any = None, vpp: Any = None,
                       cp: Any = None, ep: Any = None, seq_len: Any = None, global_batch: Any = None,
                       micro_batch: Any = None, recompute: Any = None, zero_stage: Any = None,
                       table: calc.DeviceTable | None = None) -> float:
    """Seconds per optimizer step (calc's step model)."""
    return step_figures("TRAIN_STEP_SECONDS", StepArgs(model, device, devices, tp, pp, vpp, cp, ep, seq_len,
                                                       global_batch, micro_batch, recompute, zero_stage),
                        table)["step_seconds"]


# flat: one argument per TRAIN_MFU argument (Excel's flat call; each one cell)
def train_mfu(model: Any, device: Any, devices: Any, tp: Any = None, pp: Any = None, vpp: Any = None,
              cp: Any = None, ep: Any = None, seq_len: Any = None, global_batch: Any = None,
              micro_batch: Any = None, recompute: Any = None, zero_stage: Any = None,
              table: calc.DeviceTable | None = None) -> float:
    """Model FLOPs utilization (6·N_active and attention per token, against the row's dense peak), 0-1."""
    return step_figures("TRAIN_MFU", StepArgs(model, device, devices, tp, pp, vpp, cp, ep, seq_len, global_batch,
                                              micro_batch, recompute, zero_stage), table)["mfu"]


# flat: one argument per TRAIN_STEP_DEVICES_FOR_DAYS argument (Excel's flat call; each one cell)
def train_step_devices_for_days(model: Any, device: Any, tokens: Any, days: Any, tp: Any = None, pp: Any = None,
                                vpp: Any = None, cp: Any = None, ep: Any = None, seq_len: Any = None,
                                global_batch: Any = None, micro_batch: Any = None, recompute: Any = None,
                                zero_stage: Any = None, table: calc.DeviceTable | None = None) -> float:
    """Fewest devices (a multiple of tp*pp*cp and of ep, within memory) on which the layout trains `tokens`
    within `days` days at the step model's expected hours, goodput included (calc.devices_for of the
    job at utilization "step": the step timed at each count, so the count carries its communication)."""
    name = "TRAIN_STEP_DEVICES_FOR_DAYS"
    job = step_job(name, StepArgs(model, device, None, tp, pp, vpp, cp, ep, seq_len, global_batch, micro_batch,
                                  recompute, zero_stage), table, _one(name, "tokens", tokens))
    try:
        return calc.devices_for(job, _one(name, "days", days))
    except calc.TrainingBudgetError as e:
        if e.field != "global_batch_tokens":
            raise
        seq_len, batch = job.layout.sizes()
        raise calc.TrainingBudgetError(f"no count meets the deadline before the global batch of {batch / seq_len:,.0f} "
                                       "sequences runs out of data-parallel ranks: give more days or a larger "
                                       "global_batch", "days") from None
