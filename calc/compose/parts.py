"""A job's named parts, each frozen and each field a scalar or a broadcasting numpy array:
the model (what is trained), the training (how: method, optimizer, adapters, activations), the
layout (how the devices split the model and the batch, in Megatron-LM's words: tp, pp, vpp, cp,
ep, ZeRO stage, micro-batch, sequence length, global batch, recompute), the cluster (which device
and how many) and the pricing (a price and the PUE). calc/compose/job.py puts them in a `Job` and
holds the one table of their flat names; calc.budget checks each part's fields, naming the field
(an unknown preset name is refused when the part is made).

Units: counts (params, devices), bytes (activations), tokens (seq_len, global_batch_tokens),
sequences (micro_batch), USD per device-hour (a numeric price)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.checks import whole
from ..base.errors import TrainingBudgetError, show
from ..base.fastinit import fast_init
from ..hardware.catalog import DeviceTable
from ..model.shapes import ModelPreset, model_preset
from ..physics.fit import DEFAULT_GLOBAL_BATCH, DEFAULT_SEQ_LEN
from ..step.layout import DEFAULT_WORDS

DEFAULT_DEVICE = "H100 SXM, BF16 tensor core, dense"


@fast_init
@dataclass(frozen=True)
class Model:
    """What is trained: `params` total parameters (count), with `active_params` per token for a
    mixture of experts; or `preset` a ModelPreset or a preset's name (its counted totals, active
    parameters, routed experts and embedding). Give params or a preset, not both."""

    params: Any = None
    active_params: Any = None
    preset: ModelPreset | None = None

    def __post_init__(self) -> None:
        """A preset given by name is resolved here, as the command line's --model is (an unknown
        name is refused naming `model` and the known ones); any other type but a ModelPreset is refused."""
        preset = self.__dict__["preset"]
        if preset is not None and preset.__class__ is not ModelPreset:
            self.__dict__["preset"] = _resolve(preset)


def _resolve(preset: Any) -> ModelPreset:
    """A ModelPreset (or subclass) as it is, a preset's name resolved; any other type refused."""
    if isinstance(preset, ModelPreset):
        return preset
    if isinstance(preset, str):
        return model_preset(preset)
    raise TrainingBudgetError(f"model must be a preset name such as 'Llama 3.1 70B' or a ModelPreset "
                              f"(got {show(preset)} of type {type(preset).__name__})")


@fast_init
@dataclass(frozen=True)
class Training:
    """How it is trained: `method` full | lora | qlora | inference, `optimizer` (calc.physics.memory's
    OPTIMIZERS), `trainable` adapter parameters (a count, or a share of the model), `activations`
    bytes per device (calc.activation_bytes gives them)."""

    method: str = "full"
    optimizer: str = "adamw"
    trainable: Any = None
    activations: Any = 0.0


@fast_init
@dataclass(frozen=True)
class Parallel:
    """The layout, in Megatron-LM's words: tp, pp, cp, ep (tensor, pipeline, context, expert
    parallel degrees; data parallel is the rest of the devices, calc.layout_data_parallel), vpp
    (virtual pipeline stages per device), zero_stage 0-3, micro_batch (sequences), seq_len and
    global_batch_tokens (tokens; None: the stated default, `sizes`), recompute none | selective | op | full | offload,
    flash_attention (attention in a fused kernel; False: its scores through memory, timed and held).
    The batch fields and flash_attention are the step model's (utilization "step")."""

    tp: Any = 1
    pp: Any = 1
    cp: Any = 1
    ep: Any = 1
    zero_stage: Any = 0
    vpp: Any = 1
    micro_batch: Any = 1
    seq_len: Any = None
    global_batch_tokens: Any = None
    recompute: Any = "selective"
    flash_attention: Any = True

    def sizes(self) -> tuple[Any, Any]:
        """(seq_len, global_batch_tokens) with the defaults filled in: DEFAULT_SEQ_LEN tokens, and
        DEFAULT_GLOBAL_BATCH sequences of the sequence length (fit's and plan's rule)."""
        s = DEFAULT_SEQ_LEN if self.seq_len is None else self.seq_len
        if self.global_batch_tokens is not None:
            return s, self.global_batch_tokens
        return s, DEFAULT_GLOBAL_BATCH * whole("seq_len", s)  # checked before it is multiplied

    def defaults_used(self) -> str:
        """Words for the batch defaults this layout takes, only those ("" when it gives both sizes)."""
        if self.seq_len is not None and self.global_batch_tokens is not None:
            return ""
        s, tokens = self.sizes()
        if not isinstance(s, (int, float)):  # arrays of lengths
            words = "default batch" if self.global_batch_tokens is None else "default sequence length"
        elif self.global_batch_tokens is not None:  # the batch given, in tokens: only the length is the default
            words = f"default sequence length: {s:,.0f} tokens"
        else:
            words = f"default batch: {tokens / s:,.0f} sequences of {s:,.0f} tokens"
        return f"{words} ({DEFAULT_WORDS})"


@fast_init
@dataclass(frozen=True)
class Cluster:
    """Where it runs: `device` a device table's row name, `devices` the whole job's count,
    `table` the device table (None: the packaged catalog), `calibration` a team's measured steps
    as calc.calibrate_from_measured reads them (None: the step model's published constants; used
    only at utilization "step")."""

    device: Any = DEFAULT_DEVICE
    devices: Any = 1
    table: DeviceTable | None = field(default=None, repr=False)
    calibration: Any = field(default=None, repr=False)


@fast_init
@dataclass(frozen=True)
class Pricing:
    """What it costs: `price` None (the device row's own), USD per device-hour, "provider:plan"
    (calc.money.prices) or an `Owned`; `pue` >= 1 (None: 1.0, or PUE_INDUSTRY for owned hardware)."""

    price: Any = None
    pue: Any = None
