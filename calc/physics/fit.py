"""Which layouts of a job fit a device's memory: tensor, pipeline (uneven stages allowed),
virtual pipeline, context, expert and data parallelism, ZeRO stage, recompute and micro-batch.

Every layout is evaluated at once as numpy arrays. Constraints (Megatron-LM): tensor parallel
divides the attention heads and the key/value heads (Shoeybi et al. 2019, arXiv:1909.08053,
§3); pipeline depth is any divisor of the devices up to the layer count, the busiest stage
holding ceil(L/p) layers (Megatron-Core's uneven first/last stages,
--decoder-first-pipeline-num-layers; Llama 3 405B trained with 16 stages over 126 layers,
arXiv:2407.21783, §3.3.2) plus the input embedding on the first stage and the output layer
and loss on the last; virtual stages v > 1 divide ceil(L/p) (Narayanan et al. 2021,
arXiv:2104.04473, §2.2.2); context parallel c divides the devices and seq_len / (2·c) is
whole (Megatron-Core's load-balanced context parallelism splits the sequence into 2·c chunks);
expert parallel divides the experts and data · context parallel (DeepSpeed-MoE,
arXiv:2201.05596, §5; Megatron-Core MoE). ZeRO / the distributed optimizer shards states over
data · context ranks, which hold the same weights (Megatron-Core's distributed optimizer uses
the data-parallel group with context-parallel ranks). Bytes come from `train_memory` and
`activation_bytes` with the model's own shape (calc.physics.activations).

Capacity: the device's memory_gib (or `memory_gib` given) less the reserve, the one rule of
calc/hardware/capacity.py: `reserve_gib` when given, else the larger of 3 GiB and 5% (what the driver hides,
79.65 of an H100's 80 GiB, plus the CUDA context, NCCL's buffers and the allocator), as `estimate`,
`plan` and the Budget sheet count it.

Batch (when `global_batch` is given, in sequences per optimizer step as Megatron-LM's
--global-batch-size): data · micro-batch · accumulation = global batch, the accumulation a whole
number >= 1 (Megatron-LM's num_microbatches = global_batch_size / (micro_batch_size ·
data_parallel_size), which it requires to be whole), so no layout needs more sequences per step
than the global batch; context-parallel ranks share one sequence and add none. The tokens per
step are global_batch · seq_len.

Ranking (stated, as in the CLI): fewest devices per model replica (tensor · pipeline ·
context: less model-parallel communication), then least recompute (none, selective, op, full:
fewer FLOPs), then the largest micro-batch, then the lowest ZeRO stage, then the fewest
virtual stages, then the fewest bytes per device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ..base.checks import choice, flag, positive, whole
from ..base.errors import TrainingBudgetError, show
from ..hardware.capacity import GIB, reserve_bytes
from ..hardware.catalog import DeviceTable, catalog
from ..model.hf_config import load_config
from ..model.shapes import ModelPreset, model_params, model_preset
from .activations import activation_bytes
from .memory import METHODS, OPTIMIZERS, ZERO_STAGES, check_trainable, train_memory
from .stages import busiest_scale

MAX_FIT_DEVICES = 2 ** 22   # 4.2M devices: above any job; keeps the divisor search bounded
RECOMPUTE_ORDER = ("none", "selective", "op", "full")  # fewest recomputed FLOPs first (calc.physics.flops)
MICRO_BATCHES = (1, 2, 4)
MIN_CONTEXT_CHUNK = 1024  # tokens per context-parallel rank when context_parallel is searched
# The default global batch of the fit and plan commands: 1,024 sequences of 4,096 tokens (4,194,304
# tokens), Llama 2's batch at every size from 7B to 70B (Touvron et al. 2023, arXiv:2307.09288 §2.2:
# "a global batch-size of 4M tokens", context 4,096) and Llama 3 405B's first stage (Llama Team 2024,
# arXiv:2407.21783 §3.4.1: 4M tokens at 4,096, then 8M at 8,192, then 16M tokens).
DEFAULT_GLOBAL_BATCH = 1024
DEFAULT_SEQ_LEN = 4096
COUNTS = ("tensor", "pipeline", "virtual", "context", "expert", "data", "zero", "micro_batch")
BYTES = ("weights", "gradients", "optimizer", "master", "activations", "total", "headroom")


@dataclass(frozen=True)
class Layouts:
    """Layouts that fit, one array element each, in the ranking order (module doc).

    Counts: tensor, pipeline, virtual (stages per device), context, expert, data (parallel
    sizes), zero (stage), micro_batch; recompute (text). Bytes per device (busiest device):
    weights, gradients, optimizer, master, activations, total; headroom = usable - total.
    `memory_bytes` the usable memory (`capacity_bytes` - `reserve_bytes`). When nothing fits,
    `nearest` is the layout with the fewest bytes, `would_fit` the catalog hardware whose
    usable memory holds it, and `devices_to_fit` the fewest devices (`devices` doubled, up to
    MAX_FIT_DEVICES) on which some layout fits this device (None if none does).
    """

    tensor: np.ndarray
    pipeline: np.ndarray
    virtual: np.ndarray
    context: np.ndarray
    expert: np.ndarray
    data: np.ndarray
    zero: np.ndarray
    micro_batch: np.ndarray
    recompute: np.ndarray
    weights: np.ndarray
    gradients: np.ndarray
    optimizer: np.ndarray
    master: np.ndarray
    activations: np.ndarray
    total: np.ndarray
    headroom: np.ndarray
    memory_bytes: float
    capacity_bytes: float = 0.0
    reserve_bytes: float = 0.0
    nearest: dict[str, Any] | None = None
    would_fit: tuple[str, ...] = field(default=())
    devices_to_fit: int | None = None
    accumulation: np.ndarray | None = None  # gradient-accumulation steps per layout (with a global batch)
    global_batch: int | None = None         # sequences per optimizer step (None: not constrained)

    def __len__(self) -> int:
        return int(self.total.shape[0])

    def rows(self) -> list[dict[str, Any]]:
        """One dict per layout (counts as ints, recompute as text, bytes as floats)."""
        names = [f.name for f in fields(self)][:16]
        rows = [_row(self, names, i) for i in range(len(self))]
        if self.accumulation is not None:
            for row, acc in zip(rows, self.accumulation, strict=True):
                row["accumulation"] = int(acc)
        return rows


def _row(lay: Any, names: list[str], i: int) -> dict[str, Any]:
    return {n: (int(getattr(lay, n)[i]) if n in COUNTS else str(getattr(lay, n)[i]) if n == "recompute"
                else float(getattr(lay, n)[i])) for n in names}


def _divisors(n: int) -> np.ndarray:
    small = np.arange(1, int(np.sqrt(n)) + 1)
    small = small[n % small == 0]
    return np.unique(np.concatenate([small, n // small]))


def resolve_model(model: Any) -> ModelPreset:
    """A preset name, a path to a config.json, or a ModelPreset, with a shape."""
    if isinstance(model, ModelPreset):
        preset = model
    elif isinstance(model, str) and model.lower().endswith(".json"):
        preset = load_config(model)
    else:
        preset = model_preset(model)
    if not preset.has_shape:
        raise TrainingBudgetError(
            f"model {preset.name!r} has published totals but no standard shape; "
            "layouts need the shape (layers, width, heads)")
    return preset


def _count(name: str, value: Any, limit: int = MAX_FIT_DEVICES) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TrainingBudgetError(f"{name} must be one whole number (got {show(value)})")
    v = whole(name, float(value) if abs(value) < 1e300 else value)
    if v > limit:
        raise TrainingBudgetError(f"{name} must be at most {limit:,} (got {show(value)})")
    return int(v)


def _options(name: str, value: Any, default: tuple, allowed: tuple | None = None) -> tuple:
    """`value` (one or several) as a non-empty tuple, each checked; None gives `default`."""
    items = default if value is None else (tuple(value) if isinstance(value, (list, tuple)) else (value,))
    if not items:
        raise TrainingBudgetError(f"{name} must name at least one value (got {show(value)})")
    if allowed is not None:
        if all(isinstance(v, str) for v in items) and all(isinstance(a, str) for a in allowed):
            return tuple(dict.fromkeys(choice(name, v, allowed) for v in items))
        ok = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v in allowed for v in items)
        if not ok:
            raise TrainingBudgetError(f"{name} must be among {', '.join(map(str, allowed))} (got {show(value)})")
        return tuple(dict.fromkeys(int(v) for v in items))
    return tuple(dict.fromkeys(_count(name, v) for v in items))


def _grid(shape: dict[str, Any], n: int, contexts: tuple, seq: int,
          batch: int | None = None) -> tuple[np.ndarray, ...]:
    """Every (tensor, pipeline, virtual, context, expert, data) the shape allows, flat arrays; with a
    global `batch` (sequences), only data-parallel sizes that divide it (micro-batch 1 at least)."""
    heads, kv = shape["n_heads"], shape.get("n_kv_heads") or shape["n_heads"]
    L, experts = shape["n_layers"], shape.get("n_experts", 1)
    divs = _divisors(n)
    t = divs[(heads % divs == 0) & (kv % divs == 0)]
    p = divs[divs <= L]
    c = np.asarray([x for x in contexts if n % x == 0 and seq % (2 * x if x > 1 else 1) == 0], dtype=np.int64)
    e = divs[experts % divs == 0]
    v = np.arange(1, 9)
    T, P, V, C, E = (a.reshape(-1) for a in np.meshgrid(t, p, v, c, e, indexing="ij"))
    stage = -(-L // P)
    ok = (n % (T * P * C) == 0) & ((V == 1) | ((P > 1) & (stage % V == 0)))
    T, P, V, C, E = T[ok], P[ok], V[ok], C[ok], E[ok]
    D = n // (T * P * C)
    ok = (D * C) % E == 0
    if batch is not None:
        ok &= batch % D == 0
    return T[ok], P[ok], V[ok], C[ok], E[ok], D[ok]


def _capacity(device: Any, table: DeviceTable, memory_gib: Any, reserve_gib: Any) -> tuple[float, float]:
    """(capacity bytes, reserve bytes): calc/hardware/capacity.py's rule."""
    if memory_gib is not None:
        gib = float(positive("memory_gib", memory_gib))
    else:
        if not isinstance(device, str):
            raise TrainingBudgetError(f"device must be a device name (got {show(device)})")
        gib = float(table.value(device, "memory_gib"))
    capacity, reserve = gib * GIB, float(reserve_bytes(gib * GIB, reserve_gib))
    for name, value, got in (("memory_gib", capacity, memory_gib), ("reserve_gib", reserve, reserve_gib)):
        if not value < math.inf:  # GiB beyond float64 as bytes
            raise TrainingBudgetError(f"{name} (got {show(got)}) out of range: its bytes overflow float64")
    if reserve >= capacity:  # nothing usable: no layout could fit, and "-920 GiB usable" explains nothing
        raise TrainingBudgetError(f"reserve_gib must be less than the device's {show(gib)} GiB of memory "
                                  f"(got {show(reserve_gib if reserve_gib is not None else reserve / GIB)})")
    return capacity, reserve


