"""Native-Excel pieces of the job-keyed utilization prior (calc.prior.job_prior), written once here.

The prior is a closed form a spreadsheet computes with EXP, LOG10, LEFT, UPPER, IF and OR only
(no lookup table, no array idiom, nothing the e-mail copy must rewrite):
    log u = Prior_intercept + family effect + Prior_params·(LOG10(active) − 10)
            + Prior_devices·(LOG10(devices) − 3) + Prior_moe·MoE + Prior_tokens·(LOG10(tokens/active) − 2)
    expected = EXP(log u); low = expected·EXP(band low); high = expected·EXP(band high)
The family effect is read off the device's Hardware text by calc.prior.FAMILIES' prefixes, first
match wins (so a user's measured Devices row with an H100 hardware name is Hopper, as in calc);
no match: the runs' mean effect and the wider band (calc: family unknown). The numbers are the
defined names of `coefficient_rows()` (calc.prior.coefficients(), a sheet writes them as sourced
constant cells). Devices for a deadline, with utilization ∝ devices^b (b = Prior_devices / LN(10)):
n = ROUNDUP((device-hours at one device and its utilization / (24 · days))^(1 / (1 + b))), as
calc.plan.devices_for's closed form.
"""

from __future__ import annotations

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


def _prefix_test(hardware: str, prefix: str) -> str:
    return f'UPPER(LEFT({hardware},{len(prefix)}))="{prefix.upper()}"'


def family_effect(hardware: str) -> str:
    """The family's effect for the Hardware text `hardware` (FAMILIES' prefixes, first match wins)."""
    formula = f"{PREFIX}fx_unknown"
    for prefix, fam in reversed(prior.FAMILIES):
        formula = f"IF({_prefix_test(hardware, prefix)},{_effect_name(fam)},{formula})"
    return formula


def family_known(hardware: str) -> str:
    """1 where the Hardware text matches a family, else 0."""
    return f"IF(OR({','.join(_prefix_test(hardware, p) for p, _ in prior.FAMILIES)}),1,0)"


def log_expected(effect: str, active: str, devices: str, tokens: str, moe: str = "0") -> str:
    """log u of the job (calc.prior.job_prior's sum, in its order)."""
    a = native.wrap(active)
    return (f"{PREFIX}intercept+{native.wrap(effect)}+{PREFIX}params*(LOG10({a})-10)"
            f"+{PREFIX}devices*(LOG10({native.wrap(devices)})-3)+{PREFIX}moe*{native.wrap(moe)}"
            f"+{PREFIX}tokens*(LOG10({native.wrap(tokens)}/{a})-2)")


def expected(effect: str, active: str, devices: str, tokens: str, moe: str = "0") -> str:
    """Expected utilization: EXP(log u)."""
    return f"EXP({log_expected(effect, active, devices, tokens, moe)})"


def edge(expected_util: str, known: str, case: str) -> str:
    """The band's `case` ("low" or "high") edge: expected times EXP of the band's constant."""
    return (f"{native.wrap(expected_util)}*EXP(IF({known}=1,{PREFIX}band_{case},"
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
