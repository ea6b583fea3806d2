"""`estimate`'s options -> `Job`s: every option threaded into the Job in one place, or refused
with a message where it does not apply. No figure is computed here (calc.budget does that)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ... import calc
from ...calc import (
    Budget,
    ModelPreset,
    check_fraction as fraction,
    check_whole as whole,
    load_config,
    model_preset,
)
from . import layout as model_layout

Error = calc.TrainingBudgetError


@dataclass(frozen=True)
class Options:
    """estimate's options as given (None: not given on the command line)."""

    params: float | None
    active_params: float | None
    tokens: float | None
    device_names: tuple[str, ...]
    utilization: float | None
    n_devices: float | None
    pue: float | None
    goodput: float | None
    method: str
    trainable: str | None
    optimizer: str | None
    zero_stage: int
    model_name: str | None
    config_path: str | None
    tp: int
    pp: int
    ep: int
    cp: int
    as_range: bool
    as_step: bool
    measured_steps: str | None
    seq_len: float | None
    global_batch: float | None
    micro_batch: float | None
    vpp: float | None
    recompute: str | None
    flash_attention: bool | None
    price: str | None
    own: str | None
    usd_per_kwh: float | None
    occupancy: float | None
    scenarios: str | None


def _not_empty(option: str, value: str | None) -> None:
    if value is not None and not value.strip():
        raise Error(f"{option} must not be empty (got {value!r})")


def check(o: Options) -> None:
    """Refuse what does not apply or cannot be right, naming the option and the value."""
    for option, value in (("--model", o.model_name), ("--price", o.price), ("--own", o.own),
                          ("--config", o.config_path), ("--scenarios", o.scenarios)):
        _not_empty(option, value)
    for name in o.device_names:
        _not_empty("--device", name)
    if o.model_name is not None and o.config_path is not None:
        raise Error("give --model or --config, not both")
    if o.params is not None and (o.model_name is not None or o.config_path is not None):
        raise Error("give --params or --model/--config, not both (the model gives its parameters)")
    if o.active_params is not None and (o.model_name is not None or o.config_path is not None):
        raise Error(f"--active-params goes with --params, not with --model/--config: the model gives its own "
                    f"active parameters (got --active-params {o.active_params:g})")
    if o.active_params is not None and o.active_params > (calc.SEED_PARAMS if o.params is None else o.params):
        raise Error(f"--active-params {o.active_params:g} is more than --params "
                    f"{calc.SEED_PARAMS if o.params is None else o.params:g} (a mixture of experts runs a share "
                    "of its parameters per token)")
    _check_forward(o)
    if o.trainable is not None and o.method not in calc.ADAPTER_METHODS:
        raise Error(f"--trainable counts LoRA/QLoRA adapters: give --method lora or qlora too (got --method "
                    f"{o.method}, --trainable {o.trainable})")
    _check_step(o)
    if o.as_range and o.utilization is not None:
        raise Error("--range takes low / expected / high utilization from the published runs; "
                    "give --range or --utilization, not both")
    if o.own is None and o.scenarios is None:  # a scenarios file's own column takes them too
        for option, value in (("--usd-per-kwh", o.usd_per_kwh), ("--occupancy", o.occupancy)):
            if value is not None:
                raise Error(f"{option} applies to owned hardware: give --own CAPEX,LIFE too (got {option} {value:g})")
    for option, value in (("--usd-per-kwh", o.usd_per_kwh), ("--occupancy", o.occupancy)):
        if value is not None:
            (calc.check_non_negative if option == "--usd-per-kwh" else fraction)(option, value)
    if o.own is not None and o.price is not None:
        raise Error("give --price or --own, not both")
    if o.scenarios is not None:
        given = [opt for opt, v in (("--params", o.params), ("--active-params", o.active_params),
                                    ("--tokens", o.tokens), ("--model", o.model_name),
                                    ("--config", o.config_path), ("--devices", o.n_devices)) if v is not None]
        if o.device_names:
            given.append("--device")
        if given:
            verb = "does" if len(given) == 1 else "do"
            raise Error(f"{', '.join(given)} {verb} not apply with --scenarios: each row of the file gives "
                        "params (or a model column), active_params, tokens, device and devices")


STEP_OPTIONS = ("--seq-len", "--global-batch", "--micro-batch", "--vpp", "--recompute", "--measured-steps",
                "--flash-attention")
# fit's and plan's bounds on the same sizes (calc/physics/fit.py, calc.planning.scenarios.SIZE_LIMITS)
STEP_LIMITS = {"--seq-len": 2 ** 30, "--global-batch": 2 ** 40}


