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
  arXiv:1910.07467; Llama §2.2 pre-normalization); `norms_per_layer` 4 for Gemma 2/3's pre-
  and post-norms (Gemma 2, arXiv:2408.00118, §2). `qk_norm` "full" normalises the whole Q and
  K projections, n_h·h_d + n_kv·h_d gains (OLMo 2, arXiv:2501.00656, §3.1).
- Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434, §2.1.2-2.1.3, eq. 9-14; the
  DeepseekV2/V3 `modeling` code): Q through a rank q_lora_rank (W_DQ d·r_q, its norm r_q,
  W_UQ r_q·n_h·(nope + rope)) or directly (d·n_h·(nope + rope)) when q_lora_rank is 0; K/V
  through W_DKV d·(r_kv + rope) (the decoupled RoPE key included), its norm r_kv,
  W_UKV r_kv·n_h·(nope + v_head_dim); output n_h·v_head_dim·d.
- Biases (gpt-oss, model card arXiv:2508.10925, §2.1, and its `transformers` code):
  `attention_bias` adds Q, K, V and output-projection biases and `attention_sinks` one
  learned sink per head; `expert_bias` adds each expert's 2f (gate, up) + d (down) biases;
  `router_bias` n_experts per MoE layer (gpt-oss's router bias; DeepSeek-V3's
  e_score_correction_bias, arXiv:2412.19437, §2.1.2, is the same size).
- Interleaved MoE: with `moe_every` k, layers k, 2k, ... (after `dense_layers`) are MoE and the
  rest dense (Llama 4 `interleave_moe_layer_step`; Maverick uses 2).
- Active parameters: `active` is what a token runs through without the untied input table,
  whose lookup does no matmul: DeepSeek's "activated" (DeepSeek-V3, arXiv:2412.19437, abstract:
  37B of 671B; DeepSeek-V2-Lite 2.4B) and OpenAI's "active" (gpt-oss model card,
  arXiv:2508.10925, Table 1: 3.61B and 5.13B) count it so, as MFU counts FLOPs (torchtitan,
  nanoGPT; calc.physics.flops). `active_with_embedding` keeps the input table in: Mistral's 12.9B for
  Mixtral (mistral.ai/news/mixtral-of-experts), Qwen's 3.3B for Qwen3-30B-A3B and Meta's 17B
  for Llama 4 count it that way, and it is the N of the 6·N·D FLOPs the budget uses by default
  (Kaplan et al. 2020, calc.physics.flops; `input_embedding` there selects the other convention).
- Embeddings: V·d input table, plus a V·d output projection unless tied (Press & Wolf 2017,
  arXiv:1608.05859).
