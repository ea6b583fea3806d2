"""Which (tensor, pipeline, expert, data, ZeRO) layouts of a job fit a device's memory.

Every layout is evaluated at once as numpy arrays: candidates are the divisors of the device
count that the model's shape allows (Megatron-LM's constraints: tensor parallel divides the
attention heads and the key/value heads, Shoeybi et al. 2019, arXiv:1909.08053, §3;
pipeline parallel divides the layers, Narayanan et al. 2021, arXiv:2104.04473, §2.2;
expert parallel divides the experts and the data-parallel size, DeepSpeed-MoE,
arXiv:2201.05596, §5), and per-device bytes come from `train_memory` and `activation_bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .checks import TrainingBudgetError, choice, positive, show, whole
from .config import load_config
from .devices import DeviceTable, catalog
from .memory import OPTIMIZERS, ZERO_STAGES, activation_bytes, train_memory
from .models import ModelPreset, model_params, model_preset

GIB = 2.0 ** 30  # the catalog's "80GB" of HBM is 80 GiB (see calc.devices)


@dataclass(frozen=True)
class Layouts:
    """Layouts that fit, one array element each, sorted by total bytes per device.

    Counts: tensor, pipeline, expert, data (parallel sizes), zero (stage; with one data-parallel
    rank only the lowest stage asked for is listed, as ZeRO has nothing to shard). Bytes per device
    (busiest device: the first pipeline stage): weights, gradients, optimizer, master,
    activations, total; headroom = device memory - total (bytes, >= 0 for a fit).
    """

    tensor: np.ndarray
    pipeline: np.ndarray
    expert: np.ndarray
    data: np.ndarray
    zero: np.ndarray
    weights: np.ndarray
    gradients: np.ndarray
    optimizer: np.ndarray
    master: np.ndarray
    activations: np.ndarray
    total: np.ndarray
    headroom: np.ndarray
    memory_bytes: float

    def __len__(self) -> int:
        return int(self.total.shape[0])

    def rows(self) -> list[dict[str, float]]:
        """One dict per layout (counts as ints, bytes as floats)."""
        names = [f.name for f in fields(self) if f.name != "memory_bytes"]
        counts = {"tensor", "pipeline", "expert", "data", "zero"}
        return [{n: (int(getattr(self, n)[i]) if n in counts else float(getattr(self, n)[i]))
                 for n in names} for i in range(len(self))]


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


def _candidates(shape: dict[str, Any], devices: int, context: int) -> tuple[np.ndarray, ...]:
    """Every (tensor, pipeline, expert) allowed by the shape, as flat arrays."""
    heads, kv = shape["n_heads"], shape.get("n_kv_heads") or shape["n_heads"]
    experts = shape.get("n_experts", 1)
    divs = _divisors(devices // context)
    t = divs[(heads % divs == 0) & (kv % divs == 0)]
    p = divs[shape["n_layers"] % divs == 0]
    e = divs[experts % divs == 0]
    T, P, E = (a.reshape(-1) for a in np.meshgrid(t, p, e, indexing="ij"))
    replica = T * P * context
    ok = devices % replica == 0
    T, P, E, replica = T[ok], P[ok], E[ok], replica[ok]
    dp = devices // replica
    ok = dp % E == 0
    return T[ok], P[ok], E[ok], dp[ok]


def fit_layouts(model: Any, device: Any, devices: Any, *, seq_len: Any = 4096,
                micro_batch: Any = 1, recompute: str = "selective", sequence_parallel: bool = True,
                flash_attention: bool = True, optimizer: str = "adamw", grad_bytes: Any = 2.0,
                zero_stages: tuple[int, ...] = ZERO_STAGES, context_parallel: Any = 1,
                zero3_buffers: bool = True, memory_gib: Any = None,
                table: DeviceTable | None = None) -> Layouts:
    """The layouts of `devices` devices on which `model` trains within `device`'s memory.

    `model`: a preset name (calc/data/models.csv), a config.json path or a ModelPreset.
    Memory: the device row's memory_gib, or `memory_gib` given, a capacity in GiB (2^30 bytes).
    Activations: Korthikanti et al. 2022 with `recompute`, `sequence_parallel` and 1F1B
    in-flight micro-batches, plus embedding and logits (`activation_bytes`). Table 2's per-layer
    terms assume a plain 4·d_model MLP; for gated or mixture-of-experts MLPs they are the
    paper's figure, not a re-derivation. Pipeline stages must split the layers evenly.
    """
    preset = resolve_model(model)
    shape = preset.shape
    n = int(whole("devices", devices))
    cp = int(whole("context_parallel", context_parallel))
    opt = choice("optimizer", optimizer, OPTIMIZERS)
    cap = (GIB * float((table or catalog()).value(device, "memory_gib")) if memory_gib is None
           else GIB * float(positive("memory_gib", memory_gib)))
    stages = np.asarray([int(z) for z in zero_stages])
    if stages.size == 0 or not np.isin(stages, ZERO_STAGES).all():
        raise TrainingBudgetError(f"zero_stages must be among 0, 1, 2, 3 (got {show(zero_stages)})")
    if n % cp:
        raise TrainingBudgetError(
            f"context_parallel must divide devices (got {show(context_parallel)}, {show(devices)})")
    T, P, E, D = _candidates(shape, n, cp)
    Z = np.tile(stages, T.size)
    T, P, E, D = (np.repeat(a, stages.size) for a in (T, P, E, D))
    real = (D > 1) | (stages.min() == Z)  # one data-parallel rank: ZeRO shards nothing
    T, P, E, D, Z = T[real], P[real], E[real], D[real], Z[real]
    b = model_params(**shape)
    experts = b.experts if shape.get("n_experts", 1) > 1 else 0.0
    act = activation_bytes(shape["n_layers"], shape["d_model"], shape["n_heads"], seq_len,
                           micro_batch, recompute=recompute, tensor_parallel=T,
                           sequence_parallel=sequence_parallel, flash_attention=flash_attention,
                           pipeline_parallel=P, context_parallel=cp, vocab=shape["vocab"])
    m = train_memory(b.total, optimizer=opt, grad_bytes=grad_bytes, zero_stage=Z, devices=n,
                     tensor_parallel=T, pipeline_parallel=P, expert_parallel=E,
                     context_parallel=cp, expert_params=experts,
                     stage_params=shape["vocab"] * shape["d_model"], zero3_buffers=zero3_buffers,
                     activations=act)
    total = np.atleast_1d(m.total)
    fit = total <= cap
    order = np.argsort(total[fit], kind="stable")

    def pick(a: Any) -> np.ndarray:
        return np.broadcast_to(np.atleast_1d(a), total.shape)[fit][order]

    return Layouts(tensor=pick(T), pipeline=pick(P), expert=pick(E), data=pick(D), zero=pick(Z),
                   weights=pick(m.weights), gradients=pick(m.gradients),
                   optimizer=pick(m.optimizer), master=pick(m.master),
                   activations=pick(m.activations), total=pick(total),
                   headroom=cap - pick(total), memory_bytes=cap)
