"""Training compute in FLOPs.

Sources:
- Kaplan et al. 2020, "Scaling Laws for Neural Language Models", arXiv:2001.08361, §2.1:
  C ≈ 6·N·D, a forward pass of 2N and a backward pass of 4N FLOPs per token. The seed uses it.
- Chowdhery et al. 2022, "PaLM", arXiv:2204.02311, Appendix B: model FLOPs per token
  6N + 12·L·H·Q·T, the second term being attention (H·Q = d_model, T = sequence length).
- Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
  Using Megatron-LM", arXiv:2104.04473, §5.1: full activation recomputation runs the forward
  pass twice, 8N per token (and the attention term grows likewise, 16·L·d_model·T).
- Korthikanti et al. 2022, arXiv:2205.05198, §5: selective recomputation re-runs only the
  attention core, so only the attention term gets the extra forward pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .checks import TrainingBudgetError, broadcasts, choice, out, positive, whole

RECOMPUTE = ("none", "selective", "full")

# FLOPs per parameter per token (dense part) and per L·d_model·T (attention part), by recompute.
# Forward = 2N and 4·L·d·T; backward = twice the forward (Kaplan §2.1; PaLM App. B).
_DENSE_PER_TOKEN = {"none": 6.0, "selective": 6.0, "full": 8.0}
_ATTENTION_PER_TOKEN = {"none": 12.0, "selective": 16.0, "full": 16.0}


@broadcasts
def train_flops(params: Any, tokens: Any, *, n_layers: Any = None, d_model: Any = None,
                seq_len: Any = None, recompute: str = "none") -> np.ndarray | float:
    """FLOPs to train `params` parameters on `tokens` tokens.

    Default 6·params·tokens (Kaplan et al. 2020). Given `n_layers`, `d_model` and `seq_len`
    together, adds PaLM's attention term 12·n_layers·d_model·seq_len per token.
    `recompute`: "none"; "selective" (the attention forward again: 16·L·d·T); "full"
    (the whole forward again: 8N + 16·L·d·T per token). These are hardware FLOPs; MFU counts
    the "none" figure (PaLM App. B).
    """
    mode = choice("recompute", recompute, RECOMPUTE)
    n = positive("params", params)
    d = positive("tokens", tokens)
    per_token = _DENSE_PER_TOKEN[mode] * n
    shape = (n_layers, d_model, seq_len)
    if any(v is not None for v in shape):
        if any(v is None for v in shape):
            raise TrainingBudgetError(
                "n_layers, d_model and seq_len go together (got "
                f"n_layers={n_layers!r}, d_model={d_model!r}, seq_len={seq_len!r})")
        attention = (whole("n_layers", n_layers) * whole("d_model", d_model)
                     * whole("seq_len", seq_len))
        per_token = per_token + _ATTENTION_PER_TOKEN[mode] * attention
    return out(per_token * d)


@broadcasts
def chinchilla_tokens(params: Any) -> np.ndarray | float:
    """Compute-optimal training tokens for `params` parameters: about 20 tokens per parameter.

    Hoffmann et al. 2022 ("Chinchilla"), arXiv:2203.15556, Table 3 (1B params -> 20.2B tokens,
    10B -> 205.1B); the paper gives the table, the ratio of 20 is read off it.
    """
    return out(TOKENS_PER_PARAM_CHINCHILLA * positive("params", params))


TOKENS_PER_PARAM_CHINCHILLA = 20.0  # Hoffmann et al. 2022, Table 3 (see chinchilla_tokens)
