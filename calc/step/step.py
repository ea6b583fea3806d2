"""`step_time`: the terms of calc.step.terms composed into one training step on one layout.

step = (compute + vector + TP + exposed CP + EP) x (1 + (p-1)/(v·m)) + exposed DP + optimizer,
the bubble's (p-1)/(v·m) relative to the pipelined work being (p-1)/(v·m+p-1) of the step
(Narayanan et al. 2021 s.2.2). The matmuls take their math plus their weights' HBM reads
(terms.weight_read_seconds). DP traffic hides as each kind overlaps (terms.dp_exposed_seconds:
ZeRO 0-2 behind one micro-batch, ZeRO-3/FSDP layer by layer, every micro-batch) at the fitted
overlap efficiency. Pipeline point-to-point sends (b·s·d per micro-batch and stage boundary) are
left out: "usually small" (Narayanan et al. 2021 s.4.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.errors import TrainingBudgetError
from ..base.fastinit import Later, fast_init
from . import terms
from .calibrate import CONSTANTS, Constants
from .hardware import Hardware
from .layout import Layout
from .ops import ceil, floor, least, most, pick, take, when
from .shape import Shape

BREAKDOWN = ("compute", "tp", "cp", "ep", "bubble", "dp_exposed", "optimizer")


@fast_init(lazy=("limits",))  # calc/base/fastinit.py: fields filled into __dict__; limits worded when read
@dataclass(frozen=True)
class Step:
    """One step: step_seconds; tokens_per_second_per_device; mfu (6·N_active + attention FLOPs per
    token against the row's dense peak), mfu_16bit (the same against the 16-bit peak, the usual
    published basis); hfu (FLOPs done, recompute included, against the row's peak); breakdown:
    seconds by name (BREAKDOWN; compute includes the memory-bound vector work); low_precision_share:
    the share of the step's FLOPs run at the FP8 rate (0 on a 16-bit row); limits: words for what
    bounds this layout (scalar questions only); basis: where the hardware figures came from."""

    step_seconds: Any
    tokens_per_second_per_device: Any
    mfu: Any
    mfu_16bit: Any
    hfu: Any
    breakdown: dict[str, Any]
    low_precision_share: Any
    limits: tuple[str, ...]
    basis: str


def _links(lay: Layout, hw: Hardware) -> dict[str, Any]:
    """Bandwidths (bytes/s, one direction) and how each group meets the scale-up domain. Ranks are
    placed TP innermost, then CP, then DP (EP inside DP x CP), then PP: Megatron's order. TP and CP
    groups run along one axis of a torus (scale_up_axis_GBps: a TPU's ICI), the rest over all of it."""
    up = hw.scale_up_GBps * 0.5e9
    axis = hw.axis_GBps * 0.5e9
    out = hw.scale_out_Gbps * 0.125e9
    dom = hw.scale_up_domain
    inside = most(floor(dom / lay.tp), 1.0)  # DP x CP (and EP) ranks per scale-up domain
    return {"up": up, "out": out, "tp": pick(lay.tp <= dom, axis, out),
            "cp": pick(lay.tp * lay.cp <= dom, axis, out), "inside": inside,
            "ep_domains": lay.ep / least(lay.ep, inside),
            "expert_inside": most(floor(inside / lay.ep), 1.0)}  # an expert's DP ranks, ep apart


# _BUSIEST: the stages run in lockstep, so a step takes the busiest stage's time (Narayanan et al. 2021
# s.2.2): ceil(L/p) layers where p does not divide L (Megatron-Core splits the layers evenly or by
# hand; Llama 3 drew one layer from the first and last of 16 stages, arXiv:2407.21783 s.3.3.2).


def step_time(shape: Shape, layout: Layout, hw: Hardware, constants: Constants | None = None,
              trained: Any = 1.0) -> Step:
    """One training step of `shape` on `layout` over devices `hw` (each part's fields may be
    broadcasting arrays; all floats give plain-float answers), with the fitted `constants`
    (calc.step.CONSTANTS by default). `trained` the share of the weights that get gradients and
    optimizer updates: 1 for full training, the adapters' share for LoRA (its base frozen: no
    weight gradients, nothing to reduce or update; the adapters' own matmuls, about 1% of the
    weights, counted as a share of the base's). Seconds."""
    k = constants or CONSTANTS
    lay, sh = layout, shape
    dp = lay.dp                                                     # once: each use of the property is a pass
    link = _links(lay, hw)
    tokens = lay.global_batch_tokens / (dp * lay.cp)               # a stage's tokens per step
    layers = ceil(sh.n_layers / lay.pp)  # the busiest stage's, whose pace the pipeline runs at (_BUSIEST)
    share = layers * lay.pp / sh.n_layers  # its work over the average stage's (1 when p divides L)
    rec = lay.recompute
    done, model = terms.flops_per_token(sh.params_active, sh.n_layers, sh.attn_dim, lay.seq_len, rec, trained)
    frac = take(k.matmul_fraction, hw.family)
    rate16 = pick(hw.fp8, hw.tflops_16bit, hw.tflops) * 1e12 * frac  # work not at FP8: an FP32 row's at FP32
    rate_low = pick(hw.fp8, hw.tflops * 1e12 * frac * k.fp8_gain, rate16)
    lm_head = sh.vocab * sh.d_model                                 # stays 16-bit in FP8 recipes (TE)
    linear = most(sh.params_active - 2.0 * lm_head, 0.0)           # input embedding: a lookup, lm head: 16-bit
    low = hw.fp8 * (pick(rec >= 2, 6.0, 4.0) + 2.0 * trained) * linear  # FLOPs/token at the FP8 rate
    dev_tokens = tokens / (lay.tp * lay.pp) * share                 # the busiest device's matmul tokens
    core = terms.attention_flops(sh.n_layers, sh.attn_dim, lay.seq_len, rec)  # flash-attention kernels
    rate_attn = terms.attention_rate(rate16 * k.attention_ratio, lay.seq_len / lay.cp, k.attention_tile)
    dense = (sh.params_total - sh.params_expert) / (lay.tp * lay.pp) * share  # every EP rank's copy, busiest stage
    expert = sh.params_expert / (lay.ep * lay.tp * lay.pp) * share            # this EP rank's experts
    held = dense + expert
    micro = tokens * lay.cp / (lay.seq_len * lay.micro_batch)        # m, micro-batches per step
    gemm = terms.compute_seconds(dev_tokens, low, done - low - core, rate_low, rate16)
    attention = dev_tokens * core / rate_attn                       # the device's attention seconds
    if lay.flash_attention is not True:                             # and its scores through HBM, unfused
        attention = pick(lay.flash_attention, attention, attention + _unfused(sh, lay, dev_tokens, rec, hw))
    compute = gemm + terms.weight_read_seconds(held, micro, rec, hw.memory_tbps * 1e12, trained) + attention
    mem = hw.memory_tbps * 1e12
    vector = terms.vector_seconds(tokens, layers, sh.d_model, lay.tp, rec, k.vector_bytes, mem)
    tp = when(lay.tp > 1, lambda: terms.tp_seconds(tokens, layers, sh.d_model, lay.tp, rec, link["tp"]))
    cp = when(lay.cp > 1, lambda: terms.cp_seconds(tokens, layers, sh.kv_dim, lay.tp, lay.cp, rec, attention,
                                                    link["cp"]))
    ep = when((sh.top_k > 0) & (lay.ep > 1), lambda: terms.ep_seconds(
        tokens, layers, sh.d_model, sh.top_k, lay.ep, rec, (link["ep_domains"], link["up"], link["out"])))
    work = compute + vector + tp + cp + ep
    bubble = work * (lay.pp - 1.0) / (lay.vpp * micro)
    group = dp * lay.cp                                             # ranks holding the same weights
    dp_comm = when(group > 1, lambda: terms.dp_seconds(dense, group, lay.zero_stage, link["inside"], link["up"],
                                                           link["out"], trained)
                   + terms.dp_seconds(expert, group / lay.ep, lay.zero_stage, link["expert_inside"], link["up"],
                                      link["out"], trained))
    dp_exposed = terms.dp_exposed_seconds(dp_comm, compute + vector, micro, layers, lay.zero_stage, k.overlap)
    opt = (terms.optimizer_seconds(dense * trained, group, lay.zero_stage, mem)  # the trained weights' states
           + terms.optimizer_seconds(expert * trained, group / lay.ep, lay.zero_stage, mem))
    step = work + bubble + dp_exposed + opt
    tps = lay.global_batch_tokens / (lay.devices * step)
    parts = {"compute": compute + vector, "tp": tp, "cp": cp, "ep": ep, "bubble": bubble,
             "dp_exposed": dp_exposed, "optimizer": opt}
    limits = Later(_limits, lay, hw, parts, step) if type(step) is float or np.ndim(step) == 0 else ()
    return Step(step_seconds=step, tokens_per_second_per_device=tps, mfu=tps * model / (hw.tflops * 1e12),
                mfu_16bit=tps * model / (hw.tflops_16bit * 1e12), hfu=tps * done / (hw.tflops * 1e12),
                breakdown=parts, low_precision_share=low / done, limits=limits, basis=hw.basis)


def _unfused(sh: Shape, lay: Layout, dev_tokens: Any, rec: Any, hw: Hardware) -> Any:
    """terms.unfused_attention_seconds of the device's tokens; the head count is needed where it applies."""
    if np.any((np.asarray(sh.n_heads) <= 0) & ~np.asarray(lay.flash_attention, dtype=bool)):
        raise TrainingBudgetError("flash_attention FALSE times the attention scores of each head: give the model's "
                                  "head count (n_heads, or a preset)", "n_heads")
    return terms.unfused_attention_seconds(dev_tokens, sh.n_layers, sh.n_heads, lay.seq_len, rec,
                                           hw.memory_tbps * 1e12)


def _limits(lay: Layout, hw: Hardware, parts: dict[str, Any], step: float) -> tuple[str, ...]:
    """What bounds this layout, in words (scalar questions)."""
    words = []
    dom = int(hw.scale_up_domain)
    seqs = float(lay.global_batch_tokens / (lay.seq_len * lay.dp))
    if seqs <= 1 and float(parts["dp_exposed"] + parts["tp"]) > 0.2 * step:
        words.append(f"the batch gives each data-parallel rank {seqs:g} sequence: communication-bound")
    micro = seqs / float(lay.micro_batch)
    if micro != np.floor(micro):  # Megatron asserts it divides (its num_microbatches calculator); timed as the mean
        words.append(f"the batch is {micro:g} micro-batches of {float(lay.micro_batch):g} per data-parallel rank, "
                     "not a whole number: timed as that mean (Megatron needs it whole)")
    if lay.tp > dom:
        words.append(f"TP {lay.tp:g} spans {int(np.ceil(lay.tp / dom))} scale-up domains of {dom}")
    if lay.ep > 1 and lay.ep * lay.tp * lay.cp > dom:
        words.append(f"EP {lay.ep:g} crosses the scale-out network (scale-up domain {dom})")
    if lay.flash_attention is False:
        words.append("attention unfused: its scores through memory")
    for name in ("bubble", "tp", "ep", "cp", "dp_exposed"):
        share = float(parts[name]) / step
        if share > 0.15:
            words.append(f"{name} is {share:.0%} of the step")
    return tuple(words)
