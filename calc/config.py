"""A model's shape from a local Hugging Face `config.json` (nothing is fetched).

Field names follow the `transformers` configuration classes of each family
(huggingface.co/docs/transformers, model_doc/llama, mistral, mixtral, qwen2, qwen2_moe,
qwen3, qwen3_moe): num_hidden_layers, hidden_size, num_attention_heads,
num_key_value_heads, head_dim, intermediate_size, vocab_size, tie_word_embeddings;
mixture of experts: num_local_experts (Mixtral) or num_experts (Qwen), num_experts_per_tok,
moe_intermediate_size and shared_expert_intermediate_size (Qwen MoE). Qwen2 adds Q/K/V biases
(Yang et al. 2024, arXiv:2407.10671, §2.1), Qwen3 drops them and adds Q/K norms (Yang et al.
2025, arXiv:2505.09388, §2). A field that changes the parameter count in a way this module
does not model (a bias, sparse-step layouts, latent attention) is refused, named.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .checks import TrainingBudgetError
from .models import ModelPreset
from .textfile import read_text

MAX_CONFIG_BYTES = 1_000_000  # a config.json is a few kB; refuse anything far larger
FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe")

# Fields that do not change the parameter count (training, inference and tokenizer settings).
HARMLESS = frozenset({
    "_name_or_path", "architectures", "attention_dropout", "bos_token_id", "eos_token_id",
    "pad_token_id", "hidden_act", "initializer_range", "max_position_embeddings", "model_type",
    "pretraining_tp", "rms_norm_eps", "rope_scaling", "rope_theta", "rope_parameters",
    "torch_dtype", "dtype", "transformers_version", "use_cache", "sliding_window",
    "use_sliding_window", "max_window_layers", "router_aux_loss_coef", "output_router_logits",
    "norm_topk_prob", "router_jitter_noise", "layer_types", "quantization_config",
})
SHAPE = frozenset({
    "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
    "head_dim", "intermediate_size", "vocab_size", "tie_word_embeddings", "num_local_experts",
    "num_experts", "num_experts_per_tok", "moe_intermediate_size",
    "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers",
    "attention_bias", "mlp_bias",
})


def _read(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        data = json.loads(read_text(p, "config", MAX_CONFIG_BYTES))
    except ValueError as e:
        raise TrainingBudgetError(f"config {str(p)!r} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise TrainingBudgetError(f"config {str(p)!r} must hold a JSON object")
    return data


def _count(data: dict[str, Any], key: str, where: str, default: Any = None) -> Any:
    value = data.get(key, default)
    if value is None and default is None:
        raise TrainingBudgetError(f"{where}: {key} is required")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TrainingBudgetError(f"{where}: {key} must be a whole number (got {value!r})")
    return value


def _flag(data: dict[str, Any], key: str, where: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise TrainingBudgetError(f"{where}: {key} must be true or false (got {value!r})")
    return value


def _refuse(data: dict[str, Any], where: str) -> None:
    unknown = sorted(set(data) - HARMLESS - SHAPE)
    if unknown:
        raise TrainingBudgetError(f"{where}: fields not understood: {', '.join(unknown)}")
    for key in ("attention_bias", "mlp_bias"):
        if data.get(key):
            raise TrainingBudgetError(f"{where}: {key} true is not modelled (got {data[key]!r})")
    if data.get("decoder_sparse_step", 1) != 1:
        raise TrainingBudgetError(
            f"{where}: decoder_sparse_step other than 1 is not modelled (got {data['decoder_sparse_step']!r})")
    if data.get("mlp_only_layers"):
        raise TrainingBudgetError(
            f"{where}: mlp_only_layers is not modelled (got {data['mlp_only_layers']!r})")


def _experts(data: dict[str, Any], family: str, where: str) -> dict[str, Any]:
    """Mixture-of-experts fields: n_experts, top_k, moe_ffn_dim, n_shared_experts."""
    if family == "mixtral":
        return {"n_experts": _count(data, "num_local_experts", where),
                "top_k": _count(data, "num_experts_per_tok", where),
                "moe_ffn_dim": _count(data, "intermediate_size", where)}
    moe = {"n_experts": _count(data, "num_experts", where),
           "top_k": _count(data, "num_experts_per_tok", where),
           "moe_ffn_dim": _count(data, "moe_intermediate_size", where)}
    shared = data.get("shared_expert_intermediate_size") or 0
    if shared:
        # Qwen2-MoE's shared expert is one MLP of this width: n shared experts of moe_ffn_dim
        # (its 1-wide sigmoid gate, d parameters per layer, is left out).
        n, rest = divmod(_count(data, "shared_expert_intermediate_size", where), moe["moe_ffn_dim"])
        if rest:
            raise TrainingBudgetError(
                f"{where}: shared_expert_intermediate_size must be a multiple of "
                f"moe_intermediate_size (got {shared!r})")
        moe["n_shared_experts"] = n
    return moe


def load_config(path: str | Path) -> ModelPreset:
    """The shape in a local Hugging Face `config.json`, as a preset (published counts NaN).

    `calc.model_params(**load_config(p).shape)` counts it. Families: llama, mistral, mixtral,
    qwen2, qwen2_moe, qwen3, qwen3_moe; other model_type values and fields that would change
    the count in ways not modelled give a `TrainingBudgetError` naming them.
    """
    data = _read(path)
    where = f"config {str(path)!r}"
    family = data.get("model_type")
    if family not in FAMILIES:
        raise TrainingBudgetError(f"{where}: model_type must be one of {', '.join(FAMILIES)} (got {family!r})")
    _refuse(data, where)
    heads = _count(data, "num_attention_heads", where)
    shape: dict[str, Any] = {
        "n_layers": _count(data, "num_hidden_layers", where),
        "d_model": _count(data, "hidden_size", where),
        "n_heads": heads,
        "n_kv_heads": _count(data, "num_key_value_heads", where, heads),
        "ffn_dim": _count(data, "intermediate_size", where),
        "vocab": _count(data, "vocab_size", where),
        "tied_embeddings": _flag(data, "tie_word_embeddings", where, False),
        "qkv_bias": family in ("qwen2", "qwen2_moe"),
        "qk_norm": family in ("qwen3", "qwen3_moe"),
    }
    if data.get("head_dim") is not None:
        shape["head_dim"] = _count(data, "head_dim", where)
    if family in ("mixtral", "qwen2_moe", "qwen3_moe"):
        shape.update(_experts(data, family, where))
    p = Path(path)
    name = str(data.get("_name_or_path") or (p.parent.name if p.name == "config.json" else p.stem))
    return ModelPreset(name=name, shape=shape, published_total_params=math.nan,
                       published_active_params=math.nan, source=str(path), as_of="", note=family)
