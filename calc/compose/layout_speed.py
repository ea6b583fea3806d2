"""Layouts ranked by speed: the step model (calc.step) over every layout calc.fit_layouts lists, in
one broadcasting call, so `fit` and `plan` can put first the layout that trains fastest, not the one
that merely fits with the fewest devices per replica.

Each fitting layout's tensor, pipeline, virtual, context and expert sizes, ZeRO stage, micro-batch
and recompute become a calc.step Layout at the job's sequence length and global batch; torchtitan's
op-level selective recompute ("op") is timed as selective (it recomputes about what Korthikanti et
al. 2022 §5's selective recompute does) and "offload" as full (calc.physics.recompute.TIMED_AS, which
calc.step.Layout reads).
Ties keep fit's memory order (a stable sort).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..hardware.catalog import DeviceTable
from ..model.shapes import ModelPreset
from ..physics.fit import DEFAULT_GLOBAL_BATCH, Layouts
from ..step import Layout, Step, hardware, step_time
from .step_terms import shape_of

RANKING = ("ranked by the step model's tokens/s per device (calc.step: compute, TP, CP, EP, the pipeline "
           "bubble, exposed DP), then fit's memory order")


def layout_steps(found: Layouts, preset: ModelPreset, device: Any, seq_len: int,
                 table: DeviceTable | None = None, trained: Any = 1.0, flash_attention: bool = True) -> Step:
    """The Step of every layout in `found` (arrays, in found's order) for `preset` on `device`, at
    `seq_len` tokens and found's global batch (sequences; fit's default when it was not given);
    `trained` the share of the weights that train (calc.trained_share: 1 full, LoRA's adapters);
    `flash_attention` the search's (False: unfused attention, calc.step.terms)."""
    devices = found.tp * found.pp * found.cp * found.dp
    batch = found.global_batch or DEFAULT_GLOBAL_BATCH
    lay = Layout(devices=devices.astype(float), seq_len=float(seq_len), global_batch_tokens=float(batch * seq_len),
                 tp=found.tp.astype(float), pp=found.pp.astype(float), vpp=found.vpp.astype(float),
                 cp=found.cp.astype(float), ep=found.ep.astype(float), zero_stage=found.zero_stage.astype(float),
                 micro_batch=found.micro_batch.astype(float), recompute=found.recompute,
                 flash_attention=bool(flash_attention))
    return step_time(shape_of(preset), lay, hardware(device, table), None, trained)


def by_speed(step: Step) -> np.ndarray:
    """Indices of the layouts, fastest first (most tokens per second per device); ties stable."""
    return np.argsort(-np.asarray(step.tokens_per_second_per_device, dtype=np.float64), kind="stable")
