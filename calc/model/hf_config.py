"""A model's shape from a local Hugging Face `config.json` (nothing is fetched).

Field names follow the `transformers` configuration classes of each family
(huggingface.co/docs/transformers, model_doc/<family>): num_hidden_layers, hidden_size,
num_attention_heads, num_key_value_heads, head_dim, intermediate_size, vocab_size,
tie_word_embeddings; mixture of experts: num_local_experts (Mixtral, gpt-oss, Llama 4) or
num_experts (Qwen) or n_routed_experts (DeepSeek), num_experts_per_tok, moe_intermediate_size,
shared_expert_intermediate_size (Qwen MoE), n_shared_experts and first_k_dense_replace
(DeepSeek), interleave_moe_layer_step and intermediate_size_mlp (Llama 4). Per family:
- qwen2: Q/K/V biases (arXiv:2407.10671, §2.1); qwen3: Q/K norms (arXiv:2505.09388, §2);
- gemma2, gemma3: pre- and post-norms, 4 per layer (arXiv:2408.00118, §2; Gemma 3 adds Q/K
  norms, arXiv:2503.19786, §2), tied embeddings by default; the multimodal gemma3 and llama4
  configs keep the language model in `text_config` (the vision tower is not counted);
- phi3 (fused qkv and gate_up: same count); olmo2: post-norms and whole-width Q/K norms
  (arXiv:2501.00656, §3.1);
- gpt_oss: attention, expert and router biases and one attention sink per head (model card
  arXiv:2508.10925, §2.1);
- llama4: one shared expert of the expert width, MoE every interleave_moe_layer_step layers,
  dense layers of width intermediate_size_mlp;
- deepseek_v2, deepseek_v3: multi-head latent attention (q_lora_rank, kv_lora_rank,
  qk_nope_head_dim, qk_rope_head_dim, v_head_dim; arXiv:2405.04434, §2.1), DeepSeekMoE with
  n_shared_experts and the first first_k_dense_replace layers dense; V3's router bias
  (topk_method "noaux_tc", arXiv:2412.19437, §2.1.2). V3's multi-token-prediction module
  (num_nextn_predict_layers; 14B, §2.2) is not part of the 671B and is not counted.
A family is recognised by `model_type` or by its `architectures` entry. A field that changes
the parameter count in a way this module does not model is refused, named.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from ..base.errors import TrainingBudgetError, show
from ..base.textfile import read_text
from .shapes import ModelPreset

MAX_CONFIG_BYTES = 1_000_000  # a config.json is a few kB; refuse anything far larger
MAX_COUNT = 2 ** 40           # any shape count above ~1e12 is a typo (or an attack)
ARCHITECTURES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2", "Qwen2MoeForCausalLM": "qwen2_moe", "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe", "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text", "Gemma3ForConditionalGeneration": "gemma3",
    "Phi3ForCausalLM": "phi3", "Olmo2ForCausalLM": "olmo2", "GptOssForCausalLM": "gpt_oss",
    "Llama4ForConditionalGeneration": "llama4", "Llama4ForCausalLM": "llama4_text",
    "DeepseekV2ForCausalLM": "deepseek_v2", "DeepseekV3ForCausalLM": "deepseek_v3",
}
FAMILIES = tuple(sorted(set(ARCHITECTURES.values())))
NESTED = {"gemma3": "gemma3_text", "llama4": "llama4_text"}  # language model in text_config
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "llama4_text", "deepseek_v2", "deepseek_v3")

# Fields that do not change the parameter count (training, inference and tokenizer settings).
HARMLESS = frozenset({
    "_name_or_path", "architectures", "attention_dropout", "bos_token_id", "eos_token_id",
    "pad_token_id", "hidden_act", "initializer_range", "max_position_embeddings", "model_type",
    "pretraining_tp", "rms_norm_eps", "rope_scaling", "rope_theta", "rope_parameters",
    "torch_dtype", "dtype", "transformers_version", "use_cache", "sliding_window",
    "use_sliding_window", "max_window_layers", "router_aux_loss_coef", "output_router_logits",
    "norm_topk_prob", "router_jitter_noise", "layer_types", "quantization_config",
    # gemma2/gemma3
    "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
    "hidden_activation", "cache_implementation", "rope_local_base_freq", "sliding_window_pattern",
    "boi_token_index", "eoi_token_index", "image_token_index", "mm_tokens_per_image",
    "vision_config", "vision_feature_layer", "vision_feature_select_strategy", "processor_class",
    # phi3
    "embd_pdrop", "resid_pdrop", "original_max_position_embeddings", "auto_map",
    "partial_rotary_factor",
    # gpt_oss
    "swiglu_limit", "initial_context_length", "experts_per_token",
    # llama4
    "no_rope_layers", "no_rope_layer_interval", "attention_chunk_size", "use_qk_norm", "attn_temperature_tuning",
    "floor_scale", "attn_scale", "moe_layers", "router_dtype", "for_llm_compressor",
    "image_token_id", "boi_token_id", "eoi_token_id", "multi_modal_projector_bias",
    "projector_hidden_act",
    # written by transformers itself, none changing the count: the attention implementation it
    # chose (PretrainedConfig), Gemma 3's bidirectional attention switch (EmbeddingGemma) and its
    # sliding-window pattern under the private name of transformers >= 4.53 (configuration_gemma3.py)
    "_attn_implementation_autoset", "_attn_implementation", "use_bidirectional_attention", "_sliding_window_pattern",
    # deepseek
    "topk_method", "n_group", "topk_group", "routed_scaling_factor", "scoring_func", "aux_loss_alpha",
    "seq_aux", "ep_size", "num_nextn_predict_layers", "moe_layer_freq",
})
# Gemma3TextConfig's defaults, which transformers fills in where a published config leaves a field
# out (google/gemma-3-4b-pt's text_config gives no heads, head_dim or vocab_size; gemma-3-27b's no
# vocab_size): Gemma3TextConfig.__init__ in transformers' src/transformers/models/gemma3/
# configuration_gemma3.py (v4.50.0, commit 008f5c8c29be84d4721dc6d1e0fcd72300580be4): vocab_size=262_208,
# hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8,
# num_key_value_heads=4, head_dim=256 (tie_word_embeddings=True, attention_bias=False: as here already).
GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
}
DEFAULTS = {"gemma3_text": GEMMA3_TEXT_DEFAULTS}

SHAPE = frozenset({
    "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
    "head_dim", "intermediate_size", "vocab_size", "tie_word_embeddings", "num_local_experts",
    "num_experts", "num_experts_per_tok", "moe_intermediate_size",
    "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers",
    "attention_bias", "mlp_bias",
})
_DEEPSEEK = frozenset({"n_routed_experts", "n_shared_experts", "first_k_dense_replace", "q_lora_rank",
                       "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"})
OWN_FIELDS = {  # shape fields only these families have (elsewhere they are refused, named)
    "deepseek_v2": _DEEPSEEK, "deepseek_v3": _DEEPSEEK,
    "llama4_text": frozenset({"interleave_moe_layer_step", "intermediate_size_mlp"}),
    "gemma3": frozenset({"text_config"}), "llama4": frozenset({"text_config"}),
}


def _read(path: Any) -> dict[str, Any]:
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise TrainingBudgetError(f"config must be a path to a config.json (got {show(path)})")
    p = Path(path)
    try:  # a FIFO or device would block open() itself: look before reading
        regular = stat.S_ISREG(p.stat().st_mode)
    except OSError:
        regular = True  # read_text says why it cannot be read
    if not regular:
        raise TrainingBudgetError(f"config {str(p)!r}: not a regular file")
    try:
        data = json.loads(read_text(p, "config", MAX_CONFIG_BYTES))
    except RecursionError:
        raise TrainingBudgetError(f"config {str(p)!r} is nested too deeply to be a config.json") from None
    except TrainingBudgetError:  # read_text's own words (not a regular file, too large, not UTF-8)
        raise
    except ValueError as e:
        raise TrainingBudgetError(f"config {str(p)!r} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise TrainingBudgetError(f"config {str(p)!r} must hold a JSON object")
    return data


def _count(data: dict[str, Any], key: str, where: str, default: Any = None, minimum: int = 1) -> Any:
    value = data.get(key, default)
    if value is None and default is None:
        raise TrainingBudgetError(f"{where}: {key} is required")
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_COUNT:
        raise TrainingBudgetError(
            f"{where}: {key} must be a whole number from {minimum} to {MAX_COUNT} (got {show(value)})")
    return value


def _flag(data: dict[str, Any], key: str, where: str, default: bool) -> bool:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise TrainingBudgetError(f"{where}: {key} must be true or false (got {show(value)})")
    return value


def _family(data: dict[str, Any], where: str) -> str:
    family = data.get("model_type")
    if family in FAMILIES:
        return family
    archs = data.get("architectures")
    for arch in archs if isinstance(archs, list) else []:
        if arch in ARCHITECTURES:
            return ARCHITECTURES[arch]
    raise TrainingBudgetError(
        f"{where}: model_type must be one of {', '.join(FAMILIES)} or architectures name one of "
        f"their classes (got model_type={show(family)}, architectures={show(archs)})")


def _refuse(data: dict[str, Any], family: str, where: str) -> None:
    unknown = sorted(set(data) - HARMLESS - SHAPE - OWN_FIELDS.get(family, frozenset()))
    if unknown:
        raise TrainingBudgetError(f"{where}: fields not understood: {', '.join(unknown)}")
    biased = ("mlp_bias",) if family == "gpt_oss" else ("attention_bias", "mlp_bias")
    for key in biased:
        if data.get(key):
            raise TrainingBudgetError(f"{where}: {key} true is not modelled for {family} (got {show(data[key])})")
    if data.get("decoder_sparse_step", 1) != 1:
        raise TrainingBudgetError(
            f"{where}: decoder_sparse_step other than 1 is not modelled (got {show(data['decoder_sparse_step'])})")
    if data.get("mlp_only_layers"):
        raise TrainingBudgetError(
            f"{where}: mlp_only_layers is not modelled (got {show(data['mlp_only_layers'])})")
    if data.get("moe_layer_freq", 1) != 1:
        raise TrainingBudgetError(
            f"{where}: moe_layer_freq other than 1 is not modelled (got {show(data['moe_layer_freq'])})")


def _experts(data: dict[str, Any], family: str, where: str) -> dict[str, Any]:
    """Mixture-of-experts fields: n_experts, top_k, moe_ffn_dim, n_shared_experts, ..."""
    top_k = _count(data, "num_experts_per_tok", where)
    if family in ("mixtral", "gpt_oss"):
        return {"n_experts": _count(data, "num_local_experts", where), "top_k": top_k,
                "moe_ffn_dim": _count(data, "intermediate_size", where)}
    if family == "llama4_text":  # one shared expert; dense layers of intermediate_size_mlp
        return {"n_experts": _count(data, "num_local_experts", where), "top_k": top_k,
                "moe_ffn_dim": _count(data, "intermediate_size", where), "n_shared_experts": 1,
                "ffn_dim": _count(data, "intermediate_size_mlp", where),
                "moe_every": _count(data, "interleave_moe_layer_step", where, 1)}
    if family.startswith("deepseek"):
        return {"n_experts": _count(data, "n_routed_experts", where), "top_k": top_k,
                "moe_ffn_dim": _count(data, "moe_intermediate_size", where),
                "n_shared_experts": _count(data, "n_shared_experts", where, 0, minimum=0),
                "dense_layers": _count(data, "first_k_dense_replace", where, 0, minimum=0)}
    moe = {"n_experts": _count(data, "num_experts", where), "top_k": top_k,
           "moe_ffn_dim": _count(data, "moe_intermediate_size", where)}
    shared = data.get("shared_expert_intermediate_size") or 0
    if shared:
        # Qwen2-MoE's shared expert is one MLP of this width: n shared experts of moe_ffn_dim
        # (its 1-wide sigmoid gate, d parameters per layer, is left out).
        n, rest = divmod(_count(data, "shared_expert_intermediate_size", where), moe["moe_ffn_dim"])
        if rest:
            raise TrainingBudgetError(
                f"{where}: shared_expert_intermediate_size must be a multiple of "
                f"moe_intermediate_size (got {show(shared)}, {show(moe['moe_ffn_dim'])})")
        moe["n_shared_experts"] = n
    return moe


def _latent(data: dict[str, Any], where: str) -> dict[str, Any]:
    """Multi-head latent attention (DeepSeek-V2/V3)."""
    q_lora = data.get("q_lora_rank")
    return {"q_lora_rank": None if q_lora is None else _count(data, "q_lora_rank", where, minimum=0),
            "kv_lora_rank": _count(data, "kv_lora_rank", where),
            "qk_nope_head_dim": _count(data, "qk_nope_head_dim", where, minimum=0),
            "qk_rope_head_dim": _count(data, "qk_rope_head_dim", where, minimum=0),
            "v_head_dim": _count(data, "v_head_dim", where)}


def _shape(data: dict[str, Any], family: str, where: str) -> dict[str, Any]:
    heads = _count(data, "num_attention_heads", where)
    gemma = family in ("gemma2", "gemma3_text")
    shape: dict[str, Any] = {
        "n_layers": _count(data, "num_hidden_layers", where),
        "d_model": _count(data, "hidden_size", where),
        "n_heads": heads,
        "ffn_dim": _count(data, "intermediate_size", where),
        "vocab": _count(data, "vocab_size", where),
        "tied_embeddings": _flag(data, "tie_word_embeddings", where, gemma),
        "qkv_bias": family in ("qwen2", "qwen2_moe"),
        "qk_norm": "full" if family == "olmo2" else family in ("qwen3", "qwen3_moe", "gemma3_text"),
    }
    if family.startswith("deepseek"):
        shape.update(_latent(data, where))
    else:
        shape["n_kv_heads"] = _count(data, "num_key_value_heads", where, heads)
        if data.get("head_dim") is not None:
            shape["head_dim"] = _count(data, "head_dim", where)
    if gemma:
        shape["norms_per_layer"] = 4
    if family == "gpt_oss":
        shape.update(attention_bias=_flag(data, "attention_bias", where, True), attention_sinks=True,
                     expert_bias=True, router_bias=True)
    if family in MOE:
        shape.update(_experts(data, family, where))
    if family == "deepseek_v3" and data.get("topk_method", "noaux_tc") == "noaux_tc":
        shape["router_bias"] = True
    return shape


def load_config(path: str | Path) -> ModelPreset:
    """The shape in a local Hugging Face `config.json`, as a preset (published counts NaN).

    `calc.model_params(**load_config(p).shape)` counts it. Families: module doc; other
    families and fields that would change the count in ways not modelled give a
    `TrainingBudgetError` naming them.
    """
    data = _read(path)
    where = f"config {str(path)!r}"
    family = _family(data, where)
    top = data
    if family in NESTED:
        _refuse(data, family, where)
        text = data.get("text_config")
        if not isinstance(text, dict):
            raise TrainingBudgetError(f"{where}: a {family} config keeps the model in text_config (got {show(text)})")
        data, family = text, NESTED[family]
        where = f"{where} text_config"
    _refuse(data, family, where)
    shape = _shape({**DEFAULTS.get(family, {}), **data}, family, where)  # transformers' defaults under the file's
    p = Path(path)
    # named by what the user has: the model's own `_name_or_path`, else its file ("abc123/config.json":
    # a folder alone may be a cache's snapshot hash, or the family, "qwen3", which names no model)
    folder = p.resolve().parent.name
    name = str(top.get("_name_or_path") or (f"{folder}/{p.name}" if p.name == "config.json" and folder else p.stem))
    return ModelPreset(name=name, shape=shape, published_total_params=math.nan,
                       published_active_params=math.nan, source=str(path), as_of="", note=family)
