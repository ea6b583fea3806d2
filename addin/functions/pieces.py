"""The sheets' formula pieces: every formula the template's Budget, Scenarios and blocks write that is
not a registry function, each written once here over named cells (the sheet builders type none).

The registry (registry.py) holds the Excel functions; native.py the pieces they are made of; this
module composes the sheets' own rows from both: memory parts by ZeRO stage, the one price rule,
money in the chosen currency, the comparison's rows. Units as in calc: bytes, GB = 1E9 bytes where
a label says GB, device memory in GiB.
"""

from __future__ import annotations

from typing import NamedTuple

from . import input_pieces, native

NO_PRICE = "no price"  # a cost without a price: never the typed cloud price for another device
NO_WATTS = "no watts"  # an energy without the device row's board power (the command line's word)
TYPED = "typed price"
ROW_PRICE = "device row's price"


def blank_if(ref: str, formula: str) -> str:
    """`formula`, or blank where `ref` is blank (a spare row, an empty plan)."""
    return f'IF({ref}="","",{formula})'


def in_gb(bytes_expr: str) -> str:
    """Bytes as GB (1E9 bytes), for rows labelled GB."""
    return f"({bytes_expr})/{native.GB}"


def gb_to_bytes(gb_expr: str) -> str:
    return f"{native.wrap(gb_expr)}*{native.GB}"


def by_stage(values: dict[str, str], zero_stage: str, sharded: bool) -> str:
    """The sum of the model-state parts (values: part -> expression) that ZeRO `zero_stage` shards
    over the devices (`sharded`), or that it leaves whole on every device (ZeRO §5, native.PARTS)."""
    keep, drop = ("{v}", "0") if sharded else ("0", "{v}")
    return "+".join(f"IF({zero_stage}>={stage},{keep},{drop})".format(v=values[p])
                    for p, (_, stage) in native.PARTS.items())


def per_device(value: str, part: str, zero_stage: str, devices: str) -> str:
    """A part's share on one device: divided over the devices from its ZeRO stage on."""
    return f"{native.wrap(value)}/IF({zero_stage}>={native.PARTS[part][1]},{devices},1)"


def total(values: list[str]) -> str:
    return "+".join(values)


def days(hours: str) -> str:
    return f"{native.wrap(hours)}/24"


def times(a: str, b: str) -> str:
    return f"{native.wrap(a)}*{native.wrap(b)}"


def at_utilization(hours_at_100: str, utilization: str) -> str:
    """Hours at 100% of the rate divided by the utilization reached (calc.train_range)."""
    return f"{native.wrap(hours_at_100)}/{native.wrap(utilization)}"


def energy_kwh(watts: str, device_hours: str, pue: str) -> str:
    """kWh: board watts x device-hours x PUE / 1000, as TRAIN_ENERGY_KWH (calc.train_energy_kwh)."""
    return f"{native.wrap(watts)}*{native.wrap(device_hours)}*{native.wrap(pue)}/1000"


def priced(price: str, formula: str) -> str:
    """`formula` (a figure that needs a price), or "no price" where `price` is not a number."""
    return f'IF(ISNUMBER({price}),{formula},"{NO_PRICE}")'


def with_watts(watts: str, formula: str) -> str:
    """`formula` (an energy), or "no watts" where the device row has no board power (`watts` #N/A)."""
    return f'IF(ISNUMBER({watts}),{formula},"{NO_WATTS}")'


def row_price(device: str) -> str:
    """The Devices row's own price (USD per device-hour), blank where the row has none."""
    return f'IFERROR({native.lookup(device, "usd_per_device_hour")},"")'


def own_price(name: str) -> str:
    """The price cell of a name taken from the Devices table itself (blank: the row has none)."""
    return f"INDEX({native.column('usd_per_device_hour')},MATCH({name},{native.NAMES},0))"


def named_row_price(device: str) -> str:
    """The own price of the Devices row named `device` (a name the sheet validates), blank where
    the row has none: row_price without its IFERROR, short enough to nest."""
    return f'IF({own_price(device)}="","",{own_price(device)})'


class PriceCells(NamedTuple):
    """The four cells the price rule reads: the provider chosen, its price found, the number typed and
    the device row's own price (each a cell reference or expression)."""

    provider: str
    found: str
    typed: str
    own: str