def _activation_shape(shape: dict[str, Any]) -> dict[str, Any]:
    """The model's shape as `activation_bytes` options (no dropout: modern LLMs train without)."""
    opts: dict[str, Any] = {"gated_mlp": shape.get("gated_mlp", True), "dropout": False,
                            "ffn_dim": shape.get("ffn_dim", 4 * shape["d_model"])}
    if "kv_lora_rank" in shape:  # latent attention: K and V are up-projected to every head
        opts.update(n_kv_heads=shape["n_heads"], head_dim=shape["qk_nope_head_dim"] + shape["qk_rope_head_dim"])
    else:
        opts.update(n_kv_heads=shape.get("n_kv_heads") or shape["n_heads"], head_dim=shape.get("head_dim"))
    if shape.get("n_experts", 1) > 1:
        opts.update(n_experts=shape["n_experts"], top_k=shape["top_k"],
                    moe_ffn_dim=shape.get("moe_ffn_dim", opts["ffn_dim"]),
                    n_shared_experts=shape.get("n_shared_experts", 0))
    return opts


def _evaluate(preset: ModelPreset, cands: tuple[np.ndarray, ...], stages: tuple, modes: tuple,
              batches: tuple, o: dict[str, Any]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Bytes per device of every candidate (T, P, V, C, E, D: K of them) with every ZeRO stage,
    recompute mode and micro-batch: arrays of shape (stages, modes, batches, K), and the mask
    of real ones (with one replica ZeRO has nothing to shard: only the lowest stage). States
    do not depend on recompute or micro-batch, nor activations on ZeRO, so each is computed on
    its own axes and broadcast."""
    shape = preset.shape
    T, P, V, C, E, D = cands
    L = shape["n_layers"]
    L_eff = -(-L // P) * P                             # busiest stage holds ceil(L/p) layers
    b = model_params(**shape)
    moe = shape.get("n_experts", 1) > 1
    stage_p = float(shape["vocab"] * shape["d_model"])
    scale = busiest_scale(L, P)                        # calc.physics.stages: as calc.budget counts the busiest stage
    act_opts = _activation_shape(shape)
    if moe:
        n_moe = np.floor((L - shape.get("dense_layers", 0)) / shape.get("moe_every", 1))
        act_opts["moe_layers"] = np.minimum(np.ceil(n_moe * scale), L_eff)
    mb = np.asarray(batches, dtype=np.float64)[:, None]
    act = np.stack([np.broadcast_to(activation_bytes(
        L_eff, shape["d_model"], shape["n_heads"], o["seq_len"], mb, recompute=mode, tensor_parallel=T,
        sequence_parallel=o["sequence_parallel"], flash_attention=o["flash_attention"],
        pipeline_parallel=P, context_parallel=C, vocab=shape["vocab"], virtual_stages=V,
        loss=o["loss"], **act_opts), (len(batches), T.size)) for mode in modes])   # (modes, batches, K)
    z = np.asarray(stages, dtype=np.float64)[:, None]
    m = train_memory(stage_p + (b.total - stage_p) * scale, method=o["method"], trainable=o["trainable"],
                     optimizer=o["optimizer"],
                     grad_bytes=o["grad_bytes"], zero_stage=z, devices=T * P * C * D, tensor_parallel=T,
                     pipeline_parallel=P, expert_parallel=E, expert_params=(b.experts if moe else 0.0) * scale,
                     stage_params=stage_p, zero3_buffers=o["zero3_buffers"])  # (stages, K)
    full = (len(stages), len(modes), len(batches), T.size)
    parts = {k: np.broadcast_to(np.asarray(getattr(m, k), dtype=np.float64), (len(stages), T.size))
             for k in ("weights", "gradients", "optimizer", "master", "total")}   # (stages, K)
    parts["activations"] = act                                                 # (modes, batches, K)
    parts["sum"] = parts["total"][:, None, None, :] + act[None]                # (stages, modes, batches, K)
    real = np.broadcast_to(((D * C > 1)[None, :] | (z == min(stages)))[:, None, None, :], full)
    return parts, real


def fit_layouts(model: Any, device: Any, devices: Any, *, seq_len: Any = 4096,
                micro_batch: Any = None, recompute: Any = None, sequence_parallel: bool = True,
                flash_attention: bool = True, optimizer: str = "adamw", grad_bytes: Any = 4.0,
                zero_stages: Any = ZERO_STAGES, context_parallel: Any = None,
                zero3_buffers: bool = True, memory_gib: Any = None, reserve_gib: Any = None,
                method: str = "full", trainable: Any = None, loss: str = "standard",
                table: DeviceTable | None = None, global_batch: Any = None, explain: bool = True) -> Layouts:
    """The layouts of `devices` devices on which `model` trains within `device`'s usable memory.

    `model`: a preset name (calc/data/models.csv), a config.json path or a ModelPreset.
    Capacity: the device's memory_gib (or `memory_gib`, GiB) less the reserve (`reserve_gib` GiB, or
    calc/hardware/capacity.py's default: the larger of 3 GiB and 5%).
    `grad_bytes` 4: fp32 main gradients (Megatron/NeMo `grad_reduce_in_fp32`); 2 for bf16.
    Searched unless fixed: `micro_batch` (default 1, 2, 4), `recompute` (none, op and full; with
    FlashAttention "selective" stores the same bytes as "none", so it is searched only without
    it or when asked), `context_parallel` (divisors of devices up to 64 that leave >= 1,024
    tokens per rank), `zero_stages`; tensor, pipeline (any depth up to the layer count), virtual
    stages (1-8) and expert parallel always. `method`: full, lora or qlora (`trainable` as in
    `train_memory`: adapter parameters, a count or a fraction, default 1%). `loss`:
    "standard", "parallel" or "fused" (calc.physics.activations). `global_batch`: sequences per optimizer
    step (None: not constrained); only layouts whose data · micro-batch divides it are listed, each
    with its whole `accumulation`. `explain` False: no nearest miss nor devices_to_fit when nothing
    fits (a search that only wants the layouts). Constraints and ranking: module doc.
    """
    preset = resolve_model(model)
    shape = preset.shape
    n = _count("devices", devices)
    if trainable is not None:  # lora and qlora only; checked whatever the method, against the model's parameters
        check_trainable(trainable, float(preset.params().total))
    seq = _count("seq_len", seq_len, limit=2 ** 30)
    batch = None if global_batch is None else _count("global_batch", global_batch, limit=2 ** 40)
    o = {"seq_len": seq, "sequence_parallel": sequence_parallel, "flash_attention": flash_attention,
         "optimizer": choice("optimizer", optimizer, OPTIMIZERS), "grad_bytes": positive("grad_bytes", grad_bytes),
         "zero3_buffers": zero3_buffers, "method": choice("method", method, METHODS[:3]), "loss": loss,
         "trainable": trainable}
    stages = _options("zero_stages", zero_stages, ZERO_STAGES, ZERO_STAGES)
    # with FlashAttention "selective" stores what "none" does (no scores): search it only if asked
    searched = (("none", "op", "full") if flag("flash_attention", flash_attention) else RECOMPUTE_ORDER)
    modes = _options("recompute", recompute, searched, RECOMPUTE_ORDER)
    batches = _options("micro_batch", micro_batch, MICRO_BATCHES)
    if context_parallel is not None:
        fixed = _options("context_parallel", context_parallel, (1,))
        if any(n % c for c in fixed):
            raise TrainingBudgetError(
                f"context_parallel must divide devices (got {show(context_parallel)}, {show(devices)})")
    capacity, reserve = _capacity(device, table or catalog(), memory_gib, reserve_gib)
    cap = capacity - reserve

    def search(count: int) -> tuple[tuple[np.ndarray, ...], dict[str, np.ndarray], np.ndarray, np.ndarray]:
        # searched context sizes keep chunks of >= MIN_CONTEXT_CHUNK tokens (up to 64 ranks)
        contexts = (fixed if context_parallel is not None else tuple(
            int(x) for x in _divisors(count) if x <= 64 and seq >= MIN_CONTEXT_CHUNK * x) or (1,))
        cands = _grid(shape, count, contexts, seq, batch)
        if not cands[0].size:
            none = np.zeros((len(stages), len(modes), len(batches), 0))
            parts = {k: np.zeros((len(stages), 0)) for k in ("weights", "gradients", "optimizer", "master", "total")}
            parts.update(activations=np.zeros((len(modes), len(batches), 0)), sum=none)
            return cands, parts, none.astype(bool), none.astype(bool)
        parts, real = _evaluate(preset, cands, stages, modes, batches, o)
        if batch is not None:  # data · micro-batch divides the global batch: whole accumulation >= 1
            allowed = batch % (cands[5][None, :] * np.asarray(batches)[:, None]) == 0   # (batches, K)
            real = real & allowed[None, None]
        return cands, parts, real, real & (parts["sum"] <= cap)

    cands, parts, real, fit = search(n)
    more = None  # when nothing fits: the fewest devices, n doubled, on which something does
    count = 2 * n
    while explain and not fit.any() and more is None and count <= MAX_FIT_DEVICES:
        more = count if search(count)[3].any() else None
        count *= 2
    cols, picked = _columns(cands, parts, np.flatnonzero(fit.reshape(-1)), stages, modes, batches)
    cost = np.asarray([RECOMPUTE_ORDER.index(r) for r in modes])[cols["recompute_index"]]
    batch_rank = np.asarray(sorted(range(len(batches)), key=lambda i: -batches[i])).argsort()[cols["mb_index"]]
    rank = cols["tensor"] * cols["pipeline"] * cols["context"]   # the ranking rule, one integer key
    keys = ((cost, len(RECOMPUTE_ORDER)), (batch_rank, len(batches)), (cols["zero"], 4), (cols["virtual"], 9))
    for key, size in keys:
        rank = rank * size + key
    order = np.argsort(picked["total"], kind="stable")         # then by the rule, stably
    order = order[np.argsort(rank[order], kind="stable")]
    nearest, would = (_nearest(cands, parts, real, fit, stages, modes, batches, reserve_gib, table or catalog())
                      if explain else (None, ()))
    counts = {k: cols[k][order] for k in COUNTS}
    acc = None if batch is None else batch // (counts["data"] * counts["micro_batch"])
    return Layouts(**counts, recompute=np.asarray(modes)[cols["recompute_index"][order]],
                   **{k: picked[k][order] for k in BYTES[:-1]}, headroom=cap - picked["total"][order],
                   memory_bytes=cap, capacity_bytes=capacity, reserve_bytes=reserve,
                   nearest=nearest, would_fit=would, devices_to_fit=more, accumulation=acc, global_batch=batch)


def _columns(cands: tuple[np.ndarray, ...], parts: dict[str, np.ndarray], flat: np.ndarray, stages: tuple,
             modes: tuple, batches: tuple) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The counts and bytes of the candidates at `flat` (indices into the (stages, modes,
    batches, K) arrays)."""
    shape = (len(stages), len(modes), len(batches), cands[0].size)
    zi, ri, mi, ki = np.unravel_index(flat, shape)
    T, P, V, C, E, D = (a[ki] for a in cands)
    cols = {"tensor": T, "pipeline": P, "virtual": V, "context": C, "expert": E, "data": D,
            "zero": np.asarray(stages)[zi], "micro_batch": np.asarray(batches)[mi], "recompute_index": ri,
            "mb_index": mi}
    picked = {k: parts[k][zi, ki] for k in ("weights", "gradients", "optimizer", "master")}
    picked["activations"] = parts["activations"][ri, mi, ki]
    picked["total"] = parts["total"][zi, ki] + picked["activations"]
    return cols, picked


def _nearest(cands: tuple[np.ndarray, ...], parts: dict[str, np.ndarray], real: np.ndarray, fit: np.ndarray,
             stages: tuple, modes: tuple, batches: tuple, reserve_gib: Any,
             table: DeviceTable) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """When nothing fits: the layout with the fewest bytes and the hardware that would hold it."""
    if fit.any() or not real.any():
        return None, ()
    totals = np.where(real, parts["sum"], np.inf).reshape(-1)
    cols, picked = _columns(cands, parts, np.asarray([int(np.argmin(totals))]), stages, modes, batches)
    row: dict[str, Any] = {k: int(cols[k][0]) for k in COUNTS}
    row["recompute"] = modes[int(cols["recompute_index"][0])]
    row.update({k: float(picked[k][0]) for k in BYTES[:-1]})
    hardware = {}
    for d in table:
        if d.memory_gib and d.hardware:
            cap = d.memory_gib * GIB
            hardware[d.hardware] = cap - float(reserve_bytes(cap, reserve_gib))  # usable on that hardware
    return row, tuple(sorted((h for h, b in hardware.items() if b >= row["total"]), key=hardware.get))
