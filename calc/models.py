"""Parameter counts from a decoder-only transformer's shape, and the packaged model presets.

Every term, per layer unless said otherwise (d = d_model, n_h = n_heads, n_kv = n_kv_heads,
h_d = head_dim, f = ffn_dim, V = vocab):
- Attention projections: Q d·n_h·h_d, K and V d·n_kv·h_d each, output n_h·h_d·d
  (Vaswani et al. 2017, arXiv:1706.03762, §3.2.2, "Multi-head attention"); grouped-query
  attention shares each K/V head among n_h/n_kv query heads (Ainslie et al. 2023,
  arXiv:2305.13245, §2.2). `qkv_bias` adds (n_h + 2·n_kv)·h_d biases (Qwen2,
  Yang et al. 2024, arXiv:2407.10671, §2.1); `qk_norm` adds 2·h_d RMSNorm gains (Qwen3,
  Yang et al. 2025, arXiv:2505.09388, §2).
- MLP: gated (SwiGLU) 3·d·f (gate, up, down; Shazeer 2020, arXiv:2002.05202, §2, eq. 5-6),
  plain 2·d·f (Vaswani et al. 2017, §3.3). No biases (Llama, Touvron et al. 2023,
  arXiv:2302.13971, §2.2).
- Mixture of experts: each MoE layer has n_experts routed MLPs of width moe_ffn_dim, a router
  d·n_experts, and top_k routed experts run per token (Shazeer et al. 2017, arXiv:1701.06538,
  §2; Mixtral, Jiang et al. 2024, arXiv:2401.04088, §2.1: 47B total, 13B active);
  n_shared_experts always-on experts of the same width (DeepSeekMoE, Dai et al. 2024,
  arXiv:2401.06066, §3.2); the first `dense_layers` layers keep a dense MLP of width ffn_dim
  (DeepSeek-V3, arXiv:2412.19437, §4.2, "first three layers").
- Norms: RMSNorm, d gains, two per layer plus one final (Zhang & Sennrich 2019,
  arXiv:1910.07467; Llama §2.2 pre-normalization).
- Embeddings: V·d input table, plus a V·d output projection unless tied (Press & Wolf 2017,
  arXiv:1608.05859).
"""

from __future__ import annotations

import csv
import functools
import inspect
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

import numpy as np

from .checks import TrainingBudgetError, flag, out, show, whole

DEFAULT_VOCAB = 32000  # Llama 1/2 and Mistral tokenizers (Touvron et al. 2023, §2.1)


@dataclass(frozen=True)
class ParamBreakdown:
    """Parameter counts (floats, or arrays when inputs were arrays).

    `total` every parameter; `active` those one token runs through (routed experts: top_k of
    n_experts); `embedding` input table plus untied output projection; `attention`, `mlp`
    (dense MLPs, shared experts and routed experts), `router`, `norms` summed over layers;
    `experts` the routed-expert part of `mlp` (what expert parallelism shards).
    """

    total: Any
    active: Any
    embedding: Any
    attention: Any
    mlp: Any
    router: Any
    norms: Any
    experts: Any

    def as_dict(self) -> dict[str, Any]:
        """Every part, in a stable order."""
        return asdict(self)


def model_params(n_layers: Any, d_model: Any, n_heads: Any, *, n_kv_heads: Any = None,
                 head_dim: Any = None, ffn_dim: Any = None, gated_mlp: bool = True,
                 vocab: Any = DEFAULT_VOCAB, tied_embeddings: bool = False, n_experts: Any = 1,
                 top_k: Any = 1, n_shared_experts: Any = 0, moe_ffn_dim: Any = None,
                 dense_layers: Any = 0, qkv_bias: bool = False, qk_norm: bool = False
                 ) -> ParamBreakdown:
    """Parameters of a decoder-only transformer from its shape (terms and sources: module doc).

    `n_kv_heads` defaults to `n_heads` (multi-head attention); `head_dim` to d_model/n_heads;
    `ffn_dim` to 4·d_model (Vaswani et al. 2017, §3.3); `moe_ffn_dim` to `ffn_dim`.
    `n_experts` 1 is a dense model. Llama 3.1 8B (32, 4096, 32, n_kv_heads=8, ffn_dim=14336,
    vocab=128256) -> 8,030,261,248.
    """
    L = whole("n_layers", n_layers)
    d = whole("d_model", d_model)
    nh = whole("n_heads", n_heads)
    nkv = nh if n_kv_heads is None else whole("n_kv_heads", n_kv_heads)
    if np.any((nh % nkv) != 0):
        raise TrainingBudgetError(
            f"n_kv_heads must divide n_heads (got n_kv_heads={show(n_kv_heads)}, n_heads={show(n_heads)})")
    hd = d / nh if head_dim is None else whole("head_dim", head_dim)
    f = 4.0 * d if ffn_dim is None else whole("ffn_dim", ffn_dim)
    V = whole("vocab", vocab)
    E = whole("n_experts", n_experts)
    k = whole("top_k", top_k)
    if np.any(k > E):
        raise TrainingBudgetError(f"top_k must be <= n_experts (got top_k={show(top_k)}, n_experts={show(n_experts)})")
    shared = whole("n_shared_experts", n_shared_experts, minimum=0)
    fm = f if moe_ffn_dim is None else whole("moe_ffn_dim", moe_ffn_dim)
    dense = whole("dense_layers", dense_layers, minimum=0)
    if np.any(dense > L):
        raise TrainingBudgetError(f"dense_layers must be <= n_layers (got {show(dense_layers)})")
    mats = 3.0 if flag("gated_mlp", gated_mlp) else 2.0
    tied = flag("tied_embeddings", tied_embeddings)

    attn = 2.0 * d * nh * hd + 2.0 * d * nkv * hd                         # Q, O; K, V
    attn = attn + (nh + 2.0 * nkv) * hd * flag("qkv_bias", qkv_bias)
    norms_layer = 2.0 * d + 2.0 * hd * flag("qk_norm", qk_norm)
    moe = E > 1
    n_moe = np.where(moe, L - dense, 0.0)                                  # MoE layers
    n_dense = L - n_moe
    expert = mats * d * fm                                                 # one expert MLP
    routed = n_moe * E * expert
    shared_all = n_moe * shared * expert
    router = n_moe * d * E
    mlp = n_dense * mats * d * f + shared_all + routed
    embedding = V * d * (1.0 if tied else 2.0)
    attention = L * attn
    norms = L * norms_layer + d
    total = embedding + attention + mlp + router + norms
    active = total - routed + n_moe * k * expert
    return ParamBreakdown(total=out(total), active=out(active), embedding=out(embedding),
                          attention=out(attention), mlp=out(mlp), router=out(router),
                          norms=out(norms), experts=out(routed))