def price_rule(cells: PriceCells, *, provider_price: str, provider_missing: str, typed_price: str, own_price: str,
               no_price: str) -> str:
    """The one price rule, written once: which of the four prices a cell takes, giving for each case the
    expression it shows (the price itself in `price_used`, whose price it is in `price_source`):
    a provider chosen -> its price found (`provider_price`) or none (`provider_missing`); else a
    number typed -> `typed_price`; else the device row's own price (`own_price`), or `no_price` where
    the row has none. As calc's schedule.price_per_device_hour: a given price wins, else the row's."""
    provider, found, typed, own = cells
    return (f'IF({provider}<>"",IF({found}="",{provider_missing},{provider_price}),'
            f'IF(ISNUMBER({typed}),{typed_price},IF({own}="",{no_price},{own_price})))')


def price_used(provider: str, found: str, typed: str, own: str) -> str:
    """The price the one rule (price_rule) takes, USD per device-hour, or "no price"."""
    return price_rule(PriceCells(provider, found, typed, own), provider_price=found,
                      provider_missing=f'"{NO_PRICE}"', typed_price=typed, own_price=own, no_price=f'"{NO_PRICE}"')


def price_source(provider: str, spec: str, found: str, typed: str, own: str) -> str:
    """Whose price `price_used` took, in words: the same rule (price_rule), each case named (a
    provider's by its spec, "runpod:on_demand price")."""
    return price_rule(PriceCells(provider, found, typed, own), provider_price=f'{spec}&" price"',
                      provider_missing=f'"no "&{provider}&" price for it"', typed_price=f'"{TYPED}"',
                      own_price=f'"{ROW_PRICE}"', no_price=f'"{NO_PRICE}"')


def price_note(source: str) -> str:
    return f'"price: "&{source}'


def cost(device_hours: str, price: str, rate: str = "USD_rate") -> str:
    """Device-hours times the price, in the chosen currency; "no price" without one."""
    return f'IF(ISNUMBER({price}),{native.wrap(device_hours)}*{price}*{rate},"{NO_PRICE}")'


def money(formula: str) -> str:
    """A money figure, or the currency rate's refusal (Rate_error: input_checks) while it is refused."""
    return input_pieces.unless_error(formula, input_pieces.RATE_ERROR)


def compare_rule(name: str, chosen: str, own: str, *, chosen_value: str, own_value: str, no_price: str) -> str:
    """A comparison row's price rule, written once: the chosen device's row takes what the results
    show (`chosen_value`); any other row its own price (`own_value`), else `no_price` (a typed price
    is a price for the chosen device only)."""
    return f'IF({name}={chosen},{chosen_value},IF({own}="",{no_price},{own_value}))'


def compare_price(name: str, chosen: str, used: str, own: str) -> str:
    """A comparison row's price (compare_rule): the price the results use, or the row's own."""
    return compare_rule(name, chosen, own, chosen_value=used, own_value=own, no_price=f'"{NO_PRICE}"')


def compare_source(name: str, chosen: str, source: str, own: str) -> str:
    """Whose price compare_price took, in words (compare_rule)."""
    return compare_rule(name, chosen, own, chosen_value=source, own_value=f'"{ROW_PRICE}"', no_price=f'"{NO_PRICE}"')


def nth_name(k: int) -> str:
    """The k-th name of the Devices table, blank past its end (the comparison's spare rows)."""
    return f'IF({k}>ROWS({native.NAMES}),"",INDEX({native.NAMES},{k}))'


def with_currency(label: str) -> str:
    """A label naming the chosen currency: "Cost (EUR)"."""
    return f'"{label} ("&Currency&")"'


def implied_note(utilizations: str) -> str:
    """The note beside the Budget's utilization: the range the published runs imply."""
    return (f'"published runs imply "&TEXT(MIN({utilizations}),"0%")&"-"'
            f'&TEXT(MAX({utilizations}),"0%")&" (Runs sheet)"')


def product(values: list[str]) -> str:
    return "*".join(native.wrap(v) for v in values)


def ratio(a: str, b: str) -> str:
    return f"{native.wrap(a)}/{native.wrap(b)}"


def first_given(preferred: str, fallback: str) -> str:
    """`preferred` where it is filled in, else `fallback` (a run's active parameters, else its total)."""
    return f'IF({preferred}="",{fallback},{preferred})'


def cell_of_table(call: str, row: int, col: int) -> str:
    """One cell of a spilling table's result."""
    return f"INDEX({call},{row},{col})"


def or_text(formula: str, message: str) -> str:
    """`formula`, or `message` where it errs (an add-in call in a spreadsheet without the add-in)."""
    return f'IFERROR({formula},"{message}")'


def free_gb(memory_gib: str, total_gb: str) -> str:
    """GB left on a device of `memory_gib` GiB (2^30 bytes each) after `total_gb` GB (1E9 bytes)."""
    return f"{native.wrap(memory_gib)}*{native.GIB}/{native.GB}-{native.wrap(total_gb)}"


# --- Devices-table fields and the prior's row (calc.prior_device) ---------------------------

