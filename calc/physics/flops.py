"""Training compute in FLOPs.

Sources:
- Kaplan et al. 2020, "Scaling Laws for Neural Language Models", arXiv:2001.08361, §2.1:
  C ≈ 6·N·D, a forward pass of 2N and a backward pass of 4N FLOPs per token. The seed uses it.
- Chowdhery et al. 2022, "PaLM", arXiv:2204.02311, Appendix B: model FLOPs per token
  6N + 12·L·H·Q·T, the second term being attention (H heads of width Q, so H·Q =
  n_heads·head_dim, which is d_model only when head_dim = d_model / n_heads; T = sequence
  length). A sliding-window layer (Beltagy et al. 2020, "Longformer", arXiv:2004.05150, §3.1;
  Gemma 2, arXiv:2408.00118, §2; gpt-oss model card, arXiv:2508.10925, §2.1) attends to at
  most `window` keys, so its term uses min(T, window).
- Input embedding: a table lookup does no matmul, so MFU practice counts 6·(N - V·d) for the
  dense part (torchtitan `get_num_flop_per_token` and nanoGPT's estimate_mfu subtract the
  embedding; DeepSeek-V3's and gpt-oss's "activated" counts leave it out). `input_embedding`
  takes those V·d parameters out; the default keeps them in (Kaplan's N, the seed's figure).
- Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
  Using Megatron-LM", arXiv:2104.04473, §5.1: full activation recomputation runs the forward
  pass twice, 8N per token (and the attention term grows likewise, 16·L·d_model·T).
- Korthikanti et al. 2022, arXiv:2205.05198, §5: selective recomputation re-runs only the
  attention core, so only the attention term gets the extra forward pass.
- torchtitan's op-level selective checkpointing ("op"; torchtitan/parallelisms/
  parallelize_llama.py @ 9dec370, lines 213-266) keeps the attention output and every other
  matmul output, so backward re-runs the other half of the matmuls and no attention: 7N and
  12·L·d·T per token. Half is exact when alternate matrices are the same size; for Llama 3.1 8B
  (K, O and up recomputed) it is 37% of the layer's matmul FLOPs, so 7N is 4% high there.
- "offload" (calc.physics.recompute) is full recompute with each layer's input kept in host memory
  (MaxText's remat_policy=custom with decoder_layer_input=offload, src/MaxText/configs/base.yml;
  Megatron-Core's TransformerConfig.cpu_offloading): where the input is kept changes no FLOPs, so it
  counts full's 8N and 16·L·d·T.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.arith import times
from ..base.checks import choice, non_negative, positive, whole
from ..base.errors import TrainingBudgetError, broadcasts, out, out_positive, show
from .recompute import RECOMPUTE_ORDER

RECOMPUTE = RECOMPUTE_ORDER  # none, selective, op, full, offload (calc.physics.recompute)

# FLOPs per parameter per token, by what a token goes through (Kaplan et al. 2020, arXiv:2001.08361,
# §2.1 Table 1: C_forward ≈ 2N + 2·n_layer·n_ctx·d_attn per token; a training step, forward and
# backward, C ≈ 6N). The backward pass is two matmuls per weight matrix, each the forward's size: the
# gradient with respect to the layer's input (2N) and with respect to its weights (2N) (Narayanan et
# al. 2021, arXiv:2104.04473, Appendix "Floating-point operations"; Hobbhahn & Sevilla 2021, Epoch
# AI, "What's the backward-forward FLOP ratio for neural networks?": 2:1 for linear layers).
# LoRA and QLoRA freeze the base weights: the backward pass still carries the activations' gradients
# through them (2N) but computes no weight gradient for them, so 4N (Hu et al. 2021, arXiv:2106.09685,
# §4.2, measured a 25% speedup over full fine-tuning on GPT-3 175B "as we do not need to calculate the
# gradient for the vast majority of the parameters": footnote 5, 32.5 against 43.1 tokens/s per V100,
# 1.33x where 6/4 is 1.5x; the rest of a step, attention and the non-matmul work, does not shrink, so
# the utilization on this basis is about 0.89 of full fine-tuning's). The adapters' own 6 FLOPs per
# adapter parameter-token are left out: 1% of N (calc.physics.memory's default adapters) adds 0.06N, 1.5%.
TRAIN_FLOPS_PER_PARAM_TOKEN = 6.0  # a training step: forward 2N + backward 4N
FROZEN_FLOPS_PER_PARAM_TOKEN = 4.0  # a step through frozen weights (LoRA, QLoRA): forward 2N + activations' 2N
FORWARD_FLOPS_PER_PARAM_TOKEN = 2.0  # a forward pass alone: method "inference" (weights only, calc.physics.memory)
FLOPS_PER_PARAM_TOKEN = {"full": TRAIN_FLOPS_PER_PARAM_TOKEN, "lora": FROZEN_FLOPS_PER_PARAM_TOKEN,
                         "qlora": FROZEN_FLOPS_PER_PARAM_TOKEN, "inference": FORWARD_FLOPS_PER_PARAM_TOKEN}


def flops_per_param_token(method: str) -> float:
    """FLOPs per parameter per token of `method` (calc.METHODS): 6 for a full training step,
    4 for a step through frozen base weights (lora, qlora), 2 for a forward pass (inference); see
    FLOPS_PER_PARAM_TOKEN's sources."""
    k = FLOPS_PER_PARAM_TOKEN.get(method) if type(method) is str else None
    if k is None:
        k = FLOPS_PER_PARAM_TOKEN[choice("method", method, tuple(FLOPS_PER_PARAM_TOKEN))]
    return k


