"""The `estimate` command: options -> Jobs (cli/jobs.py) -> calc.budget -> one emitter (cli/emit.py).

One code path for every option: a model or config, a layout, the method, optimizer and ZeRO
stage, the utilization or the prior (--range), goodput, a price (USD, PROVIDER:PLAN or owned
hardware), PUE, and a scenarios file; an option that does not apply is refused with a message.
With --scenarios, the options that fill blank cells (--utilization, --range, --price, --own,
--usd-per-kwh, --occupancy) say on stderr (and in JSON's "filled") which rows they filled, or
that they filled none. Every Budget is made before anything is printed (the output is held in a
spooled file, so a large scenarios file still streams): an error leaves stdout empty.
"""

from __future__ import annotations

import math
import tempfile
from typing import Any

import click

from ... import calc
from ...calc import GOODPUT, parse_number, parse_share, show_value as show
from . import emit, jobs as making, layout as model_layout
from .render import safe


class CountType(click.ParamType):
    """A count such as 7e9, 7B, 1.5T, 350M or 16k (calc.parse_count's syntax: "7,5B" is refused, "7,000" is 7000).
    `whole`: a whole number in [minimum, maximum], as an int ("1.5" refused; 0 read where minimum is 0). Every
    message names the option as typed: "--devices must be a whole number >= 1 (got '1.5')"."""

    name = "count"

    def __init__(self, whole: bool = False, minimum: int = 1, maximum: int | None = None):
        self.whole, self.minimum, self.maximum = whole, minimum, maximum

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, float) or (self.whole and isinstance(value, int) and not isinstance(value, bool)):
            return value  # a default
        flag = _flag(param, "count")
        if not self.whole:
            return calc.parse_count(flag, value)  # the message names the option once
        try:
            number = calc.parse_count(flag, value)
        except calc.TrainingBudgetError:
            if self.minimum > 0:
                raise
            number = parse_number(flag, value, -math.inf)  # 0 (or a negative, refused below): not a count's syntax
        if not number.is_integer() or number < self.minimum:
            raise calc.TrainingBudgetError(f"{flag} must be a whole number >= {self.minimum} (got {show(value)})")
        if self.maximum is not None and number > self.maximum:
            raise calc.TrainingBudgetError(f"{flag} must be at most {self.maximum:,} (got {show(value)})")
        return int(number)


class UtilizationType(click.ParamType):
    """A share of the device's rate: 0.4 or 40%; 40 is answered with "did you mean 0.40?"."""

    name = "fraction"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, float):
            return value
        return parse_share(_flag(param, "utilization"), value)


class NumberType(click.ParamType):
    """A finite number >= `minimum` in the counts' syntax (calc.base.units.parse_number): "1,2" is
    refused with "write 1.2", "1,000" is 1000; nan, inf and 1e309 are refused naming the option."""

    name = "number"

    def __init__(self, minimum: float = 0.0):
        self.minimum = minimum

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, float):  # a default
            return value
        return parse_number(_flag(param, "number"), value, self.minimum)


def _flag(param: Any, fallback: str) -> str:
    """The option as the user typed it: --usd-per-kwh, not usd_per_kwh."""
    return param.opts[0] if param is not None and param.opts else fallback


def _table(path: str | None) -> calc.DeviceTable:
    if path is None:
        return calc.catalog()
    from ..template import devices_table

    return devices_table.load_catalog(path)