def _check_step(o: Options) -> None:
    """--step times the layout's step: it replaces --utilization and --range; the batch options
    apply to it alone."""
    values = (o.seq_len, o.global_batch, o.micro_batch, o.vpp, o.recompute, o.measured_steps, o.flash_attention)
    if not o.as_step:
        names = (*STEP_OPTIONS[:-1], "--no-flash-attention" if o.flash_attention is False else "--flash-attention")
        given = [opt for opt, v in zip(names, values, strict=True) if v is not None]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise Error(f"{', '.join(given)} {verb} to --step (the step model's inputs): give --step too")
        return
    for option, value in zip(STEP_OPTIONS[:4], values[:4], strict=True):
        if value is not None:  # sequences and stages are whole: --global-batch 2.5 is refused here, by name
            whole(option, value)
            top = STEP_LIMITS.get(option)
            if top is not None and value > top:
                raise Error(f"{option} must be at most {top:,} (got {value:g})")
    for option, clash in (("--utilization", o.utilization is not None), ("--range", o.as_range)):
        if clash:
            raise Error(f"--step takes the utilization from the step model; give --step or {option}, not both")


def batch(o: Options) -> dict[str, Any]:
    """The step model's batch fields from the command line (none without --step): --global-batch is in
    sequences, as Megatron counts them (None: calc's default, 1,024 of the sequence length)."""
    if not o.as_step:
        return {}
    seq_len = calc.DEFAULT_SEQ_LEN if o.seq_len is None else o.seq_len
    given = {"seq_len": o.seq_len, "global_batch_tokens": None if o.global_batch is None else o.global_batch * seq_len,
             "micro_batch": o.micro_batch, "vpp": o.vpp,
             "recompute": None if o.recompute is None else o.recompute.lower(), "flash_attention": o.flash_attention}
    return {k: v for k, v in given.items() if v is not None}


def _check_forward(o: Options) -> None:
    """Inference keeps weights only (calc.physics.memory): an optimizer, or a ZeRO stage that shards only
    optimizer states (1) and gradients (2), would change nothing; ZeRO 3 shards the weights."""
    if o.method != "inference":
        return
    if o.optimizer is not None:
        raise Error(f"--optimizer does not apply to --method inference: a forward pass keeps no gradients or "
                    f"optimizer states (got --optimizer {o.optimizer})")
    if o.zero_stage in (1, 2):
        raise Error(f"--zero-stage {o.zero_stage} shards optimizer states{' and gradients' * (o.zero_stage == 2)}, "
                    "which --method inference has none of: give 0, or 3 to shard the weights")


def model(o: Options) -> ModelPreset | None:
    """The preset or config named on the command line (None when neither is)."""
    if o.config_path is not None:
        return load_config(o.config_path)
    return None if o.model_name is None else model_preset(o.model_name)


def base_job(o: Options, table: calc.DeviceTable) -> calc.Job:
    """The Job every device (or scenario row) shares: the options over the defaults."""
    preset = model(o)
    owned = None if o.own is None else calc.parse_own(o.own, o.usd_per_kwh, o.pue,
                                                        1.0 if o.occupancy is None else o.occupancy, "--usd-per-kwh")
    return calc.job(params=None if preset is not None else (calc.SEED_PARAMS if o.params is None else o.params),
                    active_params=o.active_params, model=preset,
                    tokens=calc.SEED_TOKENS if o.tokens is None else o.tokens,
                    devices=1 if o.n_devices is None else o.n_devices, tp=o.tp, pp=o.pp, ep=o.ep, cp=o.cp,
                    method=o.method, trainable=model_layout.trainable(o.trainable),
                    optimizer=o.optimizer or "adamw", zero_stage=o.zero_stage,
                    utilization="step" if o.as_step else "prior" if o.as_range else (
                        1.0 if o.utilization is None else o.utilization), **batch(o),
                    goodput=o.goodput, price=owned if owned is not None else calc.parse_price("--price", o.price),
                    pue=o.pue, table=table, calibration=_calibration(o, table))


def _calibration(o: Options, table: calc.DeviceTable) -> calc.TeamCalibration | None:
    """The team's calibration from --measured-steps (None without it)."""
    if o.measured_steps is None:
        return None
    return calc.calibrate_from_measured(calc.read_user_text(o.measured_steps, "--measured-steps"), table)


