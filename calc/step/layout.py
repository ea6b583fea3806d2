"""The layout part: how a job's devices split the model and the batch (all degrees broadcast).

Identity (Narayanan et al. 2021, arXiv:2104.04473 s.2; Korthikanti et al. 2022 s.4):
devices = tp x pp x cp x dp, expert parallelism lives inside dp x cp (ep divides it, as in fit), and the global
batch gives every data-parallel rank B / (s x dp) sequences, cut into micro-batches of `micro_batch`
sequences: m = B / (s x dp x b) per step (a pipeline needs m >= 1; a context-parallel group shares
its sequences, so CP does not multiply the sequences needed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import checks
from ..base.checks import whole, whole_in
from ..base.errors import TrainingBudgetError, show
from ..base.fastinit import fast_init
from ..physics.fit_search import UNFUSED_CP
from ..physics.recompute import RECOMPUTE_ORDER, TIMED_AS

RECOMPUTE = ("none", "selective", "full")  # the step's timings (codes 0/1/2), Korthikanti et al. 2022 s.5
# Every recompute name a layout takes (fit's, calc.physics.recompute.RECOMPUTE_ORDER), each timed as
# TIMED_AS says: torchtitan's op-level policy "op" as selective, host "offload" as full
NAMES = RECOMPUTE_ORDER
CODES = {name: float(RECOMPUTE.index(TIMED_AS[name])) for name in NAMES}  # name -> timing code


def flag(value: Any) -> Any:
    """flash_attention as a bool (calc.base.checks.flag's words for one), or an array of bools (True or
    False, 1 or 0, each element)."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        numeric = arr.dtype.kind in "iuf" and not isinstance(value, bool) and float(arr) in (0.0, 1.0)
        return bool(float(arr)) if numeric else checks.flag("flash_attention", value)
    if not (arr.dtype.kind == "b" or (arr.dtype.kind in "iuf" and np.all((arr == 0) | (arr == 1)))):
        raise TrainingBudgetError(f"flash_attention must be True or False, each element (got {show(value)})",
                                  "flash_attention")
    return arr.astype(bool)


def _refuse(value: Any, words: str = "") -> TrainingBudgetError:
    return TrainingBudgetError(f"recompute must be one of {', '.join(NAMES)}{words} (got {show(value)})", "recompute")


def _codes(value: Any) -> Any:
    """Recompute as codes 0/1/2 (timed as none/selective/full): a name, or an array of names or codes."""
    if isinstance(value, str):
        code = CODES.get(value.strip().lower())
        if code is None:
            raise _refuse(value)
        return code
    arr = np.asarray(value)
    if arr.dtype.kind == "b":  # True is no recomputation mode (it read as code 1, selective)
        raise _refuse(value, ", not a boolean")
    if arr.dtype.kind in "USO":
        texts = arr.reshape(-1)
        odd = [v for v in texts if not isinstance(v, (str, np.str_))]
        if odd:  # None or a number among names: no name
            raise _refuse(odd[0])
        flat = [str(v).strip().lower() for v in texts]
        bad = [v for v in flat if v not in CODES]
        if bad:
            raise _refuse(bad[0])
        return np.array([CODES[v] for v in flat], dtype=np.float64).reshape(arr.shape)
    return whole_in("recompute", value if arr.ndim else float(arr), (0, 1, 2))


