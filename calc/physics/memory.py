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
- Activations: `calc.activation_bytes` (Korthikanti et al. 2022, arXiv:2205.05198,
  Table 2, from named parts; re-exported here).
"""

from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np

from ..base.arith import over, plus, shard, sum_into, times
from ..base.checks import choice, flag, non_negative, positive, whole, whole_in
from ..base.errors import TrainingBudgetError, agree, broadcasts, out, pick, show
from ..base.fastinit import fast_init
from .activations import RECOMPUTE, activation_bytes
from .layout import check_parts, checked_layout

METHODS = ("full", "lora", "qlora", "inference")
ADAPTER_METHODS = ("lora", "qlora")  # the methods that train adapters over frozen weights (--trainable)

# Optimizer state, bytes per trainable parameter, fp32 master copy excluded (sources above).
OPTIMIZER_BYTES = {
    "adamw": 8.0,         # m and v in fp32 (ZeRO §3.1)
    "adamw_bf16": 4.0,    # m and v in bf16 (DeepSeek-V3, arXiv:2412.19437, §3.3.3); the fp32
    #                       master copy and fp32 gradients stay (same section)
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
# DeepSpeed ZeRO-3 defaults, in parameters (elements), not bytes: DeepSpeedZeroConfig in
# github.com/deepspeedai/DeepSpeed deepspeed/runtime/zero/config.py (read at commit 1b88ac3;
# the same fields as deepspeed.ai/docs/config-json/, "ZeRO optimizations").
ZERO3_MAX_LIVE_PARAMETERS = 1e9   # stage3_max_live_parameters
ZERO3_PREFETCH_BUCKET_SIZE = 5e7  # stage3_prefetch_bucket_size
ZERO3_REDUCE_BUCKET_SIZE = 5e8    # reduce_bucket_size


@fast_init
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


def _minimum(a: Any, b: Any) -> Any:
    return min(a, b) if type(a) is float and type(b) is float else np.minimum(a, b)


def _float(value: Any) -> Any:
    """A checked number (int or float) as a float, an array as a float64 array."""
    return float(value) if type(value) in (int, float) else np.asarray(value, float)


def check_trainable(trainable: Any, params: Any) -> Any:
    """`trainable` checked against `params`: a share of them in (0, 1] (0.01: 1%), or a whole count
    of adapter parameters > 1 and at most `params` (1.5 is neither; 100B adapters on a 70B model
    are refused). Returns the checked value (a float or float64 array)."""
    t = positive("trainable", trainable)
    if type(t) is float and type(params) is float:
        if t <= 1.0 or (t.is_integer() and t <= params):
            return t
        bad_t, bad_n = t, params
    else:
        tt, nn = np.broadcast_arrays(np.asarray(t, np.float64), np.asarray(params, np.float64))
        bad = (tt > 1.0) & ((tt != np.floor(tt)) | (tt > nn))
        if not bad.any():
            return t
        i = np.unravel_index(int(np.argmax(bad)), tt.shape)
        bad_t, bad_n = float(tt[i]), float(nn[i])
    if not bad_t.is_integer():
        raise TrainingBudgetError(f"trainable must be a share of the parameters in (0, 1] (0.01 for 1%) or a whole "
                                  f"count of adapter parameters (got {show(bad_t)})")
    raise TrainingBudgetError(f"trainable must be at most params: adapters cannot hold more parameters than the "
                              f"model (got trainable {show(bad_t)}, params {show(bad_n)})")


def _trainable(method: str, n: np.ndarray, trainable: Any) -> np.ndarray:
    """Trainable parameter count: all of them for full, adapters for (q)lora, none for inference."""
    if method == "full":
        return n
    if method == "inference":
        return 0.0 * n
    t = positive("trainable", LORA_TRAINABLE if trainable is None else trainable)
    return pick(t <= 1.0, t * n, t)


def _zero_stage(zero_stage: Any) -> np.ndarray:
    return whole_in("zero_stage", zero_stage, ZERO_STAGES)


def zero3_buffer_bytes(params_per_device: Any, grad_bytes: Any = GRAD_BYTES,
                       max_live_parameters: float = ZERO3_MAX_LIVE_PARAMETERS,
                       prefetch_bucket_size: float = ZERO3_PREFETCH_BUCKET_SIZE,
                       reduce_bucket_size: float = ZERO3_REDUCE_BUCKET_SIZE) -> np.ndarray:
    """ZeRO-3 working buffers, bytes: gathered 16-bit parameters (at most max_live_parameters,
    at most the replica's parameters), the prefetch bucket (16-bit) and the gradient reduce
    bucket (grad_bytes each). DeepSpeed defaults (DeepSpeedZeroConfig, see the constants):
    stage3_max_live_parameters 1e9, stage3_prefetch_bucket_size 5e7, reduce_bucket_size 5e8."""
    live = _minimum(max_live_parameters, params_per_device)
    return (WEIGHT_BYTES * (live + _minimum(prefetch_bucket_size, params_per_device))
            + _float(grad_bytes) * _minimum(reduce_bucket_size, params_per_device))


_AGREE = ("params", "trainable", "grad_bytes", "zero_stage", "devices", "activations", "tensor_parallel",
          "pipeline_parallel", "expert_parallel", "context_parallel", "expert_params", "stage_params", "vocab",
          "micro_batches")  # train_memory's numeric arguments, in agree()'s order


# flat: one numpy-broadcasting argument per TRAIN_BYTES / TRAIN_LAYOUT_BYTES argument (Excel's flat call)
@broadcasts
def train_memory(params: Any, *, method: str = "full", optimizer: str = "adamw",
                 trainable: Any = None, grad_bytes: Any = GRAD_BYTES, master: bool = True,
                 zero_stage: Any = 0, devices: Any = 1, activations: Any = 0.0,
                 tensor_parallel: Any = 1, pipeline_parallel: Any = 1, expert_parallel: Any = 1,
                 context_parallel: Any = 1, expert_params: Any = 0.0, stage_params: Any = 0.0,
                 zero3_buffers: bool = False, sequence_parallel: bool = False,
                 n_layers: Any = None, d_model: Any = None, n_heads: Any = None,
                 seq_len: Any = None, micro_batch: Any = None, recompute: str = "none",
                 flash_attention: bool = False, vocab: Any = None,
                 micro_batches: Any = None) -> MemoryBreakdown:
    """Bytes per device for weights, gradients, optimizer state, master copy and activations.

    Defaults give the seed's 16 B/param: bf16 weights 2 + bf16 grads 2 + fp32 Adam m, v 8 +
    fp32 master 4 (ZeRO §3.1). `method`: full | lora | qlora | inference (weights only).
    `trainable`: adapter parameters for lora/qlora, a count (> 1) or a fraction of `params`
    (<= 1; default 1%). `grad_bytes` 4 gives fp32 gradients: 18 B/param, the convention of
    many frameworks (Megatron's fp32 main grads, DeepSpeed's estimators, llm-analysis).
    `optimizer` "adamw_bf16": bf16 moments, 4 B (DeepSeek-V3, arXiv:2412.19437, §3.3.3).

    Layout: `devices` is the whole job; data parallel = devices / (tensor_parallel ·
    pipeline_parallel · context_parallel) (see `layout_data_parallel`). Parameters split over
    tensor · pipeline ranks; of them `expert_params` (routed experts, the total count of a
    mixture-of-experts model) also over `expert_parallel`; `stage_params` (e.g. the input
    embedding, which Megatron keeps whole on the first pipeline stage; Narayanan et al. 2021,
    arXiv:2104.04473, §2.2) are not split over pipeline stages, so the first stage is counted.
    `zero_stage` 0-3 shards states over data parallel (expert states over data / expert;
    ZeRO §5). `zero3_buffers` adds DeepSpeed's ZeRO-3 working buffers (`zero3_buffer_bytes`).
    `activations`: bytes per device (see `activation_bytes`); or give the activation shape
    (`n_layers`, `d_model`, `n_heads`, `seq_len`, `micro_batch`, with `recompute`,
    `flash_attention`, `vocab`, `micro_batches`) and they come from `activation_bytes` on this
    layout's tensor, pipeline, context and `sequence_parallel` settings (not both). Without the
    shape those options are checked, not used; so is `trainable` for full and inference.
    """
    kind = choice("method", method, METHODS)
    opt = choice("optimizer", optimizer, OPTIMIZERS)
    n = positive("params", params)
    grad = positive("grad_bytes", grad_bytes)
    if trainable is not None:  # used by lora and qlora only; checked whatever the method
        check_trainable(trainable, n)
    shape = {"n_layers": n_layers, "d_model": d_model, "n_heads": n_heads, "seq_len": seq_len,
             "micro_batch": micro_batch}
    activations = _activations(activations, shape, recompute=recompute, tensor_parallel=tensor_parallel,
                               sequence_parallel=sequence_parallel, flash_attention=flash_attention,
                               pipeline_parallel=pipeline_parallel, context_parallel=context_parallel,
                               vocab=vocab, micro_batches=micro_batches)
    act = non_negative("activations", activations)
    master = flag("master", master)
    zero3_buffers = flag("zero3_buffers", zero3_buffers)
    exp = non_negative("expert_params", expert_params)
    stage_p = non_negative("stage_params", stage_params)
    check_parts(exp, stage_p, n)
    _, t, p, c, e, dp = checked_layout(devices, tensor_parallel, pipeline_parallel, context_parallel,
                                       expert_parallel)
    agree(_AGREE, (params, trainable, grad_bytes, zero_stage, devices, activations, tensor_parallel,
                   pipeline_parallel, expert_parallel, context_parallel, expert_params, stage_params, vocab,
                   micro_batches))
    return memory_parts(Counts(n, exp, stage_p), States(kind, opt, trainable, grad, master, act, zero3_buffers),
                        Shards(dp * c, t, p, e, _zero_stage(zero_stage)))


class Counts(NamedTuple):
    """Parameters (counts): `n` all, `exp` the routed experts (split over expert parallel too),
    `stage_p` those kept whole on the first pipeline stage (the input embedding)."""

    n: Any
    exp: Any = 0.0
    stage_p: Any = 0.0


class States(NamedTuple):
    """What each parameter keeps: `kind` the method, `opt` the optimizer, `trainable` adapters,
    `grad` gradient bytes, `master` a 4-byte master copy, `act` activation bytes per device,
    `zero3_buffers` DeepSpeed's ZeRO-3 working buffers."""

    kind: str
    opt: str
    trainable: Any = None
    grad: Any = GRAD_BYTES
    master: bool = True
    act: Any = 0.0
    zero3_buffers: bool = False


class Shards(NamedTuple):
    """How the states are split: `dp` the ranks ZeRO shards over, data x context parallel (they hold the
    same weights: Megatron-Core's distributed optimizer shards over the data-parallel group with its
    context-parallel ranks, parallel_state's get_data_parallel_group(with_context_parallel=True)), `t`, `p`,
    `e` tensor, pipeline and expert
    parallel, `stage` the ZeRO stage (0-3)."""

    dp: Any
    t: Any = 1.0
    p: Any = 1.0
    e: Any = 1.0
    stage: Any = 0.0


def memory_parts(counts: Counts, states: States, shards: Shards) -> MemoryBreakdown:
    """train_memory's formulas on checked values (train_memory's checks, or calc.budget's): bytes
    per device by part."""
    n, exp, stage_p = counts
    kind, opt, trainable, grad, master, act, zero3_buffers = states
    dp, t, p, e, stage = shards
    plain = type(exp) is float and exp == 0.0 and type(stage_p) is float and stage_p == 0.0
    # per device, sharded over dp by ZeRO ((n - 0 - 0) / p + 0 is n / p exactly: no passes for zeros)
    dense = over(over(n, p), t) if plain else ((n - exp - stage_p) / p + stage_p) / t
    expert = 0.0 if plain and exp == 0.0 else exp / (t * p * e)  # per device, sharded over dp / e
    share = _share(kind, n, trainable)                  # trainable fraction
    on3, on2, on1 = stage >= 3, stage >= 2, stage >= 1
    w3, g2, o1 = shard(dense, on3, dp), shard(dense, on2, dp), shard(dense, on1, dp)
    if not (type(expert) is float and expert == 0.0):
        w3, g2, o1 = (w3 + shard(expert, on3, dp / e), g2 + shard(expert, on2, dp / e),
                      o1 + shard(expert, on1, dp / e))
    base = QLORA_BASE_BYTES if kind == "qlora" else WEIGHT_BYTES
    adapters = WEIGHT_BYTES * share if kind in ADAPTER_METHODS else 0.0
    weights = times(w3, base + adapters, w3 is not dense and w3 is not n)
    if zero3_buffers:
        weights = weights + pick(stage >= 3, zero3_buffer_bytes(dense + expert, grad), 0.0)
    gradients = times(g2, grad * share, g2 is not dense and g2 is not n)
    optimizer_bytes = OPTIMIZER_BYTES[opt] * share * o1
    master_bytes = times(o1, (MASTER_BYTES if master else 0.0) * share, o1 is not dense and o1 is not n)
    activations = _spread(act, n)  # broadcast to the common shape
    if type(weights) is float and type(gradients) is float and type(o1) is float and type(activations) is float:
        return MemoryBreakdown(weights, gradients, optimizer_bytes, master_bytes, activations,
                               out(weights + gradients + optimizer_bytes + master_bytes + activations))
    total = sum_into(dense if dense is not n else None, weights, gradients)  # dense is spent: reuse it
    # a float act adds as the broadcast part does, and 0.0 adds nothing (plus skips it): no pass over zeros
    total = plus(plus(plus(total, optimizer_bytes, True), master_bytes, True),
                 act if type(act) is float else activations, True)
    # Every part is >= 0 and they sum to the total: a finite total means finite parts.
    return MemoryBreakdown(_kept(weights), _kept(gradients), _kept(optimizer_bytes), _kept(master_bytes),
                           _kept(activations), out(total))


def trainable_share(method: str, params: Any, trainable: Any = None) -> Any:
    """The share of `params` that trains under `method` (checked): 1 for full, the adapters' share for
    lora and qlora (`trainable` a share or a count; None: LORA_TRAINABLE), 0 for inference."""
    kind = choice("method", method, METHODS)
    if trainable is not None:
        check_trainable(trainable, params)
    return _share(kind, params, trainable)


def _share(kind: str, n: Any, trainable: Any) -> Any:
    """The trainable fraction: _trainable / n, which is exactly 1 for full and 0 for inference."""
    if kind == "full":
        return 1.0
    if kind == "inference":
        return 0.0
    return _trainable(kind, n, trainable) / n


def _spread(act: Any, n: Any) -> Any:
    """act + 0.0 · n: `act` at the shape of act and n together (a read-only view, not a copy)."""
    if type(act) is float and type(n) is float:
        return act
    shape = np.broadcast_shapes(np.shape(act), np.shape(n))
    return out(act) if shape == () else np.broadcast_to(np.asarray(act, dtype=np.float64), shape)


def _kept(x: Any) -> Any:
    """A part as a result (a float, or an array), checked through the total."""
    return x if type(x) is float or (isinstance(x, np.ndarray) and x.ndim) else out(x)


def _activations(activations: Any, shape: dict[str, Any], **options: Any) -> Any:
    """`activations` as given when no activation shape is (its options then checked, not used),
    else activation_bytes on the shape and layout."""
    if any(v is not None for v in shape.values()):
        return _shape_activations(activations, shape, **options)
    flag("sequence_parallel", options["sequence_parallel"])
    flag("flash_attention", options["flash_attention"])
    choice("recompute", options["recompute"], RECOMPUTE)
    for name in ("vocab", "micro_batches"):
        if options[name] is not None:
            whole(name, options[name])
    return activations


def _shape_activations(activations: Any, shape: dict[str, Any], **options: Any) -> Any:
    """Activation bytes from the shape on the layout; refuses `activations` given as well."""
    if np.any(np.asarray(activations) != 0):
        raise TrainingBudgetError(
            "give either activations (bytes) or the activation shape (n_layers, d_model, "
            f"n_heads, seq_len, micro_batch), not both (got activations={show(activations)})")
    missing = [k for k, v in shape.items() if v is None]
    if missing:
        raise TrainingBudgetError(
            f"the activation shape needs {', '.join(missing)} too (got "
            + ", ".join(f"{k}={show(v)}" for k, v in shape.items() if v is not None) + ")")
    return activation_bytes(*shape.values(), **options)


def train_bytes(params: Any, **options: Any) -> np.ndarray | float:
    """Total bytes per device; the options are those of `train_memory`. 7e9 params -> 1.12e11."""
    return train_memory(params, **options).total


# train_bytes takes exactly train_memory's arguments: say so to inspect (and to the Excel registry).
train_bytes.__signature__ = inspect.signature(train_memory).replace(  # type: ignore[attr-defined]
    return_annotation="np.ndarray | float")
