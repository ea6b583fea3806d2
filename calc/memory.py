"""Training memory in bytes per device: model states by part, and activations.

Sources:
- Rajbhandari et al. 2019, "ZeRO", arXiv:1910.02054, §3.1: mixed-precision Adam keeps
  2 B (16-bit weights) + 2 B (16-bit grads) + 12 B (fp32 master 4, momentum 4, variance 4)
  = 16 B per parameter: the seed's figure. §5 and Figure 1: stage 1 shards optimizer states
  (master included) over N_d devices, stage 2 also gradients, stage 3 also parameters.
- Hugging Face, "Model training anatomy" / "Efficient training on a single GPU"
  (huggingface.co/docs/transformers/perf_train_gpu_one): fp32 gradients give 18 B/param;
  Adafactor keeps "slightly more than 4 bytes" per parameter.
- Dettmers et al. 2021, "8-bit Optimizers via Block-wise Quantization", arXiv:2110.02861: 2 B.
- Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms" (Lion), arXiv:2302.06675:
  one fp32 momentum, 4 B.
- Hu et al. 2021, "LoRA", arXiv:2106.09685: frozen base weights, only adapters train.
- Dettmers et al. 2023, "QLoRA", arXiv:2305.14314, §3: 4-bit NF4 base (0.5 B/param) plus
  double-quantized constants of 0.127 bits per parameter.
- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
  arXiv:2205.05198, Table 2: activation bytes per layer (16-bit activations).
"""

from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .checks import broadcasts, choice, flag, non_negative, out, pick, positive, whole, whole_in

METHODS = ("full", "lora", "qlora", "inference")

# Optimizer state, bytes per trainable parameter, fp32 master copy excluded (sources above).
OPTIMIZER_BYTES = {
    "adamw": 8.0,         # m and v in fp32 (ZeRO §3.1)
    "adamw_8bit": 2.0,    # m and v in 8 bits (Dettmers et al. 2021)
    "adafactor": 4.0,     # factored second moment, "slightly more than 4 bytes" (HF docs)
    "lion": 4.0,          # one fp32 momentum (Chen et al. 2023)
    "sgd_momentum": 4.0,  # one fp32 momentum buffer
    "sgd": 0.0,           # no state
}
OPTIMIZERS = tuple(OPTIMIZER_BYTES)