@fast_init  # calc/base/fastinit.py: fields filled straight into __dict__, then __post_init__
@dataclass(frozen=True)
class Layout:
    """A parallel layout and its batch; every field a scalar or a broadcasting array.

    devices: all devices of the job; tp, pp, vpp, cp, ep: tensor, pipeline, virtual (interleaved)
    stages per device, context and expert parallel degrees; zero_stage 0-3 (3 = FSDP);
    micro_batch in sequences; seq_len in tokens; global_batch_tokens per optimizer step;
    recompute 'none', 'selective', 'op', 'full' or 'offload' (NAMES; stored as the codes 0/1/2 of
    the timing each runs at, none/selective/full); flash_attention: attention in a fused kernel
    (FlashAttention, cuDNN) or, False, unfused (terms.unfused_attention_seconds). dp = devices / (tp x pp x cp).
    """

    devices: Any
    seq_len: Any
    global_batch_tokens: Any
    tp: Any = 1.0
    pp: Any = 1.0
    vpp: Any = 1.0
    cp: Any = 1.0
    ep: Any = 1.0
    zero_stage: Any = 1.0
    micro_batch: Any = 1.0
    recompute: Any = "selective"
    flash_attention: Any = True

    def __post_init__(self) -> None:
        put = object.__setattr__
        d = self.__dict__
        plain = _plain(d)
        if plain is not None and type(d["flash_attention"]) is bool:
            d.update(zip(_NUMBERS, plain, strict=True))  # into __dict__, as fast_init fills it: set once, here
            if self._scalar_ok():
                d["recompute"] = CODES[d["recompute"]]
                return  # one question in plain numbers, every rule met: no numpy call
        for name in ("devices", "seq_len", "tp", "pp", "vpp", "cp", "ep", "micro_batch"):
            put(self, name, whole(name, getattr(self, name)))
        put(self, "global_batch_tokens", whole("global_batch_tokens", self.global_batch_tokens))
        put(self, "zero_stage", whole_in("zero_stage", self.zero_stage, (0, 1, 2, 3)))
        put(self, "recompute", _codes(self.recompute))
        put(self, "flash_attention", flag(self.flash_attention))
        self._check_products()

    def _check_products(self) -> None:
        """Refuse a layout whose degrees do not multiply out, naming the field and its value."""
        group = self.tp * self.pp * self.cp
        dp = self.devices / group
        sequences = self.global_batch_tokens / self.seq_len
        rules = (
            (self.devices % group != 0, "devices",
             lambda i: f"devices must be a multiple of tp x pp x cp (got devices={_at(self.devices, i)}, "
                       f"tp x pp x cp={_at(group, i)})"),
            ((self.pp == 1) & (self.vpp > 1), "vpp",
             lambda i: f"vpp must be 1 without a pipeline (got vpp={_at(self.vpp, i)}, pp=1)"),
            ((dp * self.cp) % self.ep != 0, "ep",
             lambda i: f"ep must divide data x context parallel {_at(dp * self.cp, i)} (got ep={_at(self.ep, i)})"),
            (self.global_batch_tokens % self.seq_len != 0, "global_batch_tokens",
             lambda i: f"global_batch_tokens must be whole sequences of seq_len={_at(self.seq_len, i)} "
                       f"(got global_batch_tokens={_at(self.global_batch_tokens, i)})"),
            (self.seq_len % self.cp != 0, "cp",
             lambda i: f"cp must divide seq_len (got cp={_at(self.cp, i)}, seq_len={_at(self.seq_len, i)})"),
            ((self.cp > 1) & ~np.asarray(self.flash_attention, dtype=bool), "cp",
             lambda i: f"cp must be 1 with flash_attention False (got cp={_at(self.cp, i)}): {UNFUSED_CP}"),
            (sequences < dp * self.micro_batch, "global_batch_tokens",
             lambda i: f"global_batch={_at(sequences, i)} sequences (global_batch_tokens="
                       f"{_at(self.global_batch_tokens, i)}) gives each of the {_at(dp, i)} data-parallel ranks "
                       f"fewer than micro_batch={_at(self.micro_batch, i)} sequence(s) of {_at(self.seq_len, i)} "
                       "tokens"),
        )
        for bad, field, words in rules:
            hit = np.asarray(bad)
            if hit.any():
                global _SHAPE
                _SHAPE = hit.shape
                raise TrainingBudgetError(words(int(np.argmax(hit)) if hit.ndim else None), field)

    def _scalar_ok(self) -> bool:
        """The rules of _check_products on plain floats: True when all hold (else the array path words it)."""
        group = self.tp * self.pp * self.cp
        dp = self.devices / group
        return (self.devices % group == 0 and not (self.pp == 1 and self.vpp > 1) and (dp * self.cp) % self.ep == 0
                and self.global_batch_tokens % self.seq_len == 0 and self.seq_len % self.cp == 0
                and (self.cp == 1 or self.flash_attention)
                and self.global_batch_tokens / self.seq_len >= dp * self.micro_batch)

    @property
    def dp(self) -> Any:
        """Data-parallel degree: devices / (tp x pp x cp)."""
        return self.devices / (self.tp * self.pp * self.cp)

    @property
    def micro_batches(self) -> Any:
        """m: micro-batches per step on each pipeline, B / (s x dp x b) (may be fractional: the last one short)."""
        return self.global_batch_tokens / (self.seq_len * self.dp * self.micro_batch)


_FIELDS = ("devices", "seq_len", "global_batch_tokens", "tp", "pp", "vpp", "cp", "ep", "zero_stage", "micro_batch",
           "recompute")


_NUMBERS = _FIELDS[:-1]
_PLAIN_TYPES = {float, int}
_ZERO = _NUMBERS.index("zero_stage")


def _plain(d: dict[str, Any]) -> tuple[float, ...] | None:
    """The degrees as floats where every one is a plain whole number >= 1 (zero_stage 0-3) below 2^53
    and recompute a known name: the scalar path; else None."""
    values = tuple(map(d.__getitem__, _NUMBERS))
    if not set(map(type, values)) <= _PLAIN_TYPES or not (type(d["recompute"]) is str and d["recompute"] in CODES):
        return None
    try:
        floats = tuple(map(float, values))  # (an int past 2^53 rounds: refused below by the bound)
    except OverflowError:  # an int past a float's range: the array path words it
        return None
    if not all(map(float.is_integer, floats)) or max(floats) >= 2**53 or values[_ZERO] > 3:  # NaN, inf not whole
        return None
    if min(floats[:_ZERO] + floats[_ZERO + 1:]) < 1 or floats[_ZERO] < 0:
        return None
    return floats


_SHAPE: tuple[int, ...] = ()  # the shape of the failing rule's broadcast, set just before its message


def _at(value: Any, i: int | None) -> str:
    """Element `i` of a value broadcast to the failing rule's shape, as text."""
    if i is None or np.ndim(value) == 0:
        return show(float(value))
    return show(float(np.broadcast_to(value, _SHAPE).reshape(-1)[i]))


# Defaults when a job gives no batch: fit's and plan's (calc/physics/fit.py), 1,024 sequences a step,
# of 4,096 tokens unless the job gives its own length: Llama 2's pretraining batch, 4M tokens at 4K
# context (Touvron et al. 2023, arXiv:2307.09288 §2.2).
DEFAULT_WORDS = "Llama 2's pretraining batch, arXiv:2307.09288 §2.2"
