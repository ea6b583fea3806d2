"""Which layouts of a job fit a device's memory: tensor, pipeline (uneven stages allowed),
virtual pipeline, context, expert and data parallelism, ZeRO stage, recompute and micro-batch.

Every layout is evaluated at once as numpy arrays. Constraints (Megatron-LM): tensor parallel
divides the attention heads and the key/value heads (Shoeybi et al. 2019, arXiv:1909.08053,
§3); pipeline depth is any divisor of the devices up to the layer count, the busiest stage's
weights those of ceil(L/p) layers and its activations those of calc.physics.stages' split (the
first and last stages one layer fewer; Megatron-Core's uneven first/last stages,
--decoder-first-pipeline-num-layers; Llama 3 405B trained with 16 stages over 126 layers,
arXiv:2407.21783, §3.3.2) plus the input embedding on the first stage and the output layer
and loss on the last; virtual stages v > 1 divide ceil(L/p) (Narayanan et al. 2021,
arXiv:2104.04473, §2.2.2); context parallel c divides the devices and seq_len / (2·c) is
whole (Megatron-Core's load-balanced context parallelism splits the sequence into 2·c chunks);
expert parallel divides the experts and data · context parallel (calc.physics.parallel:
Megatron-Core's MoE Parallel Folding, arXiv:2504.14960). ZeRO / the distributed optimizer shards states over
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
context: less model-parallel communication), then least recompute (none, selective, op, full,
offload: fewer FLOPs, then no host copies), then the largest micro-batch, then the lowest ZeRO
stage, then the fewest virtual stages, then the fewest bytes per device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ..base.checks import positive
from ..base.errors import TrainingBudgetError, show
from ..hardware.capacity import GIB, reserve_bytes
from ..hardware.catalog import DeviceTable, catalog
from ..model.hf_config import load_config
from ..model.shapes import ModelPreset, model_params, model_preset
from .activations import activation_bytes
from .fit_search import (
    DEFAULT_GLOBAL_BATCH as DEFAULT_GLOBAL_BATCH,
    DEFAULT_SEQ_LEN as DEFAULT_SEQ_LEN,
    MAX_FIT_DEVICES as MAX_FIT_DEVICES,
    MIN_CONTEXT_CHUNK,
    Search,
    count,
)
from .memory import check_trainable, train_memory
from .parallel import expert_fits
from .recompute import RECOMPUTE_ORDER
from .stages import activation_layers, busiest_scale

# Megatron's names, as estimate and plan print them; bytes per device named with their unit
COUNTS = ("tp", "pp", "vpp", "cp", "ep", "dp", "zero_stage", "micro_batch")
MEMORY = ("weights", "gradients", "optimizer", "master", "activations", "total")
BYTES = (*(f"{k}_bytes" for k in MEMORY), "headroom_bytes")


@dataclass(frozen=True)
class Layouts:
    """Layouts that fit, one array element each, in the ranking order (module doc).

    Counts: tp, pp, vpp (stages per device), cp, ep, dp (tensor, pipeline, context, expert and data
    parallel sizes), zero_stage, micro_batch; recompute (text). Bytes per device (busiest device):
    weights_bytes, gradients_bytes, optimizer_bytes, master_bytes, activations_bytes, total_bytes;
    headroom_bytes = usable - total.
    `memory_bytes` the usable memory (`capacity_bytes` - `reserve_bytes`). When nothing fits,
    `nearest` is the layout with the fewest bytes, `would_fit` the catalog hardware whose
    usable memory holds it, and `devices_to_fit` the fewest devices (`devices` doubled, up to
    MAX_FIT_DEVICES) on which some layout fits this device (None if none does).
    """

    tp: np.ndarray
    pp: np.ndarray
    vpp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    dp: np.ndarray
    zero_stage: np.ndarray
    micro_batch: np.ndarray
    recompute: np.ndarray
    weights_bytes: np.ndarray
    gradients_bytes: np.ndarray
    optimizer_bytes: np.ndarray
    master_bytes: np.ndarray
    activations_bytes: np.ndarray
    total_bytes: np.ndarray
    headroom_bytes: np.ndarray
    memory_bytes: float
    capacity_bytes: float = 0.0
    reserve_bytes: float = 0.0
    nearest: dict[str, Any] | None = None
    would_fit: tuple[str, ...] = field(default=())
    devices_to_fit: int | None = None
    accumulation: np.ndarray | None = None  # gradient-accumulation steps per layout (with a global batch)
    global_batch: int | None = None         # sequences per optimizer step (None: not constrained)

    def __len__(self) -> int:
        return int(self.total_bytes.shape[0])

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
    ok = expert_fits(D, C, E)
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


def stage_activations(shape: dict[str, Any], sizes: tuple[Any, Any, Any, Any], micro_batch: Any, recompute: str,
                      o: dict[str, Any]) -> Any:
    """Activation bytes on the busiest device of a preset's `shape` at `sizes` (tp, pp, cp, vpp),
    `micro_batch` sequences and `recompute`, with the pipeline's first stage holding its in-flight
    micro-batches (calc.physics.activations), `o` the search's seq_len, sequence_parallel,
    flash_attention and loss: the bytes fit counts for a layout and calc.budget counts for the step."""
    T, P, C, V = sizes
    L = shape["n_layers"]
    opts = _activation_shape(shape)

    def at(layers: Any) -> Any:  # activation_bytes as if every stage held layers / P (P divides them)
        if shape.get("n_experts", 1) > 1:
            n_moe = np.floor((L - shape.get("dense_layers", 0)) / shape.get("moe_every", 1))
            opts["moe_layers"] = np.minimum(np.ceil(n_moe * busiest_scale(L, P)), layers)
        return activation_bytes(layers, shape["d_model"], shape["n_heads"], o["seq_len"], micro_batch,
                                recompute=recompute, tensor_parallel=T,
                                sequence_parallel=o["sequence_parallel"], flash_attention=o["flash_attention"],
                                pipeline_parallel=P, context_parallel=C, vocab=shape["vocab"], virtual_stages=V,
                                loss=o["loss"], **opts)

    # "offload" counts one layer a stage whatever the layers (calc.physics.activations): at(high) = at(low)
    high = -(-L // P) * P                              # ceil(L/p) layers on every stage
    whole_split = np.mod(L, P) == 0
    if np.all(whole_split):
        return at(high)
    # uneven: the busiest device holds activation_layers' worth (stages.py), between floor and ceil
    # x p, where the bytes are linear in the layers: the two ends, interpolated
    low = np.maximum(np.floor(L / P), 1.0) * P
    busiest = activation_layers(L, P)
    top, bottom = at(high), at(low)
    share = (busiest - low) / np.where(high > low, high - low, 1.0)  # an even split: high = low, top = bottom
    return bottom + (top - bottom) * share


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
    b = model_params(**shape)
    moe = shape.get("n_experts", 1) > 1
    stage_p = float(shape["vocab"] * shape["d_model"])
    scale = busiest_scale(L, P)                        # calc.physics.stages: as calc.budget counts the busiest stage
    mb = np.asarray(batches, dtype=np.float64)[:, None]
    act = np.stack([np.broadcast_to(stage_activations(shape, (T, P, C, V), mb, mode, o), (len(batches), T.size))
                    for mode in modes])                                         # (modes, batches, K)
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


def fit_layouts(model: Any, device: Any, devices: Any, search: Search | None = None, *,
                table: DeviceTable | None = None, **options: Any) -> Layouts:
    """The layouts of `devices` devices on which `model` trains within `device`'s usable memory.

    `model`: a preset name (calc/data/models.csv), a config.json path or a ModelPreset. `search`: the
    search's options (calc.physics.fit_search.Search: sequence length, global batch, the sizes searched
    or fixed, method, memory), or its fields as keywords (`options`), not both. Tensor, pipeline (any
    depth up to the layer count), virtual stages (1-8) and expert parallel are always searched. With a
    global batch, only layouts whose data · micro-batch divides it are listed, each with its whole
    `accumulation`. Constraints and ranking: module doc.
    """
    preset = resolve_model(model)
    n = count("devices", devices)
    if search is not None and options:
        raise TrainingBudgetError(f"give fit_layouts a Search or its options, not both (got {', '.join(options)})")
    if options.get("trainable") is not None:  # checked against the model's parameters, whatever the method
        check_trainable(options["trainable"], float(preset.params().total))
    s = Search(**options) if search is None else search
    if search is not None and s.trainable is not None:
        check_trainable(s.trainable, float(preset.params().total))
    contexts = s.checked["contexts"]
    if contexts is not None and any(n % c for c in contexts):
        raise TrainingBudgetError(
            f"context_parallel must divide devices (got {show(s.context_parallel)}, {show(devices)})")
    table = table or catalog()
    capacity, reserve = _capacity(device, table, s.memory_gib, s.reserve_gib)
    cap = capacity - reserve
    cands, parts, real, fit = _search(preset, n, s, cap)
    more = _devices_to_fit(preset, n, s, cap) if s.explain and not fit.any() else None
    stages, modes, batches = (s.checked[k] for k in ("stages", "modes", "batches"))
    cols, picked = _columns(cands, parts, np.flatnonzero(fit.reshape(-1)), stages, modes, batches)
    order = _ranked(cols, picked, modes, batches)
    nearest, would = _nearest(cands, parts, real, fit, s, table) if s.explain else (None, ())
    counts = {k: cols[k][order] for k in COUNTS}
    acc = None if s.batch is None else s.batch // (counts["dp"] * counts["micro_batch"])
    return Layouts(**counts, recompute=np.asarray(modes)[cols["recompute_index"][order]],
                   **{f"{k}_bytes": picked[k][order] for k in MEMORY}, headroom_bytes=cap - picked["total"][order],
                   memory_bytes=cap, capacity_bytes=capacity, reserve_bytes=reserve,
                   nearest=nearest, would_fit=would, devices_to_fit=more, accumulation=acc, global_batch=s.batch)


def _search(preset: ModelPreset, n: int, s: Search,
            cap: float) -> tuple[tuple[np.ndarray, ...], dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """(candidates, bytes, the real ones, those that fit `cap` bytes) of `n` devices; searched context
    sizes keep chunks of >= MIN_CONTEXT_CHUNK tokens (up to 64 ranks)."""
    stages, modes, batches, seq = (s.checked[k] for k in ("stages", "modes", "batches", "seq"))
    contexts = s.checked["contexts"] or tuple(
        int(x) for x in _divisors(n) if x <= 64 and seq >= MIN_CONTEXT_CHUNK * x) or (1,)
    cands = _grid(preset.shape, n, contexts, seq, s.batch)
    if not cands[0].size:
        none = np.zeros((len(stages), len(modes), len(batches), 0))
        parts = {k: np.zeros((len(stages), 0)) for k in ("weights", "gradients", "optimizer", "master", "total")}
        parts.update(activations=np.zeros((len(modes), len(batches), 0)), sum=none)
        return cands, parts, none.astype(bool), none.astype(bool)
    o = {"seq_len": seq, "sequence_parallel": s.sequence_parallel, "flash_attention": s.flash_attention,
         "optimizer": s.optimizer, "grad_bytes": s.grad_bytes, "zero3_buffers": s.zero3_buffers,
         "method": s.method, "loss": s.loss, "trainable": s.trainable}
    parts, real = _evaluate(preset, cands, stages, modes, batches, o)
    if s.batch is not None:  # data · micro-batch divides the global batch: whole accumulation >= 1
        allowed = s.batch % (cands[5][None, :] * np.asarray(batches)[:, None]) == 0   # (batches, K)
        real = real & allowed[None, None]
    fit = real & (parts["sum"] <= cap)
    if "offload" in modes and "full" in modes:  # offload only where full recompute does not fit
        fit[:, modes.index("offload")] &= ~fit[:, modes.index("full")]
    return cands, parts, real, fit


def _devices_to_fit(preset: ModelPreset, n: int, s: Search, cap: float) -> int | None:
    """When nothing fits `n` devices: the fewest devices, n doubled up to MAX_FIT_DEVICES, on which
    something does (None if none)."""
    at = 2 * n
    while at <= MAX_FIT_DEVICES:
        if _search(preset, at, s, cap)[3].any():
            return at
        at *= 2
    return None


def _ranked(cols: dict[str, np.ndarray], picked: dict[str, np.ndarray], modes: tuple,
            batches: tuple) -> np.ndarray:
    """The order of the layouts by the ranking rule (module doc): one integer key, then bytes, stably."""
    cost = np.asarray([RECOMPUTE_ORDER.index(r) for r in modes])[cols["recompute_index"]]
    batch_rank = np.asarray(sorted(range(len(batches)), key=lambda i: -batches[i])).argsort()[cols["mb_index"]]
    rank = cols["tp"] * cols["pp"] * cols["cp"]
    keys = ((cost, len(RECOMPUTE_ORDER)), (batch_rank, len(batches)), (cols["zero_stage"], 4), (cols["vpp"], 9))
    for key, size in keys:
        rank = rank * size + key
    order = np.argsort(picked["total"], kind="stable")
    return order[np.argsort(rank[order], kind="stable")]


def _columns(cands: tuple[np.ndarray, ...], parts: dict[str, np.ndarray], flat: np.ndarray, stages: tuple,
             modes: tuple, batches: tuple) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The counts and bytes of the candidates at `flat` (indices into the (stages, modes,
    batches, K) arrays)."""
    shape = (len(stages), len(modes), len(batches), cands[0].size)
    zi, ri, mi, ki = np.unravel_index(flat, shape)
    T, P, V, C, E, D = (a[ki] for a in cands)
    cols = {"tp": T, "pp": P, "vpp": V, "cp": C, "ep": E, "dp": D,
            "zero_stage": np.asarray(stages)[zi], "micro_batch": np.asarray(batches)[mi], "recompute_index": ri,
            "mb_index": mi}
    picked = {k: parts[k][zi, ki] for k in ("weights", "gradients", "optimizer", "master")}
    picked["activations"] = parts["activations"][ri, mi, ki]
    picked["total"] = parts["total"][zi, ki] + picked["activations"]
    return cols, picked


def _nearest(cands: tuple[np.ndarray, ...], parts: dict[str, np.ndarray], real: np.ndarray, fit: np.ndarray,
             s: Search, table: DeviceTable) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """When nothing fits: the layout with the fewest bytes and the hardware that would hold it (each
    hardware's usable memory less the search's reserve)."""
    if fit.any() or not real.any():
        return None, ()
    stages, modes, batches = (s.checked[k] for k in ("stages", "modes", "batches"))
    totals = np.where(real, parts["sum"], np.inf).reshape(-1)
    cols, picked = _columns(cands, parts, np.asarray([int(np.argmin(totals))]), stages, modes, batches)
    row: dict[str, Any] = {k: int(cols[k][0]) for k in COUNTS}
    row["recompute"] = modes[int(cols["recompute_index"][0])]
    row.update({f"{k}_bytes": float(picked[k][0]) for k in MEMORY})
    hardware = {}
    for d in table:
        if d.memory_gib and d.hardware:
            cap = d.memory_gib * GIB
            hardware[d.hardware] = cap - float(reserve_bytes(cap, s.reserve_gib))  # usable on that hardware
    return row, tuple(sorted((h for h, b in hardware.items() if b >= row["total_bytes"]), key=hardware.get))
