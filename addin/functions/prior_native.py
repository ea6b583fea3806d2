"""Native-Excel pieces of the job-keyed utilization prior (calc.job_prior), written once here.

The prior is a closed form a spreadsheet computes with EXP, LOG10, LEFT, UPPER, IF and OR only
(no lookup table, no array idiom, nothing the e-mail copy must rewrite):
    log u = Prior_intercept + family effect + Prior_params·(LOG10(active) − 10)
            + Prior_devices·(LOG10(devices) − 3) + Prior_moe·MoE + Prior_tokens·(LOG10(tokens/active) − 2)
    expected = MIN(1, EXP(log u)); low = MIN(1, expected·EXP(band low)); high = MIN(1, expected·EXP(band high))
(no run exceeds 100% of the peak: calc.UtilizationPrior caps the same way)
The family effect is read off the device's Hardware text by calc.FAMILIES' prefixes (a small
sourced table on the Budget sheet: prefix, effect, family; MATCH of LEFT(hardware, n) for each
prefix length n, longest first, which is calc's first-match order), so a user's measured Devices
row is read as calc reads it; no match: the runs' mean effect and the wider band (calc: unknown). The numbers are the
defined names of `coefficient_rows()` (calc.prior_coefficients(), a sheet writes them as sourced
constant cells). Devices for a deadline, with utilization ∝ devices^b (b = Prior_devices / LN(10)):
n = ROUNDUP((device-hours at one device and its utilization / (24 · days))^(1 / (1 + b))), as
calc.devices_for's closed form.
"""

from __future__ import annotations

from ... import calc
from . import native

PREFIX = "Prior_"
EXACT = "(1-1E-12)"


def _effect_name(family: str) -> str:
    return f"{PREFIX}fx_{family}"


