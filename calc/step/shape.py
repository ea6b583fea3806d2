"""The model shape the step needs: active and total parameters and the widths its terms move.

Attention's score and value FLOPs and the TP/CP/EP message sizes need the layer count, the
hidden width, the attention width (heads x head_dim, which differs from d_model in models whose
head_dim is set apart from d_model / heads: Gemma 2 9B, Qwen3 32B), the K/V width per token (GQA, MLA) and
the routed experts per token. `Shape.from_preset` reads them from calc.models' presets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.checks import non_negative, positive, whole
from ..base.errors import TrainingBudgetError, show
from ..model.shapes import preset_memo, preset_params


@dataclass(frozen=True)
class Shape:
    """params_active, params_total: parameters (N_active counts one token's path, embedding included
    as in 6·N·D); n_layers; d_model, attn_dim (heads x head_dim), kv_dim (K or V width per token),
    vocab; top_k: routed experts per token (0 for a dense model); params_expert: the routed experts'
    parameters, which expert parallelism splits and whose gradients are reduced over the expert
    data-parallel group only (None: params_total - params_active, every active parameter taken as
    dense); n_heads: query heads (0 or None: not given; unfused attention's scores need them).
    Scalars or broadcasting arrays."""

    params_active: Any
    n_layers: Any
    d_model: Any
    params_total: Any = None
    attn_dim: Any = None
    kv_dim: Any = None
    vocab: Any = 0.0
    top_k: Any = 0.0
    params_expert: Any = None
    n_heads: Any = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "params_active", positive("params_active", self.params_active))
        put(self, "n_layers", whole("n_layers", self.n_layers))
        put(self, "d_model", whole("d_model", self.d_model))
        total = self.params_active if self.params_total is None else self.params_total
        put(self, "params_total", positive("params_total", total))
        put(self, "attn_dim", whole("attn_dim", self.d_model if self.attn_dim is None else self.attn_dim))
        put(self, "kv_dim", whole("kv_dim", self.attn_dim if self.kv_dim is None else self.kv_dim))
        put(self, "vocab", non_negative("vocab", self.vocab))
        put(self, "top_k", non_negative("top_k", self.top_k))
        put(self, "n_heads", whole("n_heads", 0.0 if self.n_heads is None else self.n_heads, minimum=0))
        expert = self.params_total - self.params_active if self.params_expert is None else self.params_expert
        put(self, "params_expert", non_negative("params_expert", expert))
        if np.any(np.asarray(self.params_expert) > np.asarray(self.params_total)):
            raise TrainingBudgetError(f"params_expert must be at most params_total (got {show(self.params_expert)} "
                                      f"and {show(self.params_total)})", "params_expert")

    @classmethod
    def from_preset(cls, name: str) -> Shape:
        """The shape of a calc.models preset (e.g. 'Llama 3.1 70B'), with its published parameter counts."""
        from ..model.shapes import model_preset

        return preset_shape(model_preset(name))


@preset_memo
def preset_shape(preset: Any) -> Shape:
    """The step's view of a calc.models preset (a ModelPreset with a shape): its published parameter
    counts where it has them (the step model was calibrated on those; a config.json gives none: the
    counted ones), attention and KV widths from heads x head size, its routed experts' parameters
    (at most the total) and routed experts per token. Built once per preset object (a Shape is frozen)."""
    sh, counts = preset.shape, preset_params(preset)
    head = sh.get("head_dim") or sh["d_model"] / sh["n_heads"]
    moe = (sh.get("n_experts") or 1) > 1
    total = _published(preset.published_total_params, counts.total)
    return Shape(params_active=_published(preset.published_active_params, counts.active_with_embedding),
                 params_total=total, n_layers=sh["n_layers"], d_model=sh["d_model"], attn_dim=sh["n_heads"] * head,
                 kv_dim=(sh.get("n_kv_heads") or sh["n_heads"]) * head, vocab=sh.get("vocab") or 0,
                 top_k=(sh.get("top_k") or 0) if moe else 0, params_expert=min(float(counts.experts), total),
                 n_heads=sh["n_heads"])


def _published(published: Any, counted: Any) -> float:
    """A preset's published count where it has one, else its count from the shape."""
    return float(published) if published is not None and math.isfinite(published) else float(counted)
