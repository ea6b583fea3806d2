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
`activation_bytes` with the model's own shape (calc.activations).

Capacity: the memory the device reports (data/device_memory_reported.csv, e.g. nvidia-smi's
81,559 MiB = 79.65 GiB on an H100 80GB; the catalog's memory_gib where no row is known) less
`reserve_gib` (default 3 GiB: the CUDA context, NCCL's buffers and the caching allocator's
fragmentation take 1-5 GiB in practice, ../shared/reference/accuracy-2026.md defect 3).

Ranking (stated, as in the CLI): fewest devices per model replica (tensor · pipeline ·
context: less model-parallel communication), then least recompute (none, selective, full:
fewer FLOPs), then the largest micro-batch, then the lowest ZeRO stage, then the fewest
virtual stages, then the fewest bytes per device.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass, field, fields
from importlib import resources
from typing import Any

import numpy as np

from .activations import activation_bytes
from .checks import TrainingBudgetError, choice, flag, non_negative, positive, show, whole
from .config import load_config
from .devices import DeviceTable, catalog
from .memory import METHODS, OPTIMIZERS, ZERO_STAGES, train_memory
from .models import ModelPreset, model_params, model_preset

GIB = 2.0 ** 30  # device memory is a capacity in GiB (a vendor's "80GB" of HBM is 80 GiB)
RESERVE_GIB = 3.0
MAX_FIT_DEVICES = 2 ** 22   # 4.2M devices: above any job; keeps the divisor search bounded
RECOMPUTE_ORDER = ("none", "selective", "full")
MICRO_BATCHES = (1, 2, 4)
MIN_CONTEXT_CHUNK = 1024  # tokens per context-parallel rank when context_parallel is searched
COUNTS = ("tensor", "pipeline", "virtual", "context", "expert", "data", "zero", "micro_batch")
BYTES = ("weights", "gradients", "optimizer", "master", "activations", "total", "headroom")


@functools.lru_cache(maxsize=1)
def reported_memory_gib() -> dict[str, float]:
    """Memory each hardware reports to software, GiB (data/device_memory_reported.csv)."""
    text = resources.files(__package__).joinpath("data/device_memory_reported.csv").read_text("utf-8")
    return {r["hardware"]: float(r["reported_mib"]) / 1024.0 for r in csv.DictReader(text.splitlines())}


@dataclass(frozen=True)
class Layouts:
    """Layouts that fit, one array element each, in the ranking order (module doc).

    Counts: tensor, pipeline, virtual (stages per device), context, expert, data (parallel
    sizes), zero (stage), micro_batch; recompute (text). Bytes per device (busiest device):
    weights, gradients, optimizer, master, activations, total; headroom = usable - total.
    `memory_bytes` the usable capacity (`reported_bytes` - `reserve_bytes`). When nothing fits,
    `nearest` is the layout with the fewest bytes and `would_fit` the catalog hardware whose
    usable memory holds it.
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
    reported_bytes: float = 0.0
    reserve_bytes: float = 0.0
    nearest: dict[str, Any] | None = None
    would_fit: tuple[str, ...] = field(default=())

    def __len__(self) -> int:
        return int(self.total.shape[0])

    def rows(self) -> list[dict[str, Any]]:
        """One dict per layout (counts as ints, recompute as text, bytes as floats)."""
        names = [f.name for f in fields(self)][:16]
        return [_row(self, names, i) for i in range(len(self))]


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


def _grid(shape: dict[str, Any], n: int, contexts: tuple, seq: int) -> tuple[np.ndarray, ...]:
    """Every (tensor, pipeline, virtual, context, expert, data) the shape allows, flat arrays."""
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
    return T[ok], P[ok], V[ok], C[ok], E[ok], D[ok]


def _capacity(device: Any, table: DeviceTable, memory_gib: Any, reserve_gib: Any) -> tuple[float, float]:
    """(reported bytes, reserve bytes)."""
    if memory_gib is not None:
        reported = float(positive("memory_gib", memory_gib))
    else:
        row = table.get(device) if isinstance(device, str) else None
        if row is None:
            raise TrainingBudgetError(f"device must be a device name (got {show(device)})")
        reported = reported_memory_gib().get(row.hardware, float(table.value(device, "memory_gib")))
    return reported * GIB, float(non_negative("reserve_gib", reserve_gib)) * GIB


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


def _evaluate(preset: ModelPreset, grid: tuple[np.ndarray, ...], o: dict[str, Any]) -> dict[str, Any]:
    """Bytes per device for every candidate (arrays)."""
    shape = preset.shape
    T, P, V, C, E, D, Z, R, M = grid
    L = shape["n_layers"]
    stage = -(-L // P)
    L_eff = stage * P                                  # busiest stage holds ceil(L/p) layers
    b = model_params(**shape)
    moe = shape.get("n_experts", 1) > 1
    stage_p = float(shape["vocab"] * shape["d_model"])
    scale = L_eff / L
    experts = (b.experts if moe else 0.0) * scale
    act_opts = _activation_shape(shape)
    if moe:
        n_moe = np.floor((L - shape.get("dense_layers", 0)) / shape.get("moe_every", 1))
        act_opts["moe_layers"] = np.minimum(np.ceil(n_moe * scale), L_eff)
    act = np.zeros(T.shape)
    for mode in set(R.tolist()):                       # one pass per recompute mode
        on = mode == R
        pick = {k: (v[on] if isinstance(v, np.ndarray) and v.shape == T.shape else v)
                for k, v in act_opts.items()}
        act[on] = activation_bytes(
            L_eff[on], shape["d_model"], shape["n_heads"], o["seq_len"], M[on], recompute=mode,
            tensor_parallel=T[on], sequence_parallel=o["sequence_parallel"],
            flash_attention=o["flash_attention"], pipeline_parallel=P[on], context_parallel=C[on],
            vocab=shape["vocab"], virtual_stages=V[on], loss=o["loss"], **pick)
    m = train_memory(stage_p + (b.total - stage_p) * scale, method=o["method"], optimizer=o["optimizer"],
                     grad_bytes=o["grad_bytes"], zero_stage=Z, devices=T * P * C * D, tensor_parallel=T,
                     pipeline_parallel=P, expert_parallel=E, expert_params=experts, stage_params=stage_p,
                     zero3_buffers=o["zero3_buffers"], activations=act)
    return {k: np.broadcast_to(np.atleast_1d(getattr(m, k)), T.shape)
            for k in ("weights", "gradients", "optimizer", "master", "activations", "total")}


def fit_layouts(model: Any, device: Any, devices: Any, *, seq_len: Any = 4096,
                micro_batch: Any = None, recompute: Any = None, sequence_parallel: bool = True,
                flash_attention: bool = True, optimizer: str = "adamw", grad_bytes: Any = 4.0,
                zero_stages: Any = ZERO_STAGES, context_parallel: Any = None,
                zero3_buffers: bool = True, memory_gib: Any = None, reserve_gib: Any = RESERVE_GIB,
                method: str = "full", loss: str = "standard",
                table: DeviceTable | None = None) -> Layouts:
    """The layouts of `devices` devices on which `model` trains within `device`'s usable memory.

    `model`: a preset name (calc/data/models.csv), a config.json path or a ModelPreset.
    Capacity: the memory the device reports (or `memory_gib`, GiB) less `reserve_gib`.
    `grad_bytes` 4: fp32 main gradients (Megatron/NeMo `grad_reduce_in_fp32`); 2 for bf16.
    Searched unless fixed: `micro_batch` (default 1, 2, 4), `recompute` (none and full; with
    FlashAttention "selective" stores the same bytes as "none", so it is searched only without
    it or when asked), `context_parallel` (divisors of devices up to 64 that leave >= 1,024
    tokens per rank), `zero_stages`; tensor, pipeline (any depth up to the layer count), virtual
    stages (1-8) and expert parallel always. `method`: full, lora or qlora. `loss`:
    "standard" or "fused" (calc.activations). Constraints and ranking: module doc.
    """
    preset = resolve_model(model)
    shape = preset.shape
    n = _count("devices", devices)
    seq = _count("seq_len", seq_len, limit=2 ** 30)
    o = {"seq_len": seq, "sequence_parallel": sequence_parallel, "flash_attention": flash_attention,
         "optimizer": choice("optimizer", optimizer, OPTIMIZERS), "grad_bytes": positive("grad_bytes", grad_bytes),
         "zero3_buffers": zero3_buffers, "method": choice("method", method, METHODS[:3]), "loss": loss}
    stages = _options("zero_stages", zero_stages, ZERO_STAGES, ZERO_STAGES)
    # with FlashAttention "selective" stores what "none" does (no scores): search it only if asked
    searched = RECOMPUTE_ORDER[::2] if flag("flash_attention", flash_attention) else RECOMPUTE_ORDER
    modes = _options("recompute", recompute, searched, RECOMPUTE_ORDER)
    batches = _options("micro_batch", micro_batch, MICRO_BATCHES)
    # searched context sizes keep chunks of >= MIN_CONTEXT_CHUNK tokens (up to 64 ranks)
    contexts = _options("context_parallel", context_parallel,
                        tuple(int(x) for x in _divisors(n) if x <= 64 and seq >= MIN_CONTEXT_CHUNK * x) or (1,))
    if context_parallel is not None and any(n % c for c in contexts):
        raise TrainingBudgetError(
            f"context_parallel must divide devices (got {show(context_parallel)}, {show(devices)})")
    reported, reserve = _capacity(device, table or catalog(), memory_gib, reserve_gib)
    cap = reported - reserve
    T, P, V, C, E, D = _grid(shape, n, contexts, seq)
    k = T.size
    reps = len(stages) * len(modes) * len(batches)
    Z = np.tile(np.repeat(np.asarray(stages), len(modes) * len(batches)), k)
    R = np.tile(np.tile(np.repeat(np.asarray(modes), len(batches)), len(stages)), k)
    M = np.tile(np.asarray(batches * (len(stages) * len(modes))), k)
    T, P, V, C, E, D = (np.repeat(a, reps) for a in (T, P, V, C, E, D))
    real = (D * C > 1) | (min(stages) == Z)            # one replica: ZeRO has nothing to shard
    grid = tuple(a[real] for a in (T, P, V, C, E, D, Z, R, M))
    parts = _evaluate(preset, grid, o) if grid[0].size else {k: np.zeros(0) for k in BYTES[:-1]}
    total = parts["total"]
    fit = total <= cap
    T, P, V, C, E, D, Z, R, M = grid
    cost = np.zeros(R.shape)
    for rank, mode in enumerate(RECOMPUTE_ORDER):
        cost[mode == R] = rank
    order = np.lexsort((total, V, Z, -M, cost, T * P * C))   # last key sorts first
    order = order[fit[order]]
    nearest, would = _nearest(grid, parts, fit, reserve, table or catalog())
    pick = {name: a[order] for name, a in zip((*COUNTS[:-1], "micro_batch", "recompute"),
                                               (T, P, V, C, E, D, Z, M, R), strict=True)}
    return Layouts(**pick, **{k: parts[k][order] for k in BYTES[:-1]}, headroom=cap - total[order],
                   memory_bytes=cap, reported_bytes=reported, reserve_bytes=reserve,
                   nearest=nearest, would_fit=would)


def _nearest(grid: tuple[np.ndarray, ...], parts: dict[str, Any], fit: np.ndarray, reserve: float,
             table: DeviceTable) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """When nothing fits: the layout with the fewest bytes and the hardware that would hold it."""
    if fit.any() or not fit.size:
        return None, ()
    i = int(np.argmin(parts["total"]))
    names = (*COUNTS[:-1], "micro_batch", "recompute")
    row = {n: (str(a[i]) if n == "recompute" else int(a[i]))
           for n, a in zip(names, (*grid[:7], grid[8], grid[7]), strict=True)}
    row.update({k: float(parts[k][i]) for k in BYTES[:-1]})
    need = row["total"] + reserve
    reported = reported_memory_gib()
    hardware = {}
    for d in table:
        if d.memory_gib and d.hardware:
            hardware[d.hardware] = reported.get(d.hardware, d.memory_gib) * GIB
    return row, tuple(sorted((h for h, b in hardware.items() if b >= need), key=hardware.get))