def field(device: str, name: str) -> str:
    """A text field (Hardware, Kind, Precision) of the Devices row named `device`."""
    return f"INDEX({native.column(name)},MATCH({device},{native.NAMES},0))"


def prior_row(hardware: str, kind: str, sixteen_bit: tuple[str, ...]) -> str:
    """Position in Devices of the first 16-bit row of `hardware` and `kind` (>= 1E9: none)."""
    names = native.column("name")
    sixteen = "*".join(f'({native.column("precision")}<>"{p}")' for p in sixteen_bit)
    return (f"SUMPRODUCT(MIN(ROW({names})-MIN(ROW({names}))+1+1E9*(({native.column('hardware')}<>{hardware})"
            f"+({native.column('kind')}<>{kind})+{sixteen}>0)))")


def prior_name(device: str, kind: str, precision: str, row: str, sixteen_bit: tuple[str, ...]) -> str:
    """The device row the prior applies to (calc.prior_device): the row itself when it is
    measured, 16-bit, or has no 16-bit sibling; else the same hardware's first 16-bit row."""
    keep = ",".join([f'{kind}="measured"', *(f'{precision}="{p}"' for p in sixteen_bit), f"{row}>=1E9"])
    return f"IF(OR({keep}),{device},INDEX({native.NAMES},{row}))"


# --- the Prices table (calc.lookup_price: the newest row publishing the plan, then the cheapest) ---

def plan_column(plan: str) -> str:
    """The plan's position among the price columns (1 on-demand ... 4 spot) for its name or an alias,
    any case, spaces read as "_" (calc.plan_name), from the Prices sheet's Plan_names and
    Plan_columns (prices_sheet.PLAN_NAMES); #N/A for none."""
    return f'INDEX(Plan_columns,MATCH(SUBSTITUTE(TRIM({plan})," ","_"),Plan_names,0))'


def age_days(today: str, as_of: str) -> str:
    """A price's age in days at the date `today` names; blank while that date is cleared."""
    return f'IF({today}="","",{today}-{as_of})'


# --- the Scenarios sheet's plan column (calc.scenario_plan_row over calc.budget) ------------------------

def plan_price_used(price: str, found: str, own: str) -> str:
    """A plan's price: the number typed, else the provider's (none found: #N/A); blank: `own`, the
    chosen device row's own price (blank where it has none), as calc.price_spec's None."""
    return f'IF({price}="",{own},IF(ISNUMBER({price}),{price},IF({found}="",NA(),{found})))'


def row_used(utilization: str, device: str, prior: str) -> str:
    """The device row a plan uses: its own at a given utilization, the prior's row for "prior"."""
    return f"IF(ISNUMBER({utilization}),{device},{prior})"


def plan_hours(hours_100: str, utilization: str, prior_util: str, ranged_only: bool, device: str) -> str:
    """A plan's hours: at its utilization, or the prior's (times goodput); the low and high rows
    only for "prior" plans."""
    if ranged_only:
        return f'IF(OR({device}="",ISNUMBER({utilization})),"",{hours_100}/({prior_util}*Goodput))'
    return f'IF({device}="","",{hours_100}/IF(ISNUMBER({utilization}),{utilization},{prior_util}*Goodput))'


def unless_blank(refs: list[str], formula: str) -> str:
    """`formula`, or blank where any of `refs` is blank."""
    if len(refs) == 1:
        return blank_if(refs[0], formula)
    return f'IF(OR({",".join(f"{r}=" + chr(34) * 2 for r in refs)}),"",{formula})'


def or_blank(formula: str) -> str:
    return f'IFERROR({formula},"")'


# --- the layout block -----------------------------------------------------------------------------

def layout_check(devices: str, tp: str, pp: str, dp: str, ep: str, heads: str, stage_scale: str) -> str:
    """Whether the layout divides: devices by TP x PP, data parallel by EP, heads by TP; pipeline
    stages may be uneven (layers not divided by PP, `stage_scale` = busiest_scale above 1: 80 on 3
    is 26/27/27, calc.physics.stages), said as "uneven stages" (memory per device is then the largest's)."""
    return (f"IF(MOD({devices},{tp}*{pp})+MOD({dp},{ep})+MOD({heads},{tp})>0,"
            f'"does not divide",IF({stage_scale}>1,"{UNEVEN}","divides"))')


UNEVEN = "uneven stages"


def busiest_stage_params(params: str, stage_params: str, scale: str) -> str:
    """Parameters as if every pipeline stage held the busiest stage's ROUNDUP(layers / PP) layers
    (the first-stage `stage_params` whole; `scale` is busiest_scale), so that the even split gives
    that stage's share: calc.busiest_params."""
    return f"{native.wrap(stage_params)}+({native.wrap(params)}-{native.wrap(stage_params)})*{native.wrap(scale)}"