def coefficient_rows() -> list[tuple[str, float, str]]:
    """(defined name, value, note) of every number the native prior reads."""
    c = calc.prior_coefficients()
    source = (f"calc.prior_coefficients(): ridge fit over {c.n_runs} published runs (Runs sheet); "
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
    model = calc.packaged_prior(calc.GOODPUT)
    for fam, effect in c.family:
        level = model.level(fam)
        note = f"{calc.FAMILY_NAMES[fam]}: log utilization vs Ampere" + (
            "" if level == fam else f" (no runs: as {calc.FAMILY_NAMES[level]})")
        rows.append((_effect_name(fam), effect, note))
    return rows


TAIL = calc.PRIOR_BASIS_TAIL   # how calc's basis line ends


def hardware_or_name(hardware: str, name: str) -> str:
    """The text the family is read from: the row's Hardware, else its name (calc.family)."""
    return f'IF({hardware}="",{name},{hardware})'


PREFIXES = f"{PREFIX}pfx"                # the prefix table's columns (defined names of A1 ranges)
PREFIX_EFFECTS = f"{PREFIX}pfx_fx"
PREFIX_FAMILIES = f"{PREFIX}pfx_family"


def prefix_lengths() -> tuple[int, ...]:
    """The prefixes' lengths, longest first. Longest-first matching is calc.family's
    first-match-wins order on FAMILIES (tests/workbook/test_prior_native.py checks it)."""
    return tuple(sorted({len(p) for p, _ in calc.FAMILIES}, reverse=True))


def prefix_rows() -> list[tuple[str, float, str]]:
    """(prefix, family effect, how the basis names the family) for each of calc.FAMILIES."""
    c, model = calc.prior_coefficients(), calc.packaged_prior(calc.GOODPUT)
    rows = []
    for prefix, fam in calc.FAMILIES:
        level = model.level(fam)
        names = calc.FAMILY_NAMES
        name = names[fam] if level == fam else f"{names[fam]} (no runs; as {names[level]})"
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
    texts = [p.upper() for p, _ in calc.FAMILIES]
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
    """How calc's basis names the family (calc.basis_text): "Hopper", "Blackwell (no runs; as
    Hopper)", or "Published (family of <device> unknown)"."""
    return f'IF({position}>0,INDEX({PREFIX_FAMILIES},{position}),"Published (family of "&{device}&" unknown)")'


# The basis line (calc.job_prior's, one job): "<family> <dense|MoE> runs of <decade> on
# <decade> devices, <decade> tokens/param<extrapolation note>: <tail>", in cells of at most 200
# characters (tests/addin/functions/test_readable.py). A decade is 10^INT(LOG10(x)) to ten times that (INT rounds
# down, as math.floor); its text is read off a table calc's own formatter wrote (calc._decade,
# one row per decade exponent), so every engine shows calc's text ("10B-100B", "1k-10k", "0.01-0.1")
# without turning numbers into text itself (Gnumeric's 10^-2 is not 0.01 exactly, and shows it).
DECADE_FIRST, DECADE_LAST = -6, 18           # decade exponents the table covers: 1e-6 to 1e19
COUNT_UNITS = ((1e3, "k"),)                  # calc.basis_text / _beyond: devices, tokens per param
DECADES_PARAMS = f"{PREFIX}decades_params"   # the table's columns (defined names of A1 ranges)
DECADES_COUNTS = f"{PREFIX}decades_k"
SLACK = (0.999, 1.001)   # calc.beyond_words: a figure within 0.1% of the runs' span is inside it
SPAN_KEYS = (("params", calc.COUNT_SIZES), ("devices", COUNT_UNITS), ("tokens/param", COUNT_UNITS))
TAIL_NAME = f"{PREFIX}basis_tail"


def _span_name(key: str, end: str) -> str:
    return f"{PREFIX}span_{key.split('/')[0]}_{end}"


def decade_rows() -> list[tuple[int, str, str]]:
    """(exponent k, the decade 10^k-10^(k+1) in parameters' units, in thousands) as calc writes them."""
    label = calc.decade_label
    return [(k, label(10.0 ** (k + 0.5), "", calc.COUNT_SIZES), label(10.0 ** (k + 0.5), "", COUNT_UNITS))
            for k in range(DECADE_FIRST, DECADE_LAST + 1)]


def span_rows() -> list[tuple[str, float | str, str]]:
    """(defined name, value, note) of the runs' spans as the basis compares them (calc._spans:
    the least and the most of the fitted runs' active parameters, devices and tokens per active
    parameter, times calc's 0.1% slack) and of the basis line's tail (calc.PRIOR_BASIS_TAIL)."""
    spans = calc.run_spans(calc.GOODPUT)
    rows: list[tuple[str, float | str, str]] = []
    for key, _ in SPAN_KEYS:
        lo, hi = spans[key]
        rows += [(_span_name(key, "low"), lo * SLACK[0], f"the fewest {key} of the fitted runs, less 0.1%"),
                 (_span_name(key, "high"), hi * SLACK[1], f"the most {key} of the fitted runs, plus 0.1%")]
    rows.append((TAIL_NAME, TAIL.format(n=calc.prior_coefficients().n_runs), "how the basis line ends (calc.prior)"))
    return rows


def decade(value: str, table: str) -> str:
    """The decade `value` lies in, as calc._decade writes it ("10B-100B" from DECADES_PARAMS,
    "1k-10k" from DECADES_COUNTS)."""
    return f"INDEX({table},INT(LOG10({native.wrap(value)})){1 - DECADE_FIRST:+d})"


def basis_runs(family: str, active: str, moe: str) -> str:
    """"Hopper MoE runs of 10B-100B": the family, dense or MoE (`moe` 1 or 0), the active parameters' decade."""
    return f'{family}&IF({native.wrap(moe)}=1," MoE"," dense")&" runs of "&{decade(active, DECADES_PARAMS)}'


def basis_scale(active: str, devices: str, tokens: str) -> str:
    """" on 1k-10k devices, 100-1k tokens/param": the devices' and tokens per active parameter's decades."""
    per_param = f"{native.wrap(tokens)}/{native.wrap(active)}"
    return (f'" on "&{decade(devices, DECADES_COUNTS)}&" devices, "&{decade(per_param, DECADES_COUNTS)}'
            f'&" tokens/param"')


def outside(key: str, active: str, devices: str, tokens: str) -> str:
    """", 16-16k devices" where the job's `key` figure ("params", "devices", "tokens/param") lies
    outside the runs' span (calc.beyond_words's words), else ""."""
    value = {"params": native.wrap(active), "devices": native.wrap(devices),
             "tokens/param": f"{native.wrap(tokens)}/{native.wrap(active)}"}[key]
    return f'IF(OR({value}<{_span_name(key, "low")},{value}>{_span_name(key, "high")}),", {outside_words(key)}","")'


def outside_words(key: str) -> str:
    """calc.beyond_words's words for the runs' span of `key`: "16-16k devices"."""
    lo, hi = calc.run_spans(calc.GOODPUT)[key]
    units = dict(SPAN_KEYS)[key]
    return f"{calc.scaled_count(lo, units, '.2g')}-{calc.scaled_count(hi, units, '.2g')} {key}"


def beyond(outsides: list[str]) -> str:
    """calc.beyond_words's note from the `outsides` cells: ' (extrapolated: the runs span ...)', else ''
    (no TEXTJOIN: each piece starts with ", ", MID drops the first)."""
    joined = "&".join(outsides)
    return f'IF({joined}="",""," (extrapolated: the runs span "&MID({joined},3,999)&")")'


def basis(runs: str, scale: str, note: str, caveat: str | None = None) -> str:
    """The basis line from its pieces (basis_runs, basis_scale, beyond), the tail and, where given,
    the method's caveat (`caveat`: a cell holding pieces.prior_caveat, calc.PRIOR_CAVEATS)."""
    line = f'{runs}&{scale}&{note}&": "&{TAIL_NAME}'
    return line if caveat is None else f"{line}&{caveat}"


def log_expected(effect: str, active: str, devices: str, tokens: str, moe: str = "0") -> str:
    """log u of the job (calc.job_prior's sum, in its order)."""
    a = native.wrap(active)
    return (f"{PREFIX}intercept+{native.wrap(effect)}+{PREFIX}params*(LOG10({a})-10)"
            f"+{PREFIX}devices*(LOG10({native.wrap(devices)})-3)+{PREFIX}moe*{native.wrap(moe)}"
            f"+{PREFIX}tokens*(LOG10({native.wrap(tokens)}/{a})-2)")


def expected(effect: str, active: str, devices: str, tokens: str, moe: str = "0") -> str:
    """Expected utilization: EXP(log u), at most 1 (100% of peak: calc.UtilizationPrior caps it)."""
    return f"MIN(1,EXP({log_expected(effect, active, devices, tokens, moe)}))"


def edge(expected_util: str, position: str, case: str) -> str:
    """The band's `case` ("low" or "high") edge: expected times EXP of the band's constant (the
    wider one where the family prefix `position` is 0: unknown), at most 1: calc.prior.utilization caps the band at
    100% of peak, around the capped expected."""
    return (f"MIN(1,{native.wrap(expected_util)}*EXP(IF({position}>0,{PREFIX}band_{case},"
            f"{PREFIX}band_{case}_unknown)))")


def devices_exponent() -> str:
    """b in utilization ∝ devices^b."""
    return f"({PREFIX}devices/LN(10))"


def devices_for_days(devices_at_100: str, utilization: str, devices: str, cap: str = "1", least: str = "1") -> str:
    """Fewest devices finishing in time when `utilization` (at `devices`) scales as devices^b up to
    its cap `cap` (calc.prior.utilization caps the prior at 100% of peak: 1 for the expected and high
    utilization, Util_low/Util_expected, the band's low factor, for the low one); `devices_at_100`
    the devices needed at 100% of peak (device-hours at 100% / (goodput x 24 x days)):
    n = MAX(ROUNDUP((N100 · devices^b / u)^(1/(1+b))), ROUNDUP(N100 / cap), least) (calc.devices_for:
    the closed form, or its bisection where the capped utilization stops growing; least at least 1)."""
    b = devices_exponent()
    n100 = native.wrap(devices_at_100)
    linear = n100 if cap == "1" else f"{n100}/({cap})"
    return (f"MAX(ROUNDUP(({n100}*{native.wrap(devices)}^{b}/{native.wrap(utilization)})^(1/(1+{b}))"
            f"*{EXACT},0),ROUNDUP({linear}*{EXACT},0),{least})")


def tokens_exponent() -> str:
    """c in utilization ∝ tokens^c at fixed parameters."""
    return f"({PREFIX}tokens/LN(10))"


def tokens_for_budget(usd: str, cost_at_100: str, utilization: str, tokens: str, cap: str = "1") -> str:
    """Most whole tokens `usd` buys when the cost of `tokens` tokens, `cost_at_100` (at 100% of peak,
    goodput counted) / `utilization`, grows as tokens^(1 - c) while the utilization is below its cap
    `cap` (see devices_for_days) and linearly beyond: INT(MIN(tokens · (usd · u / K)^(1/(1 - c)),
    tokens · usd · cap / K)), as calc.tokens_for (the closed form, or its bisection where the
    capped utilization stops growing; INT: see plan_native.tokens_for_budget)."""
    c = tokens_exponent()
    t, k = native.wrap(tokens), native.wrap(cost_at_100)
    linear = f"{t}*{native.wrap(usd)}/{k}" if cap == "1" else f"{t}*{native.wrap(usd)}*({cap})/{k}"
    return f"INT(MIN({t}*({native.wrap(usd)}*{native.wrap(utilization)}/{k})^(1/(1-{c})),{linear}))"


def cap(utilization: str) -> str:
    """The most the prior's `utilization` cell reaches (calc.UtilizationPrior's cap at 100% of
    peak): Util_low stops at the band's low factor (Util_low/Util_expected), the others at 1."""
    return "Util_low/Util_expected" if utilization == "Util_low" else "1"
