"""The step model as calc.budget's utilization: a job asked at utilization="step" gets its hours
from the physics of one training step on its layout and batch (calc.step), not from the published
runs' regression.

The step's tokens per second per device, over the job's FLOPs per token, is the share of the
figures' row's rate the job reaches (the Budget's FLOPs are k·N_active per token, so hours =
tokens / (tokens/s per device x devices), as the step model says). Whole runs divide by goodput
fitted on the published whole runs (calc.fit_goodput). The band: the step model's leave-one-out
residuals (calc.STEP_RESIDUAL, p10-p90) and goodput's spread, as calc.run_hours words them.
"""

from __future__ import annotations

import functools
from dataclasses import fields
from typing import Any

import numpy as np

from ..base.errors import TrainingBudgetError
from ..hardware.catalog import DeviceTable
from ..model.shapes import ModelPreset, preset_memo
from ..physics.fit import stage_activations
from ..physics.fit_search import Search
from ..physics.memory import trainable_share
from ..prior.regression import UtilizationPrior
from ..step import Layout, Shape, Step, fit_goodput, hardware, step_time
from ..step.layout import flag as flash_flag
from ..step.runs import STEP_RESIDUAL, STEP_RESIDUAL_ROWS
from ..step.shape import preset_shape

STEP_WORD = "step"
# fit's switches for activation memory (calc.physics.fit_search.Search's defaults), so the step's
# memory is the one fit lists for the layout
ACTIVATION_SEARCH = {f.name: f.default for f in fields(Search) if f.name in ("sequence_parallel", "flash_attention",
                                                                           "loss")}
METHOD = "step model"


def wants_step(utilization: Any) -> bool:
    """True for utilization="step" (any case and spacing); False for anything not text (a number, an array)."""
    if not isinstance(utilization, str):
        return False
    return utilization == STEP_WORD or utilization.strip().lower() == STEP_WORD


STEP_METHODS = ("full", "lora")  # what the step model times


def trained_share(method: Any, preset: ModelPreset | None, trainable: Any = None) -> Any:
    """The share of the weights a step trains (calc.step.step_time's `trained`): 1 for full training,
    the adapters' share of the model's parameters for LoRA. QLoRA and inference are refused:
    QLoRA dequantizes its 4-bit base weights for every matmul, a cost no measured step here
    calibrates, and inference is no training step."""
    if method not in STEP_METHODS:
        why = ("its 4-bit base weights are dequantized for every matmul, which no measured step calibrates"
               if method == "qlora" else "it is not a training step")
        raise TrainingBudgetError(f"utilization 'step' times full and LoRA training steps; method {method!r} is not "
                                  f"modelled ({why}): give a utilization", "method")
    if method == "full":
        return 1.0
    return trainable_share(method, shape_of(preset).params_total, trainable)


def shape_of(preset: ModelPreset | None) -> Shape:
    """The step model's view of a preset's shape (calc.step.preset_shape); a job of parameters alone
    has no shape to time."""
    if preset is None or not preset.has_shape:
        raise TrainingBudgetError("utilization 'step' needs the model's shape: give a model (a preset, e.g. "
                                  "'Llama 3.1 70B', or a config.json), not parameters alone", "model")
    return preset_shape(preset)


def layout_of(job: Any, devices: Any) -> Layout:
    """The step's layout: the job's layout part (its batch sizes' defaults filled in) on `devices`."""
    lay = job.layout
    seq_len, tokens = lay.sizes()
    return Layout(devices=devices, seq_len=seq_len, global_batch_tokens=tokens, tp=lay.tp, pp=lay.pp, vpp=lay.vpp,
                  cp=lay.cp, ep=lay.ep, zero_stage=lay.zero_stage, micro_batch=lay.micro_batch,
                  recompute=lay.recompute, flash_attention=lay.flash_attention)


_SCALARS = {int, float, str, bool}


def step_activations(job: Any) -> Any:
    """The activation bytes a job at utilization "step" holds: its own where it gives them (not 0),
    else counted from the step's layout and batch: the busiest device's in-flight micro-batches at
    the layout's micro-batch, sequence length, recompute and flash attention (its scores held
    without it), with sequence parallelism (fit's default), the bytes calc.fit_layouts counts for the
    same layout (calc.physics.fit.stage_activations)."""
    given = job.training.activations
    if not (isinstance(given, (int, float)) and given == 0):
        return given
    lay = job.layout
    sizes = (lay.tp, lay.pp, lay.cp, lay.vpp, lay.micro_batch, lay.recompute, lay.sizes()[0], lay.flash_attention)
    if set(map(type, sizes)) <= _SCALARS:  # a scalar layout: counted once per preset
        return float(_scalar_activations(job.model.preset, *sizes))
    act = _activations(job.model.preset, *sizes)
    return float(act) if np.ndim(act) == 0 else act