# calc's names for what the options set -> the options: calc checks each once, and its message names the
# option the user typed (the one table of them: estimate, fit and plan; an option has one name on every command).
OPTION_OF = {"params": "--params", "active_params": "--active-params", "tokens": "--tokens", "devices": "--devices",
             "tensor_parallel": "--tp", "pipeline_parallel": "--pp", "expert_parallel": "--ep",
             "context_parallel": "--cp", "tp": "--tp", "pp": "--pp", "ep": "--ep", "cp": "--cp",
             "zero_stage": "--zero-stage", "utilization": "--utilization", "goodput": "--goodput", "pue": "--pue",
             "seq_len": "--seq-len", "micro_batch": "--micro-batch", "vpp": "--vpp", "recompute": "--recompute",
             "flash_attention": "--flash-attention",
             "global_batch": "--global-batch", "method": "--method", "optimizer": "--optimizer",
             "trainable": "--trainable", "grad_bytes": "--grad-bytes", "memory_gib": "--memory-gib",
             "reserve_gib": "--reserve-gib", "loss": "--loss", "days": "--days", "budget_usd": "--budget",
             "node": "--node", "case": "--case", "usd_per_kwh": "--usd-per-kwh", "occupancy": "--occupancy"}
_NAMED = re.compile(r"(?<![\w-])(" + "|".join(sorted(OPTION_OF, key=len, reverse=True)) + r")(=| must\b)")


def as_typed(e: calc.TrainingBudgetError) -> calc.TrainingBudgetError:
    """calc's error with each field it names as the option that set it ("devices must ..." ->
    "--devices must ...", "tp=3" -> "--tp 3"); estimate, fit and plan raise calc's errors through it."""
    text = _NAMED.sub(lambda m: OPTION_OF[m[1]] + (" " if m[2] == "=" else m[2]), str(e))
    return e if text == str(e) else type(e)(text, e.field)


def budgets(o: Options, table: calc.DeviceTable, filled: calc.ScenarioFilled | None = None) -> Iterator[Budget]:
    """The Budgets `estimate` answers: one per --device (default: the four starting rates), or one
    per row of the --scenarios file (streamed; an error names its row). `filled` counts, per
    plans.FILLS key, the scenario rows whose blank cell an option filled (see fills_text)."""
    check(o)
    base = base_job(o, table)
    if o.scenarios is None:
        for name in o.device_names or calc.SEED_DEVICES:
            try:
                yield calc.budget(base.with_(device=table.get(name).name))
            except calc.TrainingBudgetError as e:
                raise as_typed(e) from None
        return
    default_u: Any = "step" if o.as_step else "prior" if o.as_range else o.utilization
    blanks = calc.ScenarioBlanks(utilization=default_u, own=o.own, usd_per_kwh=o.usd_per_kwh, pue=o.pue,
                                 price=None if isinstance(base.pricing.price, calc.Owned) else base.pricing.price,
                                 occupancy=1.0 if o.occupancy is None else o.occupancy, tariff_name="--usd-per-kwh")
    yield from calc.scenario_budgets(calc.read_scenarios(o.scenarios), base, blanks, filled)


# The options that fill a scenarios file's blank cells (or apply to its owned rows), and the cells.
FILLING = (("--utilization", "utilization", "utilization", "every row has its own utilization"),
           ("--step", "utilization", "utilization", "every row has its own utilization"),
           ("--range", "utilization", "utilization", "every row has its own utilization"),
           ("--price", "price", "price", "every row has its own price or own cell"),
           ("--own", "own", "price and own", "every row has its own price or own cell"),
           ("--usd-per-kwh", "owned", "owned-hardware", "no row is priced as owned hardware"),
           ("--occupancy", "owned", "owned-hardware", "no row is priced as owned hardware"))


def fills_text(o: Options, filled: calc.ScenarioFilled) -> dict[str, str]:
    """For each filling option given with --scenarios, one line saying which rows it filled (or
    applied to), or that it filled none and why: no option is silently ignored."""
    given = {"--utilization": o.utilization, "--range": o.as_range or None, "--step": o.as_step or None,
             "--price": o.price, "--own": o.own,
             "--usd-per-kwh": o.usd_per_kwh, "--occupancy": o.occupancy}
    lines = {}
    for option, key, cells, none_why in FILLING:
        value = given[option]
        if o.scenarios is None or value is None:
            continue
        shown = option if value is True else f"{option} {value:g}" if isinstance(value, float) else f"{option} {value}"
        count, rows = filled.counts.get(key, 0), filled.first.get(key, [])
        verb = "applied to" if key == "owned" else f"filled the blank {cells} cells of"
        if not count:
            lines[option] = (f"{shown} applied to no row: {none_why}" if key == "owned"
                             else f"{shown} filled no cell: {none_why}")
        else:
            more = f" and {count - len(rows)} more" if count > len(rows) else ""
            lines[option] = f"{shown} {verb} scenario{'s' * (count != 1)} {', '.join(map(str, rows))}{more}"
    return lines
