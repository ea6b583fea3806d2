"""The `fit` command: which layouts of a job fit a device's usable memory. Thin: every figure
comes from trainbudget.calc.fit_layouts (its module doc states the constraints and ranking)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import click

from ... import calc
from ...calc import show_value as show
from . import layout as model_layout, render as rep
from .estimate import CountType, NumberType, with_options
from .jobs import as_typed

H100 = "H100 SXM, BF16 tensor core, dense"
GIB = 2 ** 30
RANKING = calc.LAYOUT_RANKING
FLASH_HELP = ("Attention in a fused kernel (FlashAttention, cuDNN), or not: its scores written to memory, held and "
              "timed (Megatron's unfused backend, Hugging Face's eager; Transformer Engine's only one for GPT-OSS's "
              "softmax sinks).")
BATCH_HELP = ("Global batch in sequences per optimizer step (Megatron's --global-batch-size; tokens = this x "
              "--seq-len); only layouts with data parallel x micro-batch x accumulation = this, accumulation "
              "whole, are listed. Default 1,024 x 4,096 = 4M tokens: Llama 2's batch at every size "
              "(arXiv:2307.09288 §2.2) and Llama 3 405B's first stage (arXiv:2407.21783 §3.4.1).")


def batch_words(global_batch: int, seq_len: int) -> str:
    """The batch rule as printed: "global batch 1,024 sequences x 4,096 tokens = 4,194,304 tokens per step"."""
    return (f"global batch {global_batch:,} sequences x {seq_len:,} tokens = {global_batch * seq_len:,} tokens per "
            "step; layouts with data parallel x micro-batch x accumulation = the global batch (accumulation whole)")


def _trainable(text: str | None, preset: Any) -> float | None:
    """--trainable (layout.trainable), at most the model's parameters; the messages name --trainable."""
    value = model_layout.trainable(text)
    if value is None:
        return None
    total = float(preset.params().total)
    if value > total:
        raise calc.TrainingBudgetError(f"--trainable {show(text)} is more than the model's {total:.4g} parameters "
                                       f"({preset.name}): give a count at most that, or a share such as 1%")
    return value


def _check_reserve(device: str, memory_gib: float | None, reserve_gib: float | None) -> None:
    """--reserve-gib below the device's memory (as calc.fit_layouts checks it), named as typed."""
    if reserve_gib is None:
        return
    gib = memory_gib if memory_gib is not None else calc.catalog().get(device).memory_gib
    if gib is not None and reserve_gib >= gib:
        raise calc.TrainingBudgetError(f"--reserve-gib must be less than the device's {gib:g} GiB of memory, or "
                                       f"nothing is left for the job (got {reserve_gib:g})")


def _model(model_name: str | None, config_path: str | None) -> Any:
    if config_path is None and model_name is not None and not model_name.strip():
        raise calc.TrainingBudgetError(f"fit needs --model NAME or --config FILE (got --model {model_name!r})")
    preset = model_layout.resolve(model_name, config_path)
    if preset is None:
        raise calc.TrainingBudgetError("fit needs --model NAME or --config FILE")
    return preset


def _gib(value: float) -> str:
    return f"{value / GIB:.1f}"


def _line(r: dict[str, Any]) -> str:
    speed = (f"{r['step_seconds']:>7.2f} {r['tokens_per_second_per_device']:>9,.0f} {r['mfu']:>4.0%} "
             if "step_seconds" in r else "")
    return (f"{speed}{r['tp']:>3} {r['pp']:>3} {r['vpp']:>3} {r['cp']:>3} {r['ep']:>4} "
            f"{r['dp']:>6} {r['zero_stage']:>4} {r['micro_batch']:>3} {r.get('accumulation', '-'):>5} "
            f"{r['recompute']:>9} {_gib(r['weights_bytes']):>7} {_gib(r['gradients_bytes']):>6} "
            f"{_gib(r['optimizer_bytes'] + r['master_bytes']):>6} "
            f"{_gib(r['activations_bytes']):>6} {_gib(r['total_bytes']):>6} {_gib(r['headroom_bytes']):>6}")


SPEED_HEADER = f"{'step s':>7} {'tok/s/dev':>9} {'MFU':>4} "
HEADER = (f"{'TP':>3} {'PP':>3} {'VPP':>3} {'CP':>3} {'EP':>4} {'DP':>6} {'ZeRO':>4} {'mb':>3} {'accum':>5} "
          f"{'recompute':>9} {'weights':>7} {'grads':>6} {'optim':>6} {'activ':>6} {'total':>6} "
          f"{'free':>6}  (GiB per device)")


