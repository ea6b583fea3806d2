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

ROWS = calc.STEP_ROWS  # calc.step_row's keys as TRAIN_STEP's rows: (key, label with its unit)
# what only the step model reads
_STEP_ONLY = ("vpp", "seq_len", "global_batch", "micro_batch", "recompute", "flash_attention")


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
    recompute, the ZeRO stage and flash attention."""

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
    flash_attention: Any = None


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
               flash_attention: Any = None, table: calc.DeviceTable | None = None) -> list[list[Any]]:
    """One training step as label/value rows (ROWS): seconds, tokens/s per device, MFU, HFU and
    seconds by part (compute, TP, CP, EP, bubble, exposed DP, optimizer), then the batch timed."""
    row = step_figures("TRAIN_STEP", StepArgs(model, device, devices, tp, pp, vpp, cp, ep, seq_len, global_batch,
                                              micro_batch, recompute, zero_stage, flash_attention), table)
    return [[label, row[key]] for key, label in ROWS]


# flat: one argument per TRAIN_STEP_SECONDS argument (Excel's flat call; each one cell)
def train_step_seconds(model: Any, device: Any, devices: Any, tp: Any = None, pp: Any = None, vpp: Any = None,
                       cp: Any = None, ep: Any = None, seq_len: Any = None, global_batch: Any = None,
                       micro_batch: Any = None, recompute: Any = None, zero_stage: Any = None,
                       flash_attention: Any = None, table: calc.DeviceTable | None = None) -> float:
    """Seconds per optimizer step (calc's step model)."""
    return step_figures("TRAIN_STEP_SECONDS", StepArgs(model, device, devices, tp, pp, vpp, cp, ep, seq_len,
                                                       global_batch, micro_batch, recompute, zero_stage,
                                                       flash_attention), table)["step_seconds"]


# flat: one argument per TRAIN_MFU argument (Excel's flat call; each one cell)
def train_mfu(model: Any, device: Any, devices: Any, tp: Any = None, pp: Any = None, vpp: Any = None,
              cp: Any = None, ep: Any = None, seq_len: Any = None, global_batch: Any = None,
              micro_batch: Any = None, recompute: Any = None, zero_stage: Any = None,
              flash_attention: Any = None, table: calc.DeviceTable | None = None) -> float:
    """Model FLOPs utilization (6·N_active and attention per token, against the row's dense peak), 0-1."""
    return step_figures("TRAIN_MFU", StepArgs(model, device, devices, tp, pp, vpp, cp, ep, seq_len, global_batch,
                                              micro_batch, recompute, zero_stage, flash_attention), table)["mfu"]


# flat: one argument per TRAIN_STEP_DEVICES_FOR_DAYS argument (Excel's flat call; each one cell)
def train_step_devices_for_days(model: Any, device: Any, tokens: Any, days: Any, tp: Any = None, pp: Any = None,
                                vpp: Any = None, cp: Any = None, ep: Any = None, seq_len: Any = None,
                                global_batch: Any = None, micro_batch: Any = None, recompute: Any = None,
                                zero_stage: Any = None, flash_attention: Any = None,
                                table: calc.DeviceTable | None = None) -> float:
    """Fewest devices (a multiple of tp*pp*cp and of ep, within memory) on which the layout trains `tokens`
    within `days` days at the step model's expected hours, goodput included (calc.devices_for of the
    job at utilization "step": the step timed at each count, so the count carries its communication)."""
    name = "TRAIN_STEP_DEVICES_FOR_DAYS"
    job = step_job(name, StepArgs(model, device, None, tp, pp, vpp, cp, ep, seq_len, global_batch, micro_batch,
                                  recompute, zero_stage, flash_attention), table, _one(name, "tokens", tokens))
    try:
        return calc.devices_for(job, _one(name, "days", days))
    except calc.TrainingBudgetError as e:
        if e.field != "global_batch_tokens":
            raise
        seq_len, batch = job.layout.sizes()
        raise calc.TrainingBudgetError(f"no count meets the deadline before the global batch of {batch / seq_len:,.0f} "
                                       "sequences runs out of data-parallel ranks: give more days or a larger "
                                       "global_batch", "days") from None


# flat: one argument per TRAIN_BUDGET argument (Excel's flat call; each one cell)
def train_budget(params: Any, tokens: Any, device: Any, utilization: Any = 1.0, devices: Any = 1,
                 usd_per_device_hour: Any = None, pue: Any = 1.0, method: Any = "full", optimizer: Any = "adamw",
                 zero_stage: Any = 0, active_params: Any = None, tp: Any = None, pp: Any = None, vpp: Any = None,
                 cp: Any = None, ep: Any = None, seq_len: Any = None, global_batch: Any = None,
                 micro_batch: Any = None, recompute: Any = None, flash_attention: Any = None,
                 table: calc.DeviceTable | None = None) -> list[list[Any]]:
    """The whole budget as label/value rows (calc.budget_table of the one Budget). `params` a count,
    or a preset's name (the model whose shape utilization "step" times); `utilization` a share in
    (0, 1] or "step": the step model on the layout (tp, pp, vpp, cp, ep; seq_len, global_batch in
    sequences, micro_batch, recompute, flash_attention), its expected figures, the hours' low and high
    and the step's own rows. The layout's degrees set the memory per device at any utilization; the
    batch, recompute and flash attention are the step's, so they are refused beside a given share."""
    name = "TRAIN_BUDGET"
    given = {k: _one(name, k, v) for k, v in dict(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, seq_len=seq_len,
                                                micro_batch=micro_batch, recompute=recompute,
                                                flash_attention=flash_attention).items()
             if v is not None}
    step = isinstance(utilization, str) and utilization.strip().lower() == "step"
    if not step:
        unused = [k for k in _STEP_ONLY if k in given or (k == "global_batch" and global_batch is not None)]
        if unused:
            what = "attention" if unused[0] == "flash_attention" else "batch"
            raise calc.TrainingBudgetError(f"{unused[0]} sets the step model's {what}: give utilization \"step\" "
                                           f"(got utilization {calc.show_value(utilization)})", unused[0])
    if global_batch is not None:  # sequences, as Megatron counts them
        sequences = _whole("global_batch", _one(name, "global_batch", global_batch))
        given["global_batch_tokens"] = sequences * given.get("seq_len", calc.DEFAULT_SEQ_LEN)
    model = {"model": params} if isinstance(params, str) else {"params": params}
    job = calc.job(**model, tokens=tokens, device=device, devices=devices, utilization="step" if step else utilization,
                   price=usd_per_device_hour, pue=pue, method=method, optimizer=optimizer, zero_stage=zero_stage,
                   active_params=active_params, table=table, **given)
    if not step and (isinstance(utilization, str) or hasattr(utilization, "hour_factors")):
        raise calc.TrainingBudgetError(f"utilization must be a number in (0, 1] or \"step\" (got "
                                       f"{calc.show_value(utilization)}): the budget table holds points; for low / "
                                       "expected / high use TRAIN_STEP's band or the Budget sheet", "utilization")
    return calc.budget_table(calc.budget(job))