def _activations(preset: ModelPreset, *sizes: Any) -> Any:
    """stage_activations at (tp, pp, cp, vpp, micro_batch, recompute, seq_len, flash_attention) with fit's
    other switches; an array of recompute names counted name by name (each a different set of stored tensors)."""
    *split, micro, recompute, seq_len, flash = sizes
    if np.ndim(flash):  # an array of flags: each counted where it holds
        f, out = flash_flag(flash), 0.0
        for v in (True, False):
            out = np.where(f == v, _activations(preset, *split, micro, recompute, seq_len, v), out)
        return out
    o = {**ACTIVATION_SEARCH, "seq_len": seq_len, "flash_attention": flash}
    if isinstance(recompute, str) or np.ndim(recompute) == 0:
        return stage_activations(preset.shape, tuple(split), micro, recompute, o)
    names = np.char.lower(np.char.strip(np.asarray(recompute, dtype=str)))
    out: Any = 0.0
    for name in np.unique(names):
        out = np.where(names == name, stage_activations(preset.shape, tuple(split), micro, str(name), o), out)
    return out


_scalar_activations = preset_memo(_activations)


def step_prior(job: Any, devices: Any, per_token: Any, rate_tflops: Any,
               table: DeviceTable) -> tuple[UtilizationPrior, Step, str]:
    """(the utilization range the step gives on the figures' row of `rate_tflops`, the Step, the
    goodput's basis) for `job` on `devices`, whose FLOPs per token are `per_token`."""
    trained = trained_share(job.training.method, job.model.preset, job.training.trainable)
    hw = hardware(job.cluster.device, table)
    cal = job.cluster.calibration
    k = cal.constants_for(hw) if cal is not None else None  # a team's factor on its measured devices
    st = step_time(shape_of(job.model.preset), layout_of(job, devices), hw, k, trained)
    u = st.tokens_per_second_per_device * per_token / (rate_tflops * 1e12)
    g = fit_goodput()
    fast, slow = cal.band_for(hw.name) if cal is not None else STEP_RESIDUAL
    defaults = job.layout.defaults_used()
    team = cal is not None and hw.name in cal.factors
    band = (f"band x{fast:.3g}-x{slow:.3g} of step time (the team's calibration) and goodput {g.low:.2f}-{g.high:.2f}"
            if team else _published_band())
    basis = (f"{METHOD}: step {_seconds(st.step_seconds)}, {_share(st.mfu_16bit)} MFU of the 16-bit peak "
             f"(6N + attention FLOPs); {band}"
             + (f"; {defaults}" if defaults else "") + (f"; {cal.basis}" if team else "")
             + ("" if job.training.method == "full" else f"; LoRA: the base frozen (no weight gradients), "
                f"{_percent(trained)} of the weights trained"))
    prior = UtilizationPrior(low=u / slow * g.low / g.expected, expected=u, high=u / fast * g.high / g.expected,
                             goodput=g.expected, n_runs=len(g.runs), basis=basis, method=METHOD)
    return prior, st, g.basis


@functools.cache
def _published_band() -> str:
    """The band's words at the published constants (the same for every job: worded once)."""
    g = fit_goodput()
    fast, slow = STEP_RESIDUAL
    return (f"band x{fast:g}-x{slow:g} of step time (p10-p90 of its leave-one-out residuals on {STEP_RESIDUAL_ROWS} "
            f"measured layouts) and goodput {g.low:.2f}-{g.high:.2f}")


def _seconds(value: Any) -> str:
    return f"{value:.3g} s" if isinstance(value, float) else "per job"


def _percent(value: Any) -> str:
    """A small share in two significant figures (0.25%, 1%); "per job" for arrays."""
    return f"{value * 100:.2g}%" if isinstance(value, float) else "a share per job"


def _share(value: Any) -> str:
    return f"{value:.0%}" if isinstance(value, float) else "per job"


def step_words(st: Step) -> str:
    """'step 4.1 s: compute 71%, TP 9%, bubble 12%, exposed DP 3%; 38% MFU' for a scalar Step."""
    parts = st.breakdown
    total = sum(float(v) for v in parts.values()) or 1.0
    names = {"compute": "compute", "tp": "TP", "cp": "CP", "ep": "EP", "bubble": "bubble",
             "dp_exposed": "exposed DP", "optimizer": "optimizer"}
    shown = [f"{names[k]} {float(v) / total:.0%}" for k, v in parts.items() if float(v) / total >= 0.005]
    low = float(st.mfu_16bit) != float(st.mfu)  # an FP8 row: its own peak, and the 16-bit one runs report
    mfu = f"{float(st.mfu):.0%} MFU" + (f" ({float(st.mfu_16bit):.0%} of the 16-bit peak)" if low else "")
    return (f"step {float(st.step_seconds):.3g} s: {', '.join(shown)}; {mfu} "
            f"({float(st.tokens_per_second_per_device):,.0f} tokens/s per device)")