# FLOPs per parameter per token (dense part) and per L·d_model·T (attention part), by recompute.
# Forward = 2N and 4·L·d·T; backward = twice the forward (Kaplan §2.1; PaLM App. B).
_DENSE_PER_TOKEN = {"none": TRAIN_FLOPS_PER_PARAM_TOKEN, "selective": TRAIN_FLOPS_PER_PARAM_TOKEN, "op": 7.0,
                    "full": 8.0}
_ATTENTION_PER_TOKEN = {"none": 12.0, "selective": 16.0, "op": 12.0, "full": 16.0}
# The recompute whose rows a name counts: "offload" re-runs the whole forward as "full" does, its layer
# inputs fetched from host memory rather than kept on the device (MaxText's decoder_layer_input=offload
# remat policy; module doc), so it reads full's rows; every other name reads its own.
_FLOPS_AS = {"offload": "full"}


# flat: one numpy-broadcasting argument per TRAIN_FLOPS argument (Excel's flat call)
@broadcasts
def train_flops(params: Any, tokens: Any, *, n_layers: Any = None, d_model: Any = None,
                seq_len: Any = None, recompute: str = "none", active_params: Any = None,
                n_heads: Any = None, head_dim: Any = None, window: Any = None,
                window_layers: Any = None, input_embedding: Any = 0.0) -> np.ndarray | float:
    """FLOPs to train `params` parameters on `tokens` tokens.

    Default 6·params·tokens (Kaplan et al. 2020). Given `n_layers`, `d_model` and `seq_len`
    together, adds PaLM's attention term 12·n_layers·d_model·seq_len per token.
    `recompute`: "none"; "selective" (the attention forward again: 16·L·d·T); "op" (half the
    matmuls again, no attention: 7N + 12·L·d·T); "full"
    (the whole forward again: 8N + 16·L·d·T per token); "offload" (full recompute, layer inputs in
    host memory: full's FLOPs). These are hardware FLOPs; MFU counts
    the "none" figure (PaLM App. B). `active_params`: for a mixture-of-experts model, the
    parameters one token runs through (default `params`); FLOPs follow them, not the total
    (Fedus et al. 2022, "Switch Transformers", arXiv:2101.03961, §2: experts add parameters
    at constant FLOPs per token; DeepSeek-V3, arXiv:2412.19437: 671B total, 37B activated).
    `n_heads` and `head_dim` together give the attention width H·Q (default d_model);
    `window` with `window_layers` (how many layers use a sliding window; default all) counts
    those layers' attention over min(seq_len, window) keys. `input_embedding`: parameters of
    the input table to leave out of the 6N part (MFU convention; module doc), default 0.
    """
    mode = choice("recompute", recompute, RECOMPUTE)
    mode = _FLOPS_AS.get(mode, mode)
    n = positive("params", params)
    if active_params is not None:
        act = positive("active_params", active_params)
        if np.any(np.asarray(act) > n):
            raise TrainingBudgetError(
                f"active_params must be <= params (got active_params={show(active_params)}, params={show(params)})")
        n = act + 0.0 * n
    emb = non_negative("input_embedding", input_embedding)
    if not (type(emb) is float and emb == 0.0):
        if np.any(np.asarray(emb) >= n):
            raise TrainingBudgetError(
                f"input_embedding must be < the parameters counted (got input_embedding={show(input_embedding)})")
        n = n - emb
    d = positive("tokens", tokens)
    shape = (n_layers, d_model, seq_len)
    if all(v is None for v in shape):
        if any(v is not None for v in (n_heads, head_dim, window, window_layers)):
            raise TrainingBudgetError(
                "n_heads, head_dim, window and window_layers need n_layers, d_model and seq_len "
                f"(got n_heads={show(n_heads)}, head_dim={show(head_dim)}, window={show(window)})")
        return dense_flops(n, d, mode)
    if any(v is None for v in shape):
        raise TrainingBudgetError(
            "n_layers, d_model and seq_len go together (got "
            f"n_layers={show(n_layers)}, d_model={show(d_model)}, seq_len={show(seq_len)})")
    per_token = _DENSE_PER_TOKEN[mode] * n + _ATTENTION_PER_TOKEN[mode] * _attention(
        n_layers, d_model, seq_len, n_heads, head_dim, window, window_layers)
    return out_positive(per_token * d, "FLOPs figure")