WHOLE = CountType(whole=True)  # devices, parallel sizes, sequences: 64, 16k, 4,096; 1.5 refused, naming the option
_OPTIONS = (
    click.option("--params", type=CountType(), default=None, show_default="7e9",
                 help="Model parameters: 7e9, 7B, 350M."),
    click.option("--active-params", type=CountType(), default=None, show_default="all of --params",
                 help="Parameters each token runs through (a mixture of experts): 13B, 3.3e9; at most "
                      "--params. FLOPs, hours and cost follow them, memory holds every parameter."),
    click.option("--tokens", type=CountType(), default=None, show_default="1e9",
                 help="Training tokens: 1e9, 1B, 1.5T."),
    click.option("--device", "device_names", multiple=True,
                 help="Device name from the catalog (repeatable); default: two rates measured on an "
                      "Apple M3 Ultra and the H100 SXM BF16 and FP8 peaks."),
    click.option("--utilization", type=UtilizationType(), default=None, show_default="1.0",
                 help="Share of the device's rate actually reached: 0.4 or 40%. With --scenarios: fills "
                      "the blank utilization cells only."),
    click.option("--devices", "n_devices", type=WHOLE, default=None, show_default="1",
                 help="Number of devices training together (the whole job): 64, 16k."),
    click.option("--goodput", type=UtilizationType(), default=None,
                 help="Share of wall-clock time spent training (restarts and failures excluded): 0.9 or 90%; "
                      f"default 1.0 with --utilization, the prior's {GOODPUT:.2f} with --range."),
    click.option("--pue", type=NumberType(1.0), default=None, show_default="1.0; 1.58 with --own",
                 help="Data-centre power usage effectiveness (>= 1) applied to the energy. With --scenarios: "
                      "fills the blank pue cells only."),
    click.option("--method", type=click.Choice(calc.METHODS, case_sensitive=False), default="full", show_default=True,
                 help="Method: full trains every weight (6 FLOPs per parameter-token); lora, qlora train "
                      "adapters over frozen weights (4: no weight gradients for them); inference is a forward "
                      "pass (2, weights only in memory). With --scenarios: fills the blank method cells only."),
    model_layout.TRAINABLE,
    click.option("--optimizer", type=click.Choice(calc.OPTIMIZERS, case_sensitive=False), default=None,
                 show_default="adamw", help="Optimizer (memory per device); not with --method inference."),
    click.option("--zero-stage", type=click.IntRange(0, 3), default=0, show_default=True,
                 help="ZeRO stage sharding model states over the devices (memory per device)."),
    model_layout.MODEL, model_layout.CONFIG,
    click.option("--tp", type=WHOLE, default=1, show_default=True,
                 help="Tensor-parallel size (divides the heads)."),
    click.option("--pp", type=WHOLE, default=1, show_default=True, help="Pipeline stages (at most the layers)."),
    click.option("--ep", type=WHOLE, default=1, show_default=True,
                 help="Expert-parallel size (within data parallel; divides the experts)."),
    click.option("--cp", type=WHOLE, default=1, show_default=True, help="Context-parallel size."),
    click.option("--range", "as_range", is_flag=True,
                 help="Low / expected / high hours, device-hours, cost and energy from the utilization prior "
                      "(published runs; instead of --utilization), worked out on the device's 16-bit row. "
                      "With --scenarios: fills the blank utilization cells only."),
    click.option("--step", "as_step", is_flag=True,
                 help="Low / expected / high hours from the step model: compute, each collective on the link it "
                      "crosses and the pipeline bubble of the job's layout and batch (needs --model or --config; "
                      "instead of --utilization or --range). Prints the step and its breakdown. With --scenarios: "
                      "fills the blank utilization cells only (a row's utilization cell may say step)."),
    click.option("--measured-steps", type=click.Path(exists=True, dir_okay=False), default=None,
                 help="With --step: a CSV of your team's measured steps (as `trainbudget calibrate` reads): the "
                      "step model's rate and band fitted to them on the devices they measured."),
    click.option("--seq-len", type=WHOLE, default=None, show_default="4096",
                 help="With --step: sequence length, tokens."),
    click.option("--global-batch", type=WHOLE, default=None, show_default="1024",
                 help="With --step: global batch in sequences per optimizer step (Megatron's --global-batch-size; "
                      "tokens = sequences x --seq-len)."),
    click.option("--micro-batch", type=WHOLE, default=None, show_default="1",
                 help="With --step: micro-batch, sequences per device per forward pass."),
    click.option("--vpp", type=WHOLE, default=None, show_default="1",
                 help="With --step: virtual pipeline stages per device (interleaved schedule)."),
    click.option("--recompute", type=click.Choice(calc.RECOMPUTE, case_sensitive=False), default=None,
                 show_default="selective", help="With --step: activation recomputation."),
    click.option("--flash-attention/--no-flash-attention", "flash_attention", default=None, show_default="flash",
                 help="With --step: attention in a fused kernel (FlashAttention, cuDNN), or not: its scores "
                      "written to memory, timed and held (Megatron's unfused or local backend, Hugging Face's "
                      "eager; Transformer Engine's only one for GPT-OSS's softmax sinks)."),
    click.option("--price", "price", default=None,
                 help="Price per device-hour: a number of USD for every device (2.5), or PROVIDER:PLAN from "
                      "`trainbudget prices` (aws:on_demand, gcp:3yr, lambda); default: each device row's own price. "
                      "With --scenarios: fills the blank price cells only."),
    click.option("--own", default=None, help="Owned hardware price: CAPEX,LIFE (USD per device, years); "
                 "needs --usd-per-kwh. With --scenarios: fills the blank price and own cells only."),
    click.option("--usd-per-kwh", type=NumberType(), default=None, help="Electricity tariff for --own, USD per kWh."),
    click.option("--occupancy", type=UtilizationType(), default=None, show_default="1.0",
                 help="For --own: share of the year the devices train."),
    click.option("--scenarios", type=click.Path(exists=True, dir_okay=False), default=None,
                 help="CSV of plans, one per row: name,params,tokens,device,devices,utilization,price,own "
                      "and optionally active_params (a mixture of experts) or model (a preset in place of "
                      "params), method and pue (as the workbook's Scenarios plans), zero_stage, tp, pp, cp, ep "
                      "(blank: --zero-stage, --tp, ...), seq_len and global_batch (sequences; the row's data "
                      "parallel must divide it; the step model's batch, as --seq-len and --global-batch); cells "
                      "as on the command line: 7B, 40%, prior, step, aws:on_demand."),
    click.option("--json", "as_json", is_flag=True, help="Print JSON."),
    click.option("--csv", "as_csv", is_flag=True, help="Print CSV rows."),
    model_layout.CATALOG,
)