WEIGHT_BYTES = 2.0   # bf16/fp16 weights (ZeRO §3.1)
GRAD_BYTES = 2.0     # bf16/fp16 gradients (ZeRO §3.1); 4 for fp32 gradients (HF: 18 B/param)
MASTER_BYTES = 4.0   # fp32 master copy of the trainable weights (ZeRO §3.1)
QLORA_BASE_BYTES = 0.5 + 0.127 / 8  # NF4 4-bit + double-quantized constants (QLoRA §3)
LORA_TRAINABLE = 0.01  # default adapter share: LoRA r=16 on every linear layer of a 7B model
#                        is ~40M parameters (0.6%); 1% is a round, slightly cautious figure.
ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per device by part (floats, or arrays when inputs were arrays); GB = 1e9 bytes."""

    weights: Any
    gradients: Any
    optimizer: Any
    master: Any
    activations: Any
    total: Any

    def as_dict(self) -> dict[str, Any]:
        """The parts and total, bytes per device, in a stable order."""
        return asdict(self)


def _trainable(method: str, n: np.ndarray, trainable: Any) -> np.ndarray:
    """Trainable parameter count: all of them for full, adapters for (q)lora, none for inference."""
    if method == "full":
        return n
    if method == "inference":
        return 0.0 * n
    t = positive("trainable", LORA_TRAINABLE if trainable is None else trainable)
    return pick(t <= 1.0, t * n, t)


def _zero_divisors(zero_stage: Any, devices: Any) -> tuple[np.ndarray, ...]:
    """Divisors of (weights, gradients, optimizer + master) under ZeRO `zero_stage` (ZeRO §5)."""
    stage = whole_in("zero_stage", zero_stage, ZERO_STAGES)
    n_d = whole("devices", devices)
    return tuple(pick(stage >= k, n_d, 1.0) for k in (3, 2, 1))


@broadcasts
def train_memory(params: Any, *, method: str = "full", optimizer: str = "adamw",
                 trainable: Any = None, grad_bytes: Any = GRAD_BYTES, master: bool = True,
                 zero_stage: Any = 0, devices: Any = 1, activations: Any = 0.0) -> MemoryBreakdown:
    """Bytes per device for weights, gradients, optimizer state, master copy and activations.

    Defaults give the seed's 16 B/param: bf16 weights 2 + bf16 grads 2 + fp32 Adam m, v 8 +
    fp32 master 4 (ZeRO §3.1). `method`: full | lora | qlora | inference (weights only).
    `trainable`: adapter parameters for lora/qlora, a count (> 1) or a fraction of `params`
    (<= 1; default 1%). `grad_bytes` 4 gives fp32 gradients (18 B/param). `zero_stage` 0-3
    shards states over `devices` (ZeRO §5). `activations`: bytes per device (see
    `activation_bytes`).
    """
    kind = choice("method", method, METHODS)
    opt = choice("optimizer", optimizer, OPTIMIZERS)
    n = positive("params", params)
    grad = positive("grad_bytes", grad_bytes)
    act = non_negative("activations", activations)
    master = flag("master", master)
    t = _trainable(kind, n, trainable)
    base = QLORA_BASE_BYTES if kind == "qlora" else WEIGHT_BYTES
    weights = base * n + (WEIGHT_BYTES * t if kind in ("lora", "qlora") else 0.0)
    w_div, g_div, o_div = _zero_divisors(zero_stage, devices)
    parts = {
        "weights": weights / w_div,
        "gradients": grad * t / g_div,
        "optimizer": OPTIMIZER_BYTES[opt] * t / o_div,
        "master": (MASTER_BYTES if master else 0.0) * t / o_div,
    }
    parts["activations"] = act + 0.0 * n  # broadcast to the common shape
    total = sum(parts.values())
    return MemoryBreakdown(**{k: out(v) for k, v in parts.items()}, total=out(total))


def train_bytes(params: Any, **options: Any) -> np.ndarray | float:
    """Total bytes per device; the options are those of `train_memory`. 7e9 params -> 1.12e11."""
    return train_memory(params, **options).total


# train_bytes takes exactly train_memory's arguments: say so to inspect (and to the Excel registry).
train_bytes.__signature__ = inspect.signature(train_memory).replace(  # type: ignore[attr-defined]
    return_annotation="np.ndarray | float")


@broadcasts
def activation_bytes(n_layers: Any, d_model: Any, n_heads: Any, seq_len: Any, micro_batch: Any,
                     *, recompute: str = "none", tensor_parallel: Any = 1,
                     sequence_parallel: bool = False, flash_attention: bool = False
                     ) -> np.ndarray | float:
    """Activation bytes per device for a transformer's layers, 16-bit activations.

    Korthikanti et al. 2022, Table 2, per layer (s seq_len, b micro_batch, h d_model,
    a n_heads, t tensor_parallel): none: s·b·h·(10 + 24/t + 5·a·s/(h·t)), with sequence
    parallel s·b·h·(34/t + 5·a·s/(h·t)); "selective" drops the 5·a·s/(h·t) attention term;
    "full" keeps only each layer's input, 2·s·b·h. `flash_attention` also drops that term
    (FlashAttention never stores the a·s² scores). Embeddings and the output layer are
    not counted.
    """
    mode = choice("recompute", recompute, ("none", "selective", "full"))
    L = whole("n_layers", n_layers)
    h = whole("d_model", d_model)
    a = whole("n_heads", n_heads)
    s = whole("seq_len", seq_len)
    b = whole("micro_batch", micro_batch)
    t = whole("tensor_parallel", tensor_parallel)
    sequence_parallel = flag("sequence_parallel", sequence_parallel)
    flash_attention = flag("flash_attention", flash_attention)
    sbh = s * b * h
    if mode == "full":
        per_layer = 2.0 * sbh
    else:
        dense = 34.0 / t if sequence_parallel else 10.0 + 24.0 / t
        scores = 0.0 if (mode == "selective" or flash_attention) else 5.0 * a * s / (h * t)
        per_layer = sbh * (dense + scores)
    return out(L * per_layer)