def params_total(n_layers: Any, d_model: Any, n_heads: Any, **shape: Any) -> np.ndarray | float:
    """Total parameters from the shape (`model_params(...).total`; arguments as there)."""
    return model_params(n_layers, d_model, n_heads, **shape).total


def params_active(n_layers: Any, d_model: Any, n_heads: Any, **shape: Any) -> np.ndarray | float:
    """Parameters one token runs through (`model_params(...).active`; arguments as there)."""
    return model_params(n_layers, d_model, n_heads, **shape).active


# Both take exactly model_params's arguments: say so to inspect (and to the Excel registry).
for _f in (params_total, params_active):
    _f.__signature__ = inspect.signature(model_params).replace(  # type: ignore[attr-defined]
        return_annotation="np.ndarray | float")


# --- presets -------------------------------------------------------------------------------

SHAPE_FIELDS = ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "ffn_dim", "vocab",
                "n_experts", "top_k", "n_shared_experts", "moe_ffn_dim", "dense_layers")
FLAGS = ("gated_mlp", "tied_embeddings", "qkv_bias", "qk_norm")


@dataclass(frozen=True)
class ModelPreset:
    """One row of data/models.csv: a shape (None where the shape is not standard) and the
    published totals (`published_total_params`, `published_active_params`), with source."""

    name: str
    shape: dict[str, Any]
    published_total_params: float
    published_active_params: float
    source: str
    as_of: str
    note: str

    @property
    def has_shape(self) -> bool:
        return bool(self.shape)

    def params(self) -> ParamBreakdown:
        """Counted from the shape; the published totals when the shape is not standard."""
        if self.has_shape:
            return model_params(**self.shape)
        t, a = self.published_total_params, self.published_active_params
        return ParamBreakdown(total=t, active=a, embedding=np.nan, attention=np.nan, mlp=np.nan,
                              router=np.nan, norms=np.nan, experts=np.nan)


def _preset(row: dict[str, str]) -> ModelPreset:
    shape: dict[str, Any] = {}
    if row["n_layers"].strip():
        for key in SHAPE_FIELDS:
            if row[key].strip():
                shape[key] = int(row[key])
        for key in FLAGS:
            shape[key] = row[key].strip().lower() == "true"
    return ModelPreset(name=row["name"], shape=shape,
                       published_total_params=float(row["published_total_params"]),
                       published_active_params=float(row["published_active_params"]),
                       source=row["source"], as_of=row["as_of"], note=row.get("note", ""))


@functools.lru_cache(maxsize=1)
def model_presets() -> dict[str, ModelPreset]:
    """The packaged presets (data/models.csv), by lower-cased name."""
    text = resources.files(__package__).joinpath("data/models.csv").read_text("utf-8")
    rows = [_preset(r) for r in csv.DictReader(text.splitlines())]
    return {r.name.lower(): r for r in rows}


def model_preset(name: str) -> ModelPreset:
    """The preset called `name` (case-insensitive), or an error listing the known names."""
    found = model_presets().get(str(name).strip().lower())
    if found is None:
        known = ", ".join(p.name for p in model_presets().values())
        raise TrainingBudgetError(f"model must be one of {known} (got {name!r})")
    return found

