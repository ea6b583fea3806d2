"""What calc.fit_layouts searches: `Search`, the frozen options of a layout search (sequence length,
global batch, the sizes searched or fixed, the training method and the memory), each checked once
where a Search is made, and the search's bounds. Units: tokens, sequences, bytes per element, GiB."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..base.checks import choice, flag, positive, whole
from ..base.errors import TrainingBudgetError, show
from .memory import METHODS, OPTIMIZERS, ZERO_STAGES
from .recompute import RECOMPUTE_ORDER

MAX_FIT_DEVICES = 2 ** 22   # 4.2M devices: above any job; keeps the divisor search bounded
MICRO_BATCHES = (1, 2, 4)
MIN_CONTEXT_CHUNK = 1024  # tokens per context-parallel rank when context_parallel is searched
# The default global batch of the fit and plan commands: 1,024 sequences of 4,096 tokens (4,194,304
# tokens), Llama 2's batch at every size from 7B to 70B (Touvron et al. 2023, arXiv:2307.09288 §2.2:
# "a global batch-size of 4M tokens", context 4,096) and Llama 3 405B's first stage (Llama Team 2024,
# arXiv:2407.21783 §3.4.1: 4M tokens at 4,096, then 8M at 8,192, then 16M tokens).
DEFAULT_GLOBAL_BATCH = 1024
DEFAULT_SEQ_LEN = 4096

# Context parallelism runs in fused attention kernels only: Transformer Engine's backend choice turns
# UnfusedDotProductAttention off under it ("Disabling UnfusedDotProductAttention as it does not
# support context parallelism", transformer_engine/pytorch/attention/dot_product_attention/utils.py,
# get_attention_backend), and PyTorch's context_parallel takes SDPA's fused kernels (torchtitan).
UNFUSED_CP = "no unfused attention backend runs context parallelism (Transformer Engine turns it off under CP)"



def count(name: str, value: Any, limit: int = MAX_FIT_DEVICES) -> int:
    """`value` as one whole number >= 1 and <= limit; the message names `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TrainingBudgetError(f"{name} must be one whole number (got {show(value)})")
    v = whole(name, float(value) if abs(value) < 1e300 else value)
    if v > limit:
        raise TrainingBudgetError(f"{name} must be at most {limit:,} (got {show(value)})")
    return int(v)


def options(name: str, value: Any, default: tuple, allowed: tuple | None = None) -> tuple:
    """`value` (one or several) as a non-empty tuple, each checked; None gives `default`."""
    items = default if value is None else (tuple(value) if isinstance(value, (list, tuple)) else (value,))
    if not items:
        raise TrainingBudgetError(f"{name} must name at least one value (got {show(value)})")
    if allowed is not None:
        if all(isinstance(v, str) for v in items) and all(isinstance(a, str) for a in allowed):
            return tuple(dict.fromkeys(choice(name, v, allowed) for v in items))
        ok = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v in allowed for v in items)
        if not ok:
            raise TrainingBudgetError(f"{name} must be among {', '.join(map(str, allowed))} (got {show(value)})")
        return tuple(dict.fromkeys(int(v) for v in items))
    return tuple(dict.fromkeys(count(name, v) for v in items))


def _frozen(value: Any) -> Any:
    """A list given for a searched size as a tuple, so a Search hashes (a cache key)."""
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Search:
    """The options of one layout search (calc.fit_layouts), checked when made.

    `seq_len` tokens; `global_batch` sequences per optimizer step (None: not constrained).
    Searched unless fixed: `micro_batch` (default 1, 2, 4), `recompute` (default none, op, full and
    offload, offload listed only where full does not fit; with FlashAttention "selective" stores the
    same bytes as "none", so it is searched only without it or when asked), `context_parallel`
    (default: divisors of the devices up to 64 that leave >= 1,024 tokens per rank), `zero_stages`
    (default 0-3). `optimizer`, `grad_bytes` (4: fp32 main gradients, Megatron/NeMo
    grad_reduce_in_fp32; 2 for bf16), `method` (full, lora, qlora), `trainable`
    (adapter parameters, a count or a share; checked against the model in fit_layouts), `loss`
    (calc.physics.activations), `sequence_parallel`, `flash_attention`, `zero3_buffers`. Memory: the
    device's (or `memory_gib` GiB) less `reserve_gib` (calc/hardware/capacity.py's rule when None).
    `explain` False: no nearest miss nor devices_to_fit when nothing fits. The checked forms:
    `stages`, `modes`, `batches`, `contexts` (None: searched)."""

    seq_len: Any = DEFAULT_SEQ_LEN
    global_batch: Any = None
    micro_batch: Any = None
    recompute: Any = None
    context_parallel: Any = None
    zero_stages: Any = ZERO_STAGES
    sequence_parallel: bool = True
    flash_attention: bool = True
    optimizer: str = "adamw"
    grad_bytes: Any = 4.0
    zero3_buffers: bool = True
    memory_gib: Any = None
    reserve_gib: Any = None
    method: str = "full"
    trainable: Any = None
    loss: str = "standard"
    explain: bool = True
    checked: dict[str, Any] = field(default=None, init=False, repr=False, compare=False, hash=False)  # type: ignore

    def __post_init__(self) -> None:
        for name in ("micro_batch", "recompute", "context_parallel", "zero_stages"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        seq = count("seq_len", self.seq_len, limit=2 ** 30)
        batch = None if self.global_batch is None else count("global_batch", self.global_batch, limit=2 ** 40)
        choice("optimizer", self.optimizer, OPTIMIZERS)
        positive("grad_bytes", self.grad_bytes)
        choice("method", self.method, METHODS[:3])
        stages = options("zero_stages", self.zero_stages, ZERO_STAGES, ZERO_STAGES)
        # with FlashAttention "selective" stores what "none" does (no scores): search it only if asked
        searched = (("none", "op", "full", "offload") if flag("flash_attention", self.flash_attention)
                    else RECOMPUTE_ORDER)
        modes = options("recompute", self.recompute, searched, RECOMPUTE_ORDER)
        batches = options("micro_batch", self.micro_batch, MICRO_BATCHES)
        contexts = None if self.context_parallel is None else options("context_parallel", self.context_parallel, (1,))
        if not flag("flash_attention", self.flash_attention):  # unfused attention runs no context parallel
            if contexts is not None and max(contexts) > 1:
                raise TrainingBudgetError(f"context_parallel must be 1 with flash_attention False (got "
                                          f"{show(self.context_parallel)}): {UNFUSED_CP}", "context_parallel")
            contexts = (1,)
        object.__setattr__(self, "checked", {"seq": seq, "batch": batch, "stages": stages, "modes": modes,
                                             "batches": batches, "contexts": contexts})

    def with_(self, **changes: Any) -> Search:
        """A copy with `changes`, checked again."""
        return replace(self, **changes)

    @property
    def seq(self) -> int:
        """The sequence length, checked (tokens)."""
        return self.checked["seq"]

    @property
    def batch(self) -> int | None:
        """The global batch, checked (sequences; None: not constrained)."""
        return self.checked["batch"]
