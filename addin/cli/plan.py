"""`trainbudget plan`: the deadline and the money in, the devices, layout, days and cost out, for
every catalog device and price (calc.rank_plans). Thin: every figure is a calc Budget."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import click

from ... import calc
from ...calc import MAX_NODE, parse_number, parse_own, show_value as show
from . import layout as model_layout, render as rep
from .estimate import CountType, NumberType, UtilizationType, _table, with_options
from .fit import BATCH_HELP, FLASH_HELP
from .jobs import as_typed


class PositiveType(click.ParamType):
    """A number > 0 (days); the message names the option: "--days must be > 0 (got 0)"."""

    name = "number"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        flag = param.opts[0] if param else "value"
        number = value if isinstance(value, float) else parse_number(flag, value)  # the counts' syntax
        if not number > 0:
            raise calc.TrainingBudgetError(f"{flag} must be > 0 (got {value})")
        return number


# The largest budget taken: 1e15 USD, about ten times the world's yearly GDP (1.05e14 USD in 2023,
# World Bank indicator NY.GDP.MKTP.CD, https://data.worldbank.org/indicator/NY.GDP.MKTP.CD). Far
# above any training run, and far below where the tokens a budget buys would overflow float64.
MAX_BUDGET_USD = 1e15


class UsdType(click.ParamType):
    """Money in USD, written as the CLI's counts are (calc.parse_count): 5e6, 2.5e6, 50M, 1.2B;
    at most MAX_BUDGET_USD, refused before anything is printed in every output format."""

    name = "usd"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        flag = param.opts[0] if param else "usd"
        try:
            usd = calc.parse_count(flag, value)
        except calc.TrainingBudgetError as e:
            raise calc.TrainingBudgetError(str(e).replace("a count such as 7e9, 7B, 1.5T or 350M",
                                                          "USD such as 5e6, 2.5e6 or 50M")) from None
        if usd > MAX_BUDGET_USD:
            raise calc.TrainingBudgetError(f"{flag} must be at most 1e15 USD, ten times the world's yearly GDP "
                                           f"(got {show(value)})")
        return usd


def _money(v: float | None) -> str:
    if v is None:
        return "-"
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:,.3g}{suffix}"
    return f"{v:,.0f}"


def _three(row: dict[str, Any], key: str, fmt: Any) -> str:
    if key in row:
        return fmt(row[key])
    low, mid, high = (row.get(f"{key}_{c}") for c in calc.PLAN_CASES)
    return "-" if mid is None else f"{fmt(low)} / {fmt(mid)} / {fmt(high)}"


def _days(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}"


def _layout(row: dict[str, Any]) -> str:
    if row["tp"] is None:
        return "-"
    ep = row["ep"]  # experts split within the data-parallel ranks: not a factor of the devices
    expert = f" (EP{ep})" if ep != 1 else ""
    batch = "" if row.get("micro_batch") is None else f" mb{row['micro_batch']}x{row['accumulation']}"
    return f"TP{row['tp']} PP{row['pp']} CP{row['cp']} DP{row['dp']}{expert} Z{row['zero_stage']}{batch}"


def _phrase(p: calc.Plan | None) -> str:
    if p is None:
        return "none"
    r = p.row()
    text = (f"{r['devices']:,} x {r['device']} at {r['price']}, {_layout(r)}, {p.figure('days'):,.1f} days, "
            f"{_money(p.figure('cost_usd'))} USD")
    if p.term_years:
        years = f"{p.term_years:g}-year"
        text += (f" (the job's share of the capacity already committed; the {years} commitment on these devices is "
                 f"{_money(p.commitment())} USD)" if p.committed else
                 f" for the job, within a {years} commitment of {_money(p.commitment())} USD")
    return text


def _sentence(plans: list[calc.Plan], budget_usd: float | None, case: str) -> str:
    top = calc.plan_headline(plans, budget_usd)
    first = "Fastest within budget" if budget_usd is not None else "Fastest"
    at = f" (the range's {case} case)" if plans and plans[0].ranged else ""
    text = f"{first}: {_phrase(top['fastest'])}; cheapest by the deadline: {_phrase(top['cheapest'])}{at}."
    fewest, cheapest = top["fewest"], top["cheapest"]
    if fewest is not None and cheapest is not None and cheapest.devices > fewest.devices:
        text += f" The fewest that meet the deadline there: {_phrase(fewest)}."
    return text


def _budget_tokens(cheapest: calc.Plan | None, budget_usd: float | None) -> list[float] | None:
    """Whole tokens the budget buys on the cheapest plan's job (low, expected, high for a range)."""
    if cheapest is None or budget_usd is None or cheapest.budget is None:
        return None
    try:
        got = calc.tokens_for(cheapest.job, budget_usd)
    except calc.TrainingBudgetError as e:  # calc names its own argument, usd: the user gave --budget
        raise calc.TrainingBudgetError(f"--budget {show(budget_usd)} is out of range on the cheapest plan "
                                       f"({cheapest.device} at {cheapest.price_label}): {e}") from None
    return [float(t) for t in (got if hasattr(got, "__len__") else [got])]