@dataclass(frozen=True)
class Options:
    """fit's options as typed (None: not given); the click options' names are the fields."""

    model_name: str | None
    config_path: str | None
    device: str
    n_devices: int
    seq_len: int
    global_batch: int
    micro_batch: int | None
    recompute: str | None
    context_parallel: int | None
    method: str
    trainable: str | None
    optimizer: str
    grad_bytes: float
    memory_gib: float | None
    reserve_gib: float | None
    loss: str
    flash_attention: bool
    limit: int


WHOLE = CountType(whole=True)  # a device count, a sequence length, a batch: 64, 16k, 4,096; 1.5 refused
_OPTIONS = (
    model_layout.MODEL, model_layout.CONFIG,
    click.option("--device", default=H100, show_default=True, help="Device name from the catalog."),
    click.option("--devices", "n_devices", type=WHOLE, required=True, help="Devices in the whole job, e.g. 64 or 16k."),
    click.option("--seq-len", type=WHOLE, default=calc.DEFAULT_SEQ_LEN, show_default=True,
                 help="Sequence length (tokens); Llama 2 and Llama 3's first stage: 4,096."),
    click.option("--global-batch", type=WHOLE, default=calc.DEFAULT_GLOBAL_BATCH, show_default=True, help=BATCH_HELP),
    click.option("--micro-batch", type=WHOLE, default=None, help="Micro-batch per device (default: search 1, 2, 4)."),
    click.option("--recompute", default=None,
                 help="none, selective, op (torchtitan's op-level selective checkpointing), full, or offload "
                      "(full with each layer's input in host memory, MaxText's offload policy; timed as full) "
                      "(default: search none, op, full and offload, offload only where full does not fit)."),
    click.option("--context-parallel", "--cp", "context_parallel", type=WHOLE, default=None,
                 help="Context-parallel size (default: search)."),
    click.option("--method", default="full", show_default=True, help="full, lora or qlora."),
    model_layout.TRAINABLE,
    click.option("--optimizer", default="adamw", show_default=True, help="Optimizer (see calc.OPTIMIZERS)."),
    click.option("--grad-bytes", type=NumberType(), default=4.0, show_default=True,
                 help="Bytes per gradient: 4 fp32 main gradients (Megatron, NeMo), 2 bf16."),
    click.option("--memory-gib", type=NumberType(), default=None,
                 help="Device memory in GiB (default: the catalog's Memory GiB)."),
    click.option("--reserve-gib", type=NumberType(), default=None, show_default=calc.reserve_words(),
                 help="GiB kept back for what the driver hides, the CUDA context, NCCL and the allocator."),
    click.option("--loss", default="standard", show_default=True,
                 help="standard (12 B per logit), parallel (PyTorch loss_parallel, 16 B) or fused "
                      "(a chunked/fused cross-entropy, 2 B)."),
    click.option("--flash-attention/--no-flash-attention", "flash_attention", default=True, show_default=True,
                 help=FLASH_HELP),
    click.option("--limit", type=CountType(whole=True, minimum=0), default=20, show_default=True,
                 help="Rows printed (text output)."),
    click.option("--json", "as_json", is_flag=True, help="Print every layout that fits as JSON."),
)