def with_options(options: tuple[Any, ...]) -> Any:
    """A decorator applying `options` (click options) in order: a command's one table of them."""
    def apply(f: Any) -> Any:
        for option in reversed(options):
            f = option(f)
        return f
    return apply


@click.command()
@with_options(_OPTIONS)
def estimate(as_json: bool, as_csv: bool, catalog_path: str | None, **given: Any) -> None:
    """Memory, FLOPs, hours, days, cost and energy for a training job, and whether it fits.

    With no options: a full fine-tune of a 7B model on 1B tokens, on two rates measured on an
    Apple M3 Ultra and the H100's BF16 and FP8 peaks.
    """
    if as_json and as_csv:
        raise calc.TrainingBudgetError("give --json or --csv, not both")
    options = making.Options(**given)
    table = _table(catalog_path)
    filled = calc.ScenarioFilled()
    budgets = making.budgets(options, table, filled)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+", encoding="utf-8", newline="") as out:
        def write(text: str) -> None:
            out.write(safe(text))  # a scenario's name or a catalog's device is printed, never obeyed

        if as_json:
            emit.emit_json(budgets, write, tail=lambda: _filled(options, filled))
        elif as_csv:
            emit.emit_csv(budgets, write, both=options.scenarios is not None)
        elif options.scenarios is not None:
            emit.emit_scenarios_text(budgets, write)
        else:
            emit.emit_text(list(budgets), table, write)
        for line in making.fills_text(options, filled).values():  # every Budget is made: now print
            click.echo(safe(f"trainbudget: {line}"), err=True)
        out.seek(0)
        while chunk := out.read(1 << 20):
            click.echo(chunk, nl=False)


SPOOL_BYTES = 32 << 20  # output held in memory up to 32 MiB, then in a temporary file


def _filled(o: making.Options, filled: calc.ScenarioFilled) -> dict[str, Any]:
    """JSON's extra fields: {"filled": {option: line}} with --scenarios, else none."""
    return {} if o.scenarios is None else {"filled": making.fills_text(o, filled)}