def _oldest(shown: list[calc.Plan]) -> str:
    """The oldest dated price among the plans shown (a price from prices.csv can be years old, and
    the table shows no dates; --json and --csv give each plan's as_of and age)."""
    dated = [(p.budget.price_as_of, p.price_label) for p in shown
             if p.budget is not None and p.budget.price_as_of is not None]
    return "" if not dated else "; the oldest shown: {1}, as of {0}".format(*min(dated))


def plans_table(plans: list[calc.Plan], limit: int) -> list[str]:
    """The ranked plans as aligned text rows, feasible first, by cost."""
    three = " (low / expected / high)" if plans and plans[0].ranged else ""
    lines = [f"{'#':>3} {'device':40} {'price':34} {'USD/dev-h':>9} {'devices':>8} {'layout':36} "
             f"{'GiB/dev':>7}  {'days' + three:28}  {'cost USD' + three:36}  commitment USD"]
    for i, p in enumerate(plans[:limit], start=1):
        r = p.row()
        mark = "" if p.feasible else "  (not feasible: " + (p.note or "misses the deadline") + ")"
        if p.within_budget is False:
            mark += "  (over budget)"
        price = "-" if r["usd_per_device_hour"] is None else f"{r['usd_per_device_hour']:.3f}"
        gib = "-" if r["memory_per_device_gib"] is None else f"{r['memory_per_device_gib']:.1f}"
        lines.append(f"{i:>3} {r['device'][:40]:40} {r['price'][:34]:34} {price:>9} "
                     f"{'-' if r['devices'] is None else format(r['devices'], ','):>8} {_layout(r):36} {gib:>7}  "
                     f"{_three(r, 'days', _days):28}  {_three(r, 'cost_usd', _money):36}  "
                     f"{_commitment(p)}{mark}")
    if len(plans) > limit:
        lines.append(f"... {len(plans) - limit} more (--limit, or --json / --csv for all)")
    return lines


def _commitment(p: calc.Plan) -> str:
    """The commitment column: a 1- or 3-year price's total at the plan's case ("-" without one)."""
    total = p.commitment()
    if total is None:
        return "-"
    return f"{_money(total)} ({p.term_years:g}y{', committed' if p.committed else ''})"


@dataclass(frozen=True)
class Options:
    """plan's options as typed (None: not given); the click options' names are the fields."""

    model_name: str | None
    config_path: str | None
    params: float | None
    tokens: float
    days: float
    budget_usd: float | None
    device_names: tuple[str, ...]
    price: str | None
    own: str | None
    usd_per_kwh: float | None
    utilization: float | None
    as_range: bool
    goodput: float | None
    case: str | None
    node: int | None
    seq_len: int
    global_batch: int
    spot: bool
    committed: bool
    method: str
    flash_attention: bool
    catalog_path: str | None
    limit: int


def _check(o: Options) -> None:
    """Refuse options that clash, or that would change nothing (as estimate does): --case picks one of the
    prior's low / expected / high, which a given --utilization does not have; --usd-per-kwh prices --own."""
    if o.utilization is not None and o.as_range:
        raise click.UsageError("give --utilization or --range, not both")
    if o.case is not None and o.utilization is not None:
        raise calc.TrainingBudgetError(f"--case {o.case} picks a case of the prior's range; --utilization "
                                       f"{o.utilization:g} gives one case (drop --case, or --utilization for the "
                                       "prior)")
    if o.usd_per_kwh is not None and o.own is None:
        raise calc.TrainingBudgetError(f"--usd-per-kwh applies to owned hardware: give --own CAPEX,LIFE too "
                                       f"(got --usd-per-kwh {o.usd_per_kwh:g})")