@click.command()
@with_options(_OPTIONS)
def fit(as_json: bool, **given: Any) -> None:
    """Layouts (tensor, pipeline, virtual, context, expert, data, ZeRO, recompute, micro-batch)
    whose bytes per device fit the device's usable memory."""
    o = Options(**given)
    try:
        preset, adapters, found = _found(o)
        rows, ranking = _by_speed(found, preset, adapters, o)
    except calc.TrainingBudgetError as e:  # calc names its fields: the user typed options
        raise as_typed(e) from None
    if as_json:
        rep.echo(json.dumps({"model": preset.name, "device": o.device, "devices": o.n_devices,
                             "memory_bytes": found.memory_bytes, "capacity_bytes": found.capacity_bytes,
                             "reserve_bytes": found.reserve_bytes, "ranking": ranking,
                             "memory_basis": _bytes_words(o.grad_bytes), "seq_len": o.seq_len,
                             "global_batch": o.global_batch, "global_batch_tokens": o.global_batch * o.seq_len,
                             "flash_attention": o.flash_attention,
                             "layouts": rows, "nearest": found.nearest, "would_fit": list(found.would_fit),
                             "devices_to_fit": found.devices_to_fit}, indent=2))
        return
    rep.echo(f"{preset.name} on {o.n_devices:,} x {o.device} ({_gib(found.capacity_bytes)} GiB - "
             f"{_gib(found.reserve_bytes)} reserve = {_gib(found.memory_bytes)} GiB usable): "
             f"{len(rows)} layouts fit")
    rep.echo(ranking[0].upper() + ranking[1:] + "; " + batch_words(o.global_batch, o.seq_len))
    rep.echo(_bytes_words(o.grad_bytes))
    if not o.flash_attention:
        rep.echo("Attention unfused (--no-flash-attention): its scores held without recompute, timed through memory")
    if not rows:
        _miss(found)
        return
    rep.echo((SPEED_HEADER if ranking == RANKING else "") + HEADER)
    for r in rows[:o.limit]:
        rep.echo(_line(r))
    if len(rows) > o.limit:
        rep.echo(f"... {len(rows) - o.limit} more (--limit, or --json for all)")


def _bytes_words(grad_bytes: float) -> str:
    """How fit counts a layout's bytes, beside how `estimate` does (calc.physics.fit_search.Search)."""
    return (f"Bytes as Megatron and DeepSpeed hold them: {grad_bytes:g}-byte gradients (--grad-bytes) and "
            "ZeRO-3's working buffers (DeepSpeed's defaults); `estimate` counts ZeRO's 2-byte gradients and "
            "no buffers, so it can find the same layout smaller")


def _found(o: Options) -> tuple[Any, float | None, Any]:
    """(the model, its --trainable adapters, calc.fit_layouts' answer) for the options."""
    preset = _model(o.model_name, o.config_path)
    _check_reserve(o.device, o.memory_gib, o.reserve_gib)
    adapters = _trainable(o.trainable, preset)
    return preset, adapters, calc.fit_layouts(
        preset, o.device, o.n_devices, seq_len=o.seq_len, global_batch=o.global_batch, micro_batch=o.micro_batch,
        recompute=o.recompute, context_parallel=o.context_parallel, method=o.method, optimizer=o.optimizer,
        trainable=adapters, grad_bytes=o.grad_bytes, memory_gib=o.memory_gib, reserve_gib=o.reserve_gib, loss=o.loss,
        flash_attention=o.flash_attention)


def _by_speed(found: Any, preset: Any, adapters: float | None, o: Options) -> tuple[list[dict[str, Any]], str]:
    """(found's rows, fastest first by the step model of the job's method, each with its step seconds,
    tokens/s per device and MFU (calc.layout_steps), the ranking rule); fit's memory order, said so,
    for a method the step model does not time (qlora, inference)."""
    rows = found.rows()
    if o.method not in calc.STEP_METHODS:
        return rows, (f"fit's memory order (the step model times full and LoRA training, not --method "
                      f"{o.method})")
    if not rows:
        return rows, RANKING
    trained = calc.trained_share(o.method, preset, adapters)
    st = calc.layout_steps(found, preset, o.device, o.seq_len, trained=trained, flash_attention=o.flash_attention)
    for i, r in enumerate(rows):
        r.update(step_seconds=float(st.step_seconds[i]), tokens_per_second_per_device=float(
            st.tokens_per_second_per_device[i]), mfu=float(st.mfu[i]))
    return [rows[i] for i in calc.layouts_by_speed(st)], RANKING


def _miss(found: Any) -> None:
    near = found.nearest
    if near is None:
        rep.echo("no layout satisfies the constraints (heads, layers, experts, devices, global batch)")
        return
    over = near["total_bytes"] - found.memory_bytes
    rep.echo(f"nearest miss ({_gib(over)} GiB over):")
    rep.echo(HEADER)
    rep.echo(_line({**near, "headroom_bytes": -over}))
    where = ", ".join(found.would_fit) if found.would_fit else "no device in the catalog"
    rep.echo(f"that layout would fit on: {where}")
    if found.devices_to_fit is not None:
        rep.echo(f"on this device, {found.devices_to_fit:,} devices (--devices doubled) would hold a layout")
