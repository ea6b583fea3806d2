"""Native-Excel pieces of the job-keyed utilization prior (calc.prior.job_prior), written once here.

The prior is a closed form a spreadsheet computes with EXP, LOG10, LEFT, UPPER, IF and OR only
(no lookup table, no array idiom, nothing the e-mail copy must rewrite):
    log u = Prior_intercept + family effect + Prior_params·(LOG10(active) − 10)
            + Prior_devices·(LOG10(devices) − 3) + Prior_moe·MoE + Prior_tokens·(LOG10(tokens/active) − 2)
    expected = EXP(log u); low = expected·EXP(band low); high = expected·EXP(band high)
The family effect is read off the device's Hardware text by calc.prior.FAMILIES' prefixes (a small
sourced table on the Budget sheet: prefix, effect, family; MATCH of LEFT(hardware, n) for each
prefix length n, longest first, which is calc's first-match order), so a user's measured Devices
row is read as calc reads it; no match: the runs' mean effect and the wider band (calc: unknown). The numbers are the
defined names of `coefficient_rows()` (calc.prior.coefficients(), a sheet writes them as sourced
constant cells). Devices for a deadline, with utilization ∝ devices^b (b = Prior_devices / LN(10)):
n = ROUNDUP((device-hours at one device and its utilization / (24 · days))^(1 / (1 + b))), as
calc.plan.devices_for's closed form.
"""

from __future__ import annotations

import math

from ...calc import prior
from . import native

PREFIX = "Prior_"
EXACT = "(1-1E-12)"


def _effect_name(family: str) -> str:
    return f"{PREFIX}fx_{family}"


def coefficient_rows() -> list[tuple[str, float, str]]:
    """(defined name, value, note) of every number the native prior reads."""
    c = prior.coefficients()
    source = (f"calc.prior.coefficients(): ridge fit over {c.n_runs} published runs (Runs sheet); "
              "bench/backtest.py scores it")
    rows = [(f"{PREFIX}intercept", c.intercept, f"log utilization at 10B active, 1,000 devices, dense, "
                                                f"100 tokens/param, Ampere; {source}"),
            (f"{PREFIX}params", c.params, "per decade of active parameters (log10 active - 10)"),
            (f"{PREFIX}devices", c.devices, "per decade of devices (log10 devices - 3)"),
            (f"{PREFIX}moe", c.moe, "a mixture of experts (fewer active than total parameters)"),
            (f"{PREFIX}tokens", c.tokens, "per decade of tokens per active parameter (log10 - 2)"),
            (f"{PREFIX}band_low", c.band_low, "log of low / expected: leave-one-out residuals' lower percentile "
                                              "at 0.85 (1 + 1/n)"),
            (f"{PREFIX}band_high", c.band_high, "log of high / expected: the upper percentile"),
            (f"{PREFIX}band_low_unknown", c.band_low_unknown, "the same, device family unknown"),
            (f"{PREFIX}band_high_unknown", c.band_high_unknown, "the same, device family unknown"),
            (f"{PREFIX}fx_unknown", c.unknown_family, "family effect where the hardware matches no family "
                                                      "(the runs' mean)")]
    model = prior._packaged(prior.GOODPUT)
    for fam, effect in c.family:
        level = model.level(fam)
        note = f"{prior.NAMES[fam]}: log utilization vs Ampere" + (
            "" if level == fam else f" (no runs: as {prior.NAMES[level]})")
        rows.append((_effect_name(fam), effect, note))
    return rows


TAIL = prior.BASIS_TAIL   # how calc's basis line ends


def hardware_or_name(hardware: str, name: str) -> str:
    """The text the family is read from: the row's Hardware, else its name (calc.prior.family)."""
    return f'IF({hardware}="",{name},{hardware})'


PREFIXES = f"{PREFIX}pfx"                # the prefix table's columns (defined names of A1 ranges)
PREFIX_EFFECTS = f"{PREFIX}pfx_fx"
PREFIX_FAMILIES = f"{PREFIX}pfx_family"


def prefix_lengths() -> tuple[int, ...]:
    """The prefixes' lengths, longest first. Longest-first matching is calc.prior.family's
    first-match-wins order on FAMILIES (tests/test_libreoffice_prior.py checks it)."""
    return tuple(sorted({len(p) for p, _ in prior.FAMILIES}, reverse=True))


def prefix_rows() -> list[tuple[str, float, str]]:
    """(prefix, family effect, how the basis names the family) for each of calc.prior.FAMILIES."""
    c, model = prior.coefficients(), prior._packaged(prior.GOODPUT)
    rows = []
    for prefix, fam in prior.FAMILIES:
        level = model.level(fam)
        name = prior.NAMES[fam] if level == fam else f"{prior.NAMES[fam]} (no runs; as {prior.NAMES[level]})"
        rows.append((prefix, c.effect(fam), name))
    return rows


