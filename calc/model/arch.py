"""A transformer's shape as one frozen part, `Arch`, and the parameter-count kernel on it,
`params_of(arch)`: the terms and their sources are calc/model/shapes.py's module doc (Vaswani et
al. 2017; GQA, Ainslie et al. 2023; SwiGLU, Shazeer 2020; MoE, Shazeer et al. 2017 and DeepSeekMoE;
MLA, DeepSeek-V2 §2.1.2-2.1.3; gpt-oss biases). calc.model_params is the flat door onto it (each
argument a cell or a broadcasting array); presets and config.json files give an Arch's fields.
Units: counts (layers, widths, heads, experts, parameters)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..base.checks import flag, whole
from ..base.errors import TrainingBudgetError, out, pick, show

DEFAULT_VOCAB = 32000  # Llama 1/2 and Mistral tokenizers (Touvron et al. 2023, §2.1)


@dataclass(frozen=True)
class Arch:
    """A decoder-only transformer's shape; every field a scalar or a broadcasting array.

    `n_kv_heads` None: `n_heads` (multi-head attention); `head_dim` None: d_model / n_heads;
    `ffn_dim` None: 4·d_model (Vaswani et al. 2017, §3.3); `moe_ffn_dim` None: `ffn_dim`.
    `n_experts` 1 is a dense model. `kv_lora_rank` with `qk_nope_head_dim`, `qk_rope_head_dim`
    and `v_head_dim` (and `q_lora_rank`, 0 or None for a direct Q projection) is multi-head
    latent attention. Checked where a kernel reads it, naming the field."""

    n_layers: Any
    d_model: Any
    n_heads: Any
    n_kv_heads: Any = None
    head_dim: Any = None
    ffn_dim: Any = None
    gated_mlp: Any = True
    vocab: Any = DEFAULT_VOCAB
    tied_embeddings: Any = False
    n_experts: Any = 1
    top_k: Any = 1
    n_shared_experts: Any = 0
    moe_ffn_dim: Any = None
    dense_layers: Any = 0
    qkv_bias: Any = False
    qk_norm: Any = False
    norms_per_layer: Any = 2
    moe_every: Any = 1
    attention_bias: Any = False
    attention_sinks: Any = False
    expert_bias: Any = False
    router_bias: Any = False
    q_lora_rank: Any = None
    kv_lora_rank: Any = None
    qk_nope_head_dim: Any = None
    qk_rope_head_dim: Any = None
    v_head_dim: Any = None


@dataclass(frozen=True)
class ParamBreakdown:
    """Parameter counts (floats, or arrays when inputs were arrays).

    `total` every parameter; `active` those one token runs through (routed experts: top_k of
    n_experts) without the untied input table (DeepSeek's and OpenAI's published "activated"
    count; the MFU convention); `embedding` input table plus untied output projection;
    `attention`, `mlp` (dense MLPs, shared experts and routed experts), `router`, `norms`
    summed over layers; `experts` the routed-expert part of `mlp` (what expert parallelism
    shards); `active_with_embedding` `active` plus the untied input table (Mistral's, Qwen's
    and Meta's published count; the N of the budget's 6·N·D).
    """

    total: Any
    active: Any
    embedding: Any
    attention: Any
    mlp: Any
    router: Any
    norms: Any
    experts: Any
    active_with_embedding: Any = None

    def as_dict(self) -> dict[str, Any]:
        """Every part, in a stable order."""
        return asdict(self)


def params_of(arch: Arch) -> ParamBreakdown:
    """Parameters of the transformer `arch` (terms and sources: calc/model/shapes.py's module doc).
    Llama 3.1 8B (32, 4096, 32, n_kv_heads=8, ffn_dim=14336, vocab=128256) -> 8,030,261,248."""
    L, d, nh, nkv, hd, f, V = _dims(arch)
    E, k, shared, fm, dense, step = _experts(arch, L, f)
    mats = 3.0 if flag("gated_mlp", arch.gated_mlp) else 2.0
    tied = flag("tied_embeddings", arch.tied_embeddings)
    attn = _attention_params(arch, d, nh, nkv, hd)
    norms_layer = whole("norms_per_layer", arch.norms_per_layer, minimum=0) * d + _qk_norm(arch.qk_norm, nh, nkv, hd)
    n_moe = np.where(E > 1, np.floor((L - dense) / step), 0.0)              # MoE layers
    n_dense = L - n_moe
    bias = flag("expert_bias", arch.expert_bias)
    expert = mats * d * fm + (mats - 1.0) * fm * bias + d * bias            # one expert MLP
    routed = n_moe * E * expert
    router = n_moe * (d * E + E * flag("router_bias", arch.router_bias))
    mlp = n_dense * mats * d * f + n_moe * shared * expert + routed
    embedding = V * d * (1.0 if tied else 2.0)
    attention = L * attn
    norms = L * norms_layer + d
    total = embedding + attention + mlp + router + norms
    with_embedding = total - routed + n_moe * k * expert
    input_table = 0.0 if tied else V * d
    return ParamBreakdown(total=out(total), active=out(with_embedding - input_table),
                          embedding=out(embedding), attention=out(attention), mlp=out(mlp),
                          router=out(router), norms=out(norms), experts=out(routed),
                          active_with_embedding=out(with_embedding))


def _dims(a: Arch) -> tuple[Any, ...]:
    """(layers, d_model, heads, kv heads, head dim, ffn dim, vocab), checked."""
    L = whole("n_layers", a.n_layers)
    d = whole("d_model", a.d_model)
    nh = whole("n_heads", a.n_heads)
    nkv = nh if a.n_kv_heads is None else whole("n_kv_heads", a.n_kv_heads)
    if np.any((nh % nkv) != 0):
        raise TrainingBudgetError(
            f"n_kv_heads must divide n_heads (got n_kv_heads={show(a.n_kv_heads)}, n_heads={show(a.n_heads)})")
    if a.head_dim is None and np.any(np.mod(d, nh) != 0):
        raise TrainingBudgetError(
            f"n_heads must divide d_model when head_dim is not given (got n_heads={show(a.n_heads)}, "
            f"d_model={show(a.d_model)})")
    hd = d / nh if a.head_dim is None else whole("head_dim", a.head_dim)
    f = 4.0 * d if a.ffn_dim is None else whole("ffn_dim", a.ffn_dim)
    return L, d, nh, nkv, hd, f, whole("vocab", a.vocab)


def _experts(a: Arch, L: Any, f: Any) -> tuple[Any, ...]:
    """(experts, top-k, shared experts, expert ffn dim, dense layers, MoE every n layers), checked."""
    E = whole("n_experts", a.n_experts)
    k = whole("top_k", a.top_k)
    if np.any(k > E):
        raise TrainingBudgetError(f"top_k must be <= n_experts (got top_k={show(a.top_k)}, "
                                  f"n_experts={show(a.n_experts)})")
    shared = whole("n_shared_experts", a.n_shared_experts, minimum=0)
    fm = f if a.moe_ffn_dim is None else whole("moe_ffn_dim", a.moe_ffn_dim)
    dense = whole("dense_layers", a.dense_layers, minimum=0)
    if np.any(dense > L):
        raise TrainingBudgetError(f"dense_layers must be <= n_layers (got {show(a.dense_layers)})")
    return E, k, shared, fm, dense, whole("moe_every", a.moe_every)


def _qk_norm(qk_norm: Any, nh: Any, nkv: Any, hd: Any) -> Any:
    """Q/K norm gains per layer: per head (Qwen3, 2·h_d) or over the whole width (OLMo 2)."""
    if isinstance(qk_norm, str) and qk_norm.strip().lower() == "full":
        return (nh + nkv) * hd
    return 2.0 * hd * flag("qk_norm", qk_norm)


def _attention_params(a: Arch, d: Any, nh: Any, nkv: Any, hd: Any) -> Any:
    """Attention parameters of one layer: grouped-query or multi-head latent (calc/model/shapes.py's doc)."""
    bias = flag("attention_bias", a.attention_bias)
    sinks = nh * flag("attention_sinks", a.attention_sinks)
    mla = (a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim)
    if all(v is None for v in mla) and a.q_lora_rank is None:
        attn = 2.0 * d * nh * hd + 2.0 * d * nkv * hd                     # Q, O; K, V
        return attn + (nh + 2.0 * nkv) * hd * (flag("qkv_bias", a.qkv_bias) or bias) + d * bias + sinks
    if any(v is None for v in mla):
        raise TrainingBudgetError(
            "latent attention needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim "
            f"together (got kv_lora_rank={show(a.kv_lora_rank)}, qk_nope_head_dim={show(a.qk_nope_head_dim)}, "
            f"qk_rope_head_dim={show(a.qk_rope_head_dim)}, v_head_dim={show(a.v_head_dim)})")
    r_kv = whole("kv_lora_rank", a.kv_lora_rank)
    dn = whole("qk_nope_head_dim", a.qk_nope_head_dim, minimum=0)
    dr = whole("qk_rope_head_dim", a.qk_rope_head_dim, minimum=0)
    dv = whole("v_head_dim", a.v_head_dim)
    r_q = 0.0 if a.q_lora_rank is None else whole("q_lora_rank", a.q_lora_rank, minimum=0)
    q_head = nh * (dn + dr)
    q = pick(r_q > 0, d * r_q + r_q + r_q * q_head, d * q_head)
    kv = d * (r_kv + dr) + r_kv + r_kv * nh * (dn + dv)
    return q + kv + nh * dv * d + sinks