def question(o: Options) -> calc.PlanQuestion:
    """The options as calc.rank_plans' question (checked when made; calc's messages name its fields)."""
    preset = model_layout.resolve(o.model_name, o.config_path)
    if preset is not None and o.params is not None:
        raise click.UsageError("give --model/--config or --params, not both")
    if preset is None and o.params is None:
        raise click.UsageError("plan needs --model NAME, --config FILE or --params COUNT")
    owned = None if o.own is None else parse_own(o.own, o.usd_per_kwh, tariff_name="--usd-per-kwh")
    asked = ("prior" if o.as_range else "step") if o.utilization is None else o.utilization
    return calc.PlanQuestion(o.tokens, o.days, params=o.params, model=preset, devices=o.device_names or None,
                             price=o.price, own=owned, utilization=asked, case=o.case or "expected", node=o.node,
                             budget_usd=o.budget_usd, goodput=o.goodput,
                             table=None if o.catalog_path is None else _table(o.catalog_path),
                             global_batch=o.global_batch, seq_len=o.seq_len, spot=o.spot, committed=o.committed,
                             method=o.method, flash_attention=o.flash_attention)


WHOLE = CountType(whole=True)  # sequences and tokens: 4096, 4k, 4,096; 1.5 refused, naming the option
_OPTIONS = (
    model_layout.MODEL, model_layout.CONFIG,
    click.option("--params", type=CountType(), default=None, help="Model parameters (7e9, 7B) when no model is named."),
    click.option("--tokens", type=CountType(), required=True, help="Training tokens: 15T, 1e12."),
    click.option("--days", type=PositiveType(), required=True, help="The deadline: days of wall-clock training."),
    click.option("--budget", "budget_usd", type=UsdType(), default=None, help="Money available, USD: 5e6, 50M."),
    click.option("--device", "device_names", multiple=True, help="Only these catalog devices (repeatable)."),
    click.option("--price", default=None, help="One price for every device: USD per device-hour, PROVIDER:PLAN "
                 "or PROVIDER:PLAN:OFFERING (one offering of `trainbudget prices`)."),
    click.option("--own", default=None, help="Owned hardware as one more option: CAPEX,LIFE (USD per device, years)."),
    click.option("--usd-per-kwh", type=NumberType(), default=None, help="Electricity tariff for --own, USD per kWh."),
    click.option("--utilization", type=UtilizationType(), default=None,
                 help="A share of the device's rate (0.4, 40%); default: the step model on each plan's layout."),
    click.option("--range", "as_range", is_flag=True,
                 help="Ranges from the published runs' prior instead of the step model."),
    click.option("--goodput", type=UtilizationType(), default=None,
                 help="Share of wall-clock time spent training (0.9, 90%); default: the prior's."),
    click.option("--case", type=click.Choice(("expected", "high")), default=None,
                 help="The range's case the deadline must hold at: expected, or high (the slow case, most hours).  "
                 "[default: expected; not with --utilization, which gives one case]"),
    click.option("--node", type=CountType(whole=True, maximum=MAX_NODE), default=None,
                 help="Device counts are multiples of this too (default: each offering's devices per instance, "
                      "prices.csv devices_per_instance; a TPU's slice shapes)."),
    click.option("--seq-len", type=WHOLE, default=calc.DEFAULT_SEQ_LEN, show_default=True,
                 help="Sequence length (tokens)."),
    click.option("--global-batch", type=WHOLE, default=calc.DEFAULT_GLOBAL_BATCH, show_default=True,
                 help=BATCH_HELP),
    click.option("--spot", is_flag=True,
                 help="Plan spot prices too (left out by default: preemption is not modelled)."),
    click.option("--committed", is_flag=True,
                 help="The capacity of 1- and 3-year prices is already committed: rank by the job's share, not the "
                      "commitment's total."),
    click.option("--method", type=click.Choice(("full", "lora", "qlora")), default="full", show_default=True,
                 help="Training method: full, or a LoRA / QLoRA fine-tune (1% adapter parameters; utilization from "
                      "the prior: the step model times full training only)."),
    model_layout.CATALOG,
    click.option("--flash-attention/--no-flash-attention", "flash_attention", default=True, show_default=True,
                 help=FLASH_HELP),
    click.option("--limit", type=CountType(whole=True, minimum=0), default=20, show_default=True,
                 help="Rows printed (text output)."),
    click.option("--json", "as_json", is_flag=True, help="Print JSON."),
    click.option("--csv", "as_csv", is_flag=True, help="Print CSV rows."),
)