def _matches(hardware: str, lengths: tuple[int, ...], otherwise: str) -> str:
    formula = otherwise
    for n in reversed(lengths):
        formula = f"IFERROR(MATCH(LEFT({hardware},{n}),{PREFIXES},0),{formula})"
    return formula


def prefix_position_long(hardware: str) -> str:
    """Position in the prefix table of the longest prefixes (the first half of the lengths) that
    `hardware` starts with; 0: none of those."""
    lengths = prefix_lengths()
    return _matches(hardware, lengths[:len(lengths) // 2], "0")


def prefix_position(hardware: str, long: str) -> str:
    """Position of the longest prefix `hardware` starts with, given prefix_position_long in `long`; 0: none."""
    lengths = prefix_lengths()
    return f"IF({long}>0,{long},{_matches(hardware, lengths[len(lengths) // 2:], '0')})"


def positions(hardware: str) -> tuple[int, int]:
    """What prefix_position_long and prefix_position give for the text `hardware` (cached values)."""
    lengths = prefix_lengths()
    texts = [p.upper() for p, _ in prior.FAMILIES]
    def first(ns: tuple[int, ...]) -> int:
        for n in ns:
            if hardware[:n].upper() in texts:
                return texts.index(hardware[:n].upper()) + 1
        return 0
    long = first(lengths[:len(lengths) // 2])
    return long, long or first(lengths[len(lengths) // 2:])


def family_effect(position: str) -> str:
    """The family's effect at the prefix position (0: the runs' mean)."""
    return f"IF({position}>0,INDEX({PREFIX_EFFECTS},{position}),{PREFIX}fx_unknown)"


def family_label(position: str, device: str) -> str:
    """How calc's basis names the family (calc.prior._basis): "Hopper", "Blackwell (no runs; as
    Hopper)", or "Published (family of <device> unknown)"."""
    return f'IF({position}>0,INDEX({PREFIX_FAMILIES},{position}),"Published (family of "&{device}&" unknown)")'


# The basis line's decades and units: calc.prior's (_SIZES for parameters, thousands for devices
# and tokens per parameter), each unit as (power of ten, suffix), largest first.
SIZE_UNITS = tuple((round(math.log10(scale)), suffix) for scale, suffix in prior._SIZES)
COUNT_UNITS = ((3, "k"),)
SPAN_KEYS = (("params", "active", SIZE_UNITS), ("devices", "devices", COUNT_UNITS),
             ("tokens/param", "tokens_per_param", COUNT_UNITS))
SLACK = (0.999, 1.001)   # calc.prior._beyond: a figure within 0.1% of the runs' span is inside it


def _span_name(key: str, end: str) -> str:
    return f"{PREFIX}span_{key}_{end}"


def span_rows() -> list[tuple[str, float, str]]:
    """(defined name, value, note) of the runs' spans (calc.prior._spans: the least and the most of
    the fitted runs' active parameters, devices and tokens per active parameter)."""
    spans = prior._spans(prior.GOODPUT)
    rows = []
    for key, name, _ in SPAN_KEYS:
        lo, hi = spans[key]
        rows += [(_span_name(name, "low"), lo, f"the fewest {key} of the fitted runs (the basis says when a job "
                                               "lies outside)"),
                 (_span_name(name, "high"), hi, f"the most {key} of the fitted runs")]
    return rows


def _at_least_one(m: str) -> str:
    """10^m for a whole m >= 0 as Python's format "g" writes it: "1" to "100000", then "1e+06"."""
    return f'IF({m}>=6,"1e+"&TEXT({m},"00"),10^{native.wrap(m)}&"")'


def _below_one(m: str) -> str:
    """10^m for a whole m below 0 as format "g" writes it, in text (Gnumeric's 10^-2 is not 0.01
    exactly, and it shows every digit): "0.1" to "0.0001", then "1e-05"."""
    return f'IF({m}<-4,"1e-"&TEXT(-{native.wrap(m)},"00"),"0."&REPT("0",-{native.wrap(m)}-1)&"1")'


def _power_text(k: str, units: tuple[tuple[int, str], ...]) -> str:
    """10^k as calc.prior._scaled writes it: in the largest unit it reaches ("10B", "1k", "100")."""
    formula = f"IF({k}<0,{_below_one(k)},{_at_least_one(k)})"   # below the smallest unit (units start at >= 1e3)
    for power, suffix in reversed(units):
        formula = f'IF({k}>={power},{_at_least_one(f"{k}-{power}")}&"{suffix}",{formula})'
    return formula


def decade(value: str, units: tuple[tuple[int, str], ...], unit: str = "") -> str:
    """The decade `value` lies in, as calc.prior._decade: "10B-100B", "1k-10k devices"
    (10^INT(LOG10(value)) to ten times that; INT rounds down, as math.floor)."""
    k = f"INT(LOG10({native.wrap(value)}))"
    return f'{_power_text(k, units)}&"-"&{_power_text(f"({k}+1)", units)}&"{unit}"'


def beyond(active: str, devices: str, tokens: str) -> str:
    """calc.prior._beyond: ' (extrapolated: the runs span 16-16k devices, ...)' naming each figure of
    the job outside the runs' spans (the named Prior_span_* constants), else ''. No TEXTJOIN: each
    piece starts with ", " and MID drops the first."""
    values = {"active": native.wrap(active), "devices": native.wrap(devices),
              "tokens_per_param": f"{native.wrap(tokens)}/{native.wrap(active)}"}
    spans = prior._spans(prior.GOODPUT)
    outside, pieces = [], []
    for key, name, units in SPAN_KEYS:
        v = values[name]
        lo, hi = spans[key]
        words = (f"{prior._scaled(lo, _scales(units), '.2g')}-{prior._scaled(hi, _scales(units), '.2g')} {key}")
        test = (f"OR({v}<{_span_name(name, 'low')}*{SLACK[0]!r},{v}>{_span_name(name, 'high')}*{SLACK[1]!r})")
        outside.append(test)
        pieces.append(f'IF({test},", {words}","")')
    return (f'IF(OR({",".join(outside)})," (extrapolated: the runs span "&MID({"&".join(pieces)},3,999)&")","")')


def _scales(units: tuple[tuple[int, str], ...]) -> tuple[tuple[float, str], ...]:
    return tuple((10.0 ** power, suffix) for power, suffix in units)


def basis(family: str, active: str, devices: str, tokens: str, moe: str) -> str:
    """The basis line, as calc.prior.job_prior writes it for one job: "Hopper dense runs of 10B-100B
    on 1k-10k devices, 100-1k tokens/param: <tail>", with calc's extrapolation note where the job
    lies outside the runs. `moe`: 1 for a mixture of experts, else 0."""
    tail = TAIL.format(n=prior.coefficients().n_runs)
    return (f'{family}&IF({native.wrap(moe)}=1," MoE"," dense")&" runs of "&{decade(active, SIZE_UNITS)}'
            f'&" on "&{decade(devices, COUNT_UNITS, " devices")}'
            f'&", "&{decade(f"{native.wrap(tokens)}/{native.wrap(active)}", COUNT_UNITS, " tokens/param")}'
            f'&{beyond(active, devices, tokens)}&": {tail}"')


def log_expected(effect: str, active: str, devices: str, tokens: str, moe: str = "0") -> str:
    """log u of the job (calc.prior.job_prior's sum, in its order)."""
    a = native.wrap(active)
    return (f"{PREFIX}intercept+{native.wrap(effect)}+{PREFIX}params*(LOG10({a})-10)"
            f"+{PREFIX}devices*(LOG10({native.wrap(devices)})-3)+{PREFIX}moe*{native.wrap(moe)}"
            f"+{PREFIX}tokens*(LOG10({native.wrap(tokens)}/{a})-2)")


def expected(effect: str, active: str, devices: str, tokens: str, moe: str = "0") -> str:
    """Expected utilization: EXP(log u)."""
    return f"EXP({log_expected(effect, active, devices, tokens, moe)})"


def edge(expected_util: str, position: str, case: str) -> str:
    """The band's `case` ("low" or "high") edge: expected times EXP of the band's constant (the
    wider one where the family prefix `position` is 0: unknown)."""
    return (f"{native.wrap(expected_util)}*EXP(IF({position}>0,{PREFIX}band_{case},"
            f"{PREFIX}band_{case}_unknown))")


def devices_exponent() -> str:
    """b in utilization ∝ devices^b."""
    return f"({PREFIX}devices/LN(10))"


def devices_for_days(hours_one_device_at_100: str, utilization: str, devices: str, goodput: str, days: str) -> str:
    """Fewest devices finishing within `days` when `utilization` (at `devices`) scales as devices^b:
    n = ROUNDUP((H1 · devices^b / (u · goodput · 24 · days))^(1/(1+b))), H1 the hours on one device
    at 100%; at least 1 (calc.plan.devices_for)."""
    b = devices_exponent()
    k = f"{native.wrap(hours_one_device_at_100)}*{native.wrap(devices)}^{b}"
    return (f"MAX(ROUNDUP(({k}/({native.wrap(utilization)}*{native.wrap(goodput)}*24*{native.wrap(days)}))"
            f"^(1/(1+{b}))*{EXACT},0),1)")


def tokens_exponent() -> str:
    """c in utilization ∝ tokens^c at fixed parameters."""
    return f"({PREFIX}tokens/LN(10))"


def tokens_for_budget(usd: str, cost_at_tokens: str, tokens: str) -> str:
    """Most whole tokens `usd` buys when `cost_at_tokens` (the cost of `tokens` tokens at the prior's
    utilization there) grows as tokens^(1 - c): INT(tokens · (usd / cost)^(1/(1 - c))), as
    calc.plan.tokens_for's closed form (INT: see plan_native.tokens_for_budget)."""
    c = tokens_exponent()
    return f"INT({native.wrap(tokens)}*({native.wrap(usd)}/{native.wrap(cost_at_tokens)})^(1/(1-{c})))"