"""

from __future__ import annotations

import csv
import functools
import inspect
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ..base.errors import TrainingBudgetError, broadcasts
from ..base.memo import identity_memo
from .arch import DEFAULT_VOCAB, Arch, ParamBreakdown, params_of


# flat: one numpy-broadcasting argument per MODEL_PARAMS argument (Excel's flat call); params_of takes them as one Arch
@broadcasts
def model_params(n_layers: Any, d_model: Any, n_heads: Any, *, n_kv_heads: Any = None,
                 head_dim: Any = None, ffn_dim: Any = None, gated_mlp: bool = True,
                 vocab: Any = DEFAULT_VOCAB, tied_embeddings: bool = False, n_experts: Any = 1,
                 top_k: Any = 1, n_shared_experts: Any = 0, moe_ffn_dim: Any = None,
                 dense_layers: Any = 0, qkv_bias: bool = False, qk_norm: Any = False,
                 norms_per_layer: Any = 2, moe_every: Any = 1, attention_bias: bool = False,
                 attention_sinks: bool = False, expert_bias: bool = False,
                 router_bias: bool = False, q_lora_rank: Any = None, kv_lora_rank: Any = None,
                 qk_nope_head_dim: Any = None, qk_rope_head_dim: Any = None,
                 v_head_dim: Any = None) -> ParamBreakdown:
    """Parameters of a decoder-only transformer from its shape (terms and sources: module doc).

    `n_kv_heads` defaults to `n_heads` (multi-head attention); `head_dim` to d_model/n_heads;
    `ffn_dim` to 4·d_model (Vaswani et al. 2017, §3.3); `moe_ffn_dim` to `ffn_dim`.
    `n_experts` 1 is a dense model. `kv_lora_rank` with `qk_nope_head_dim`, `qk_rope_head_dim`
    and `v_head_dim` (and `q_lora_rank`, 0 or None for a direct Q projection) is multi-head
    latent attention; `n_kv_heads` and `head_dim` do not apply to it. Llama 3.1 8B
    (32, 4096, 32, n_kv_heads=8, ffn_dim=14336, vocab=128256) -> 8,030,261,248.
    """
    return params_of(Arch(**locals()))


def params_total(n_layers: Any, d_model: Any, n_heads: Any, **shape: Any) -> np.ndarray | float:
    """Total parameters from the shape (`model_params(...).total`; arguments as there)."""
    return model_params(n_layers, d_model, n_heads, **shape).total


def params_active(n_layers: Any, d_model: Any, n_heads: Any, **shape: Any) -> np.ndarray | float:
    """Parameters one token runs through, without the untied input table (`model_params(...).active`,
    the count DeepSeek and OpenAI publish; arguments as there)."""
    return model_params(n_layers, d_model, n_heads, **shape).active


# Both take exactly model_params's arguments: say so to inspect (and to the Excel registry).
for _f in (params_total, params_active):
    _f.__signature__ = inspect.signature(model_params).replace(  # type: ignore[attr-defined]
        return_annotation="np.ndarray | float")


# --- presets -------------------------------------------------------------------------------

SHAPE_FIELDS = ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "ffn_dim", "vocab",
                "n_experts", "top_k", "n_shared_experts", "moe_ffn_dim", "dense_layers",
                "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                "norms_per_layer", "moe_every")
FLAGS = ("gated_mlp", "tied_embeddings", "qkv_bias", "qk_norm")
EXTRA_FLAGS = ("attention_bias", "attention_sinks", "expert_bias", "router_bias")  # set only when true


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
                              router=np.nan, norms=np.nan, experts=np.nan,
                              active_with_embedding=a)


# `fn(preset, *rest)` worked out once per preset object and `rest` (calc/base/memo.py)
preset_memo = identity_memo()


@preset_memo
def preset_params(preset: ModelPreset) -> ParamBreakdown:
    """preset.params(), counted once per preset object."""
    return preset.params()


def _preset(row: dict[str, str]) -> ModelPreset:
    shape: dict[str, Any] = {}
    if row["n_layers"].strip():
        for key in SHAPE_FIELDS:
            if (row.get(key) or "").strip():
                shape[key] = int(row[key])
        for key in FLAGS:
            shape[key] = row[key].strip().lower() == "true"
        if row["qk_norm"].strip().lower() == "full":
            shape["qk_norm"] = "full"
        for key in EXTRA_FLAGS:
            if (row.get(key) or "").strip().lower() == "true":
                shape[key] = True
    return ModelPreset(name=row["name"], shape=shape,
                       published_total_params=float(row["published_total_params"]),
                       published_active_params=float(row["published_active_params"]),
                       source=row["source"], as_of=row["as_of"], note=row.get("note", ""))


@functools.lru_cache(maxsize=1)
def model_presets() -> dict[str, ModelPreset]:
    """The packaged presets (data/models.csv), by lower-cased name."""
    text = resources.files(__name__.rsplit(".", 2)[0]).joinpath("data/models.csv").read_text("utf-8")
    rows = [_preset(r) for r in csv.DictReader(text.splitlines())]
    return {r.name.lower(): r for r in rows}


def model_preset(name: str) -> ModelPreset:
    """The preset called `name` (case-insensitive), or an error listing the known names."""
    found = model_presets().get(str(name).strip().lower())
    if found is None:
        known = ", ".join(p.name for p in model_presets().values())
        raise TrainingBudgetError(f"model must be one of {known} (got {name!r})")
    return found