@click.command()
@with_options(_OPTIONS)
def plan(as_json: bool, as_csv: bool, **given: Any) -> None:
    """Devices for a deadline on every device and price offering, at whole instances doubled from the fewest
    that meet it: the cheapest plans that fit and finish, each on the layout the step model times fastest."""
    o = Options(**given)
    _check(o)
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    try:
        q = question(o)
        plans = calc.rank_plans(q)
    except calc.TrainingBudgetError as e:  # calc names its fields: the user typed options
        raise as_typed(e) from None
    top = calc.plan_headline(plans, o.budget_usd)
    bought = _budget_tokens(top["cheapest"], o.budget_usd)  # every format: a refusal comes before any output
    if as_csv:
        rep.echo(rep.to_csv([p.row() for p in plans]), nl=False)
        return
    case = q.case
    if as_json:
        asked = {"model": None if q.model is None else q.model.name, "params": o.params, "tokens": o.tokens,
                 "days": o.days, "budget_usd": o.budget_usd, "goodput": o.goodput, "case": case, "node": o.node,
                 "seq_len": o.seq_len, "global_batch": o.global_batch, "flash_attention": o.flash_attention,
                 "spot": o.spot, "committed": o.committed, "method": o.method, "utilization": q.utilization}
        _echo_json(plans, top, asked, bought, o.budget_usd, case)
        return
    _echo_text(plans, top, bought, o.budget_usd, case, o.limit)
    rep.echo(_closing(plans[:o.limit], o.global_batch, o.seq_len, case, o.committed, o.spot))


def _echo_json(plans: list[calc.Plan], top: dict[str, Any], question: dict[str, Any], bought: list[float] | None,
               budget_usd: float | None, case: str) -> None:
    rep.echo(json.dumps({"question": question, "sentence": _sentence(plans, budget_usd, case),
                         "budget_tokens_on_cheapest": bought,
                         **{k: None if top[k] is None else top[k].row() for k in ("fastest", "cheapest", "fewest")},
                         "plans": [p.row() for p in plans]}, indent=2))


def _echo_text(plans: list[calc.Plan], top: dict[str, Any], bought: list[float] | None, budget_usd: float | None,
               case: str, limit: int) -> None:
    """The sentence, the table, what the budget buys, the notes and the utilization's basis."""
    rep.echo(_sentence(plans, budget_usd, case))
    rep.echo("\n".join(plans_table(plans, limit)))
    if bought is not None:
        shown = " / ".join(rep.format_count(t) for t in bought)
        rep.echo(f"The budget of {_money(budget_usd)} USD buys {shown} tokens"
                 + (" (low / expected / high)" if len(bought) == 3 else "")
                 + f" on the cheapest plan ({top['cheapest'].device} at {top['cheapest'].price_label}).")
    notes = sorted({p.note for p in plans if p.feasible and p.note})
    if notes:
        rep.echo("note: " + "; ".join(notes))
    if top["cheapest"] is None:
        why = sorted({p.note for p in plans if p.note}) or ["no device and price meets the deadline"]
        rep.echo("no plan: " + "; ".join(why))
    lead = top["cheapest"] or next((p for p in plans if p.budget is not None), None)
    b = None if lead is None or lead.job is None else calc.budget(lead.job)  # the basis of one plan's own job
    if b is not None:
        rep.echo(f"utilization: {b.utilization_basis}; goodput {b.goodput:.2f} ({b.goodput_basis}). "
                 "Memory per device on the layout shown (usable memory: capacity less a reserve; "
                 "devices = TP x PP x CP x DP; EP, where shown, splits the experts within DP x CP).")


def _closing(shown: list[calc.Plan], global_batch: int, seq_len: int, case: str, committed: bool, spot: bool) -> str:
    """How the plans were found and ranked, in words: prices, counts, layouts, the batch, commitments, spot."""
    paid = ("the job's share of 1- and 3-year prices (--committed: that capacity is already committed)" if committed
            else "a 1- or 3-year price's whole commitment (devices x rate x 8,760 h a year; --committed if the "
                 "capacity is already committed)")
    spot_words = ("Spot prices: planned (--spot) with no preemption penalty: the goodput is the on-demand one, so "
                  "spot plans are optimistic." if spot else
                  "Spot prices: left out (preemption is not modelled; --spot plans them with no preemption penalty).")
    return ("Prices are each provider's published rate as of its date (trainbudget prices"
            f"{_oldest(shown)}); feasible plans first, by what the team pays at the {case} case: the "
            f"cost, or {paid}; then the fewest devices. Counts planned: whole instances of each offering doubled "
            "(instance x 2^k, so every parallel size is a power of two; single-device offerings only for one device; "
            f"TPUs in the slice shapes sold, then the largest doubled), from the fewest that meet the deadline up to "
            f"{calc.max_plan_devices():,.0f} (the most devices of a published run), each on the layout the step model "
            "times fastest among those that fit (fit's memory order where it cannot time the device) at a global "
            f"batch of {global_batch:,} sequences x {seq_len:,} tokens = {global_batch * seq_len:,} tokens per step "
            "(data parallel x micro-batch x accumulation = the global batch, accumulation whole), and costed by "
            "the step model on that layout, so cost rises with the count where efficiency falls; a count that "
            "costs more than a larger one is left out: more devices never cost less.\n" + spot_words)