def busiest_scale(layers: str, pp: str) -> str:
    """ROUNDUP(layers / PP) · PP / layers (calc.busiest_scale): 1 where PP divides the layers."""
    return f"(ROUNDUP({layers}/{pp},0)*{pp}/{layers})"


def params_note(arch: str, params: str) -> str:
    """Beside the Params input: what the architecture gives, and whether Params matches it."""
    return (f'"from the architecture below: "&TEXT({arch},"#,##0")'
            f'&IF(ABS({arch}-{params})<=0.005*{params}," (matches)"," (copy it here to use it)")')


def active_used(active: str, params: str) -> str:
    """The parameters FLOPs, hours and the prior read: `active` (a mixture of experts' active
    parameters), blank: all `params` (dense); more than `params`: #N/A (calc refuses
    active_params > params, calc.train_flops)."""
    return f'IF({active}="",{params},IF({active}>{params},NA(),{active}))'


def moe_flag(active: str, params: str) -> str:
    """1 for a mixture of experts (fewer active than total parameters, calc.budget's MoE rule), else 0."""
    return f"IF({active}<{params},1,0)"


def prior_caveat(flops_per_token: str, caveats: dict[float, str]) -> str:
    """The basis line's caveat for the job's FLOPs per parameter-token (`flops_per_token`), calc.budget's
    PRIOR_CAVEATS: `caveats[k]` where it is k (inference's forward pass, LoRA's step through frozen
    weights), else "" (a full training step: the runs the prior is fitted on)."""
    expr = '""'
    for k, words in reversed(caveats.items()):
        expr = f'IF({flops_per_token}={native.fold.literal(k)},"{words}",{expr})'
    return expr


# --- notes beside the Results -------------------------------------------------------------------

GOODPUT_NOTE = "goodput not counted here (restarts, failures): the ranges count it"  # one note line (66)


def band_note(utilization: str, low: str, high: str) -> str:
    """Beside the Results: where the typed `utilization` lies outside the ranges' `low`-`high` band
    (the published runs like this job, or the step model's), that it does; else blank."""
    band = f'TEXT({low},"0%")&"-"&TEXT({high},"0%")'
    outside = f'TEXT({utilization},"0%")&" is outside the ranges\' "&{band}&" (below)"'
    return or_blank(f'IF(OR({utilization}<{low},{utilization}>{high}),{outside},"")')


def is_text(ref: str, words: str) -> str:
    """TRUE where `ref` holds `words` (Excel compares text without case)."""
    return f"{ref}={native.fold.literal(words)}"


def either(test: str, if_true: str, otherwise: str) -> str:
    """`if_true` where `test` holds, else `otherwise` (two named cells or texts: the Budget's ranges basis)."""
    return f"IF({test},{if_true},{otherwise})"


def share_of_run(hours_100: str, run_hours: str, goodput: str) -> str:
    """The utilization whose hours are a whole run's: hours at 100% / (run hours x goodput)."""
    return f"{hours_100}/({run_hours}*{goodput})"


def step_words(seconds: str, mfu: str, head: str, tail: str) -> str:
    """'<head>: step 72.90 s, 40% MFU<tail>': a step's seconds and MFU in the ranges' basis line."""
    text = native.fold.literal
    return f'{text(head + ": step ")}&TEXT({seconds},"0.00")&" s, "&TEXT({mfu},"0%")&{text(tail)}'


def step_applies(choice: str, method: str, arch: tuple[str, str], params: tuple[str, str], run_hours: str,
                 layout: str) -> str:
    """The ranges come from the step model: `choice` holds, the job trains all its weights (`method` full:
    the step block times a full training step), the architecture is the job's model (its total and active
    parameters, `arch`, within the 0.5% params_note calls a match of `params`, the job's), its whole run
    is a number and the step model takes its layout (`layout`: layout_pieces.step_layout_taken; the step block's
    arithmetic gives a number on layouts calc refuses, so the number alone does not say it)."""
    same = ",".join(f"ABS({a}-{p})<=0.005*{p}" for a, p in zip(arch, params, strict=True))
    return f'AND({choice},{method}="full",{same},ISNUMBER({run_hours}),{layout})'


def unused_words(chosen: str, other: str, words: str, why: str) -> str:
    """`words`, and `why` where the step model was `chosen` but does not apply; where neither it nor
    `other` (the published runs' choice) was chosen, that the choice is not one of the two."""
    return (f'{native.fold.literal(words)}&IF({chosen},{native.fold.literal(why)},'
            f'IF({other},"",": Ranges from not a choice"))')