def dense_flops(params: Any, tokens: Any, recompute: str = "none", per_param_token: float | None = None) -> Any:
    """The dense part on checked numbers: 6 · params · tokens FLOPs (8 under full recompute or offload;
    Kaplan et al. 2020, see the module doc), the formula train_flops and calc.budget share;
    `per_param_token` in place of recompute's factor (calc.budget: flops_per_param_token of the
    job's method, 2 for inference)."""
    k = _DENSE_PER_TOKEN[_FLOPS_AS.get(recompute, recompute)] if per_param_token is None else per_param_token
    per_token = k * params
    return out_positive(times(per_token, tokens, True), "FLOPs figure")  # per_token is a new array (or a float)


def _attention(n_layers: Any, d_model: Any, seq_len: Any, n_heads: Any, head_dim: Any,
               window: Any, window_layers: Any) -> Any:
    """Σ over layers of H·Q·(keys attended): PaLM's L·H·Q·T with sliding-window layers at
    min(T, window)."""
    L = whole("n_layers", n_layers)
    T = whole("seq_len", seq_len)
    if (n_heads is None) != (head_dim is None):
        raise TrainingBudgetError(
            f"n_heads and head_dim go together (got n_heads={show(n_heads)}, head_dim={show(head_dim)})")
    width = (whole("d_model", d_model) if n_heads is None
             else whole("n_heads", n_heads) * whole("head_dim", head_dim) + 0.0 * whole("d_model", d_model))
    if window is None:
        if window_layers is not None:
            raise TrainingBudgetError(f"window_layers needs window (got window_layers={show(window_layers)})")
        return L * width * T
    w = whole("window", window)
    lw = L if window_layers is None else whole("window_layers", window_layers, minimum=0)
    if np.any(np.asarray(lw) > np.asarray(L)):
        raise TrainingBudgetError(
            f"window_layers must be <= n_layers (got window_layers={show(window_layers)}, n_layers={show(n_layers)})")
    return width * ((L - lw) * T + lw * np.minimum(T, w))


# Hoffmann et al. 2022 ("Chinchilla"), arXiv:2203.15556, Table 3 (Approach 1 projections):
# parameters -> compute-optimal training tokens. Tests check the law below against every row.
CHINCHILLA_TABLE_3 = (
    (400e6, 8.0e9), (1e9, 20.2e9), (10e9, 205.1e9), (67e9, 1.5e12), (175e9, 3.7e12),
    (280e9, 5.9e12), (520e9, 11.0e12), (1e12, 21.2e12), (10e12, 216.2e12),
)
# A power law D = D_1B · (N / 1e9)^k through Table 3's 1B and 1T rows: k = log(21.2e12 /
# 20.2e9) / log(1000). Approach 1 finds N_opt ∝ C^0.50 and D_opt ∝ C^0.50 (Table 2), so
# D_opt ∝ N_opt^~1; k = 1.007 is that exponent as Table 3's rows carry it.
CHINCHILLA_TOKENS_AT_1B = 20.2e9
CHINCHILLA_EXPONENT = float(np.log(21.2e12 / 20.2e9) / np.log(1000.0))


@broadcasts
def chinchilla_tokens(params: Any) -> np.ndarray | float:
    """Compute-optimal training tokens for `params` parameters.

    20.2e9 · (params / 1e9)^1.00699, the power law through Hoffmann et al. 2022
    ("Chinchilla"), arXiv:2203.15556, Table 3 (Approach 1): 1B -> 20.2B tokens,
    10B -> 205.3B (table 205.1B), 175B -> 3.67T (3.7T), 1T -> 21.2T; within 1% of every row
    but 67B (1.39T against the table's rounded 1.5T). 20.2 to 21.6 tokens per parameter.
    """
    n = positive("params", params)
    return out(CHINCHILLA_TOKENS_AT_1B * (n / 1e9) ** CHINCHILLA_EXPONENT)
