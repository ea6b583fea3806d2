"""The sheets' price-spec pieces: a "provider:plan:offering" spec split as calc._parts splits
it, the Prices-table lookup calc.lookup_price makes (the newest row of the provider and hardware
that publishes the plan, of the offering's rows where one is named, any case; then the cheapest),
and calc's refusals of a spec in calc's words. As pieces.py, each formula is written once here over
named cells; the sheet builders (Budget: template/ranges_block.py; Scenarios: template/scenarios.py)
type none.

Only functions every engine computes the same (TRIM, LOWER, LEFT, MID, FIND, MATCH, INDEX, and
pieces.py's SUMPRODUCT(MAX/MIN(...)) idiom, which the e-mail copy turns into an array formula:
functions/portable.py), so the copy computes the same in Gnumeric.
"""

from __future__ import annotations

from ... import calc

PLAN_WORDS = "plan must be one of " + ", ".join(calc.PRICE_PLANS)  # calc.plan_name's refusal


def _before_colon(text: str) -> str:
    return f'TRIM(LEFT({text},FIND(":",{text}&":")-1))'


def _after_colon(text: str) -> str:
    return f'MID({text},FIND(":",{text}&":")+1,999)'


def spec_provider(spec: str) -> str:
    """The provider of a price cell holding a spec (lower case, trimmed, as calc reads it); blank
    for a number or a blank cell."""
    return f'IF(OR({spec}="",ISNUMBER({spec})),"",LOWER({_before_colon(spec)}))'


def spec_rest(spec: str, provider: str) -> str:
    """What follows the spec's first colon ("plan:offering"); blank without a provider."""
    return f'IF({provider}="","",{_after_colon(spec)})'


def spec_plan(rest: str, provider: str) -> str:
    """The spec's plan as written (trimmed); on_demand where left out, as calc.parse_price_spec."""
    plan = _before_colon(rest)
    return f'IF({provider}="","",IF({plan}="","on_demand",{plan}))'


def spec_offering(rest: str) -> str:
    """The spec's offering (after its second colon, trimmed); blank where it names none."""
    return f"TRIM({_after_colon(rest)})"


def joined_spec(provider: str, plan: str, offering: str) -> str:
    """The Budget's provider, plan and offering cells as the one spec calc reads ("runpod:on_demand"
    or "runpod:on_demand:Secure Cloud H100 SXM"); blank without a provider."""
    return f'IF({provider}="","",{provider}&":"&{plan}&IF({offering}="","",":"&{offering}))'


def _matches(offering: str) -> str:
    """1 on the Prices rows of `offering` (any case, as calc compares it), every row where it is blank."""
    return f'(({offering}="")+(Price_offering={offering})>0)'


def newest(provider: str, hardware: str, column: str, offering: str) -> str:
    """As-of date of the newest row of `provider`, `hardware` and `offering` publishing the plan (0: none)."""
    return (f"SUMPRODUCT(MAX((Price_provider={provider})*(Price_device={hardware})*{_matches(offering)}"
            f"*(INDEX(Price_plans,0,{column})>0)*Price_as_of))")


def cheapest(provider: str, hardware: str, column: str, date: str, offering: str) -> str:
    """The cheapest plan price among the rows of `provider`, `hardware` and `offering` as of `date`
    (the newest such row's date: none is newer); a row that fails any test costs 1E9 more."""
    plan = f"INDEX(Price_plans,0,{column})"
    return (f"SUMPRODUCT(MIN({plan}+1E9*((Price_provider<>{provider})+(Price_device<>{hardware})"
            f"+({offering}<>\"\")*(Price_offering<>{offering})+(Price_as_of<{date})+({plan}=0))))")


def provider_date(provider: str, hardware: str, column: str, offering: str) -> str:
    """The newest date of the provider's (offering's) price for the hardware; 0 without a provider
    or where the provider or plan is unknown (the checks refuse those)."""
    return f'IF(OR({provider}="",ISNA({column})),0,{newest(provider, hardware, column, offering)})'


def provider_price(provider: str, hardware: str, column: str, date: str, offering: str) -> str:
    """The provider's price at `date`; blank where there is none (date 0)."""
    return f'IF({date},{cheapest(provider, hardware, column, date, offering)},"")'


# --- calc's refusals of a spec (calc.parse_price_spec and lookup), as a check chain's rows ----------
# Each: (label, ok, message). calc's own messages go on to list the providers it knows (or those with
# a price for the device); the sheet's end before that list, the rest word for word.

def known_provider(provider: str, spec: str) -> tuple[str, str, str]:
    """calc.parse_price_spec: a provider with no row of the Prices sheet is unknown."""
    message = (f'"#VALUE! price: no "&LOWER({provider})&" prices, unknown provider (got \'"&{spec}&"\')"')
    return ("price: a provider of the Prices sheet",
            f'OR({provider}="",ISNUMBER(MATCH({provider},Price_provider,0)))', message)


def known_plan(provider: str, plan: str, column: str) -> tuple[str, str, str]:
    """calc.plan_name: a plan that is none of PLANS."""
    return (PLAN_WORDS, f'OR({provider}="",ISNUMBER({column}))',
            f'"#VALUE! {PLAN_WORDS} (got \'"&{plan}&"\')"')


def plan_name(column: str) -> str:
    """The plan's own name (calc.PRICE_PLANS) for its column: "on_demand" for "od" or "On Demand"."""
    return f"INDEX(Plan_names,{column})"  # its first rows are the plans, in the price columns' order


def row_found(column: str, provider: str, offering: str, date: str, device: str) -> tuple[str, str, str]:
    """calc.lookup_price: no row of the provider (and offering) for the device's hardware that
    publishes the plan."""
    named = f'IF({offering}="",""," \'"&{offering}&"\'")'
    message = f'"#VALUE! price: no "&LOWER({provider})&" "&{plan_name(column)}&{named}&" price for \'"&{device}&"\'"'
    return ("price: a Prices row of the provider, plan and offering for the device's hardware",
            f'OR({provider}="",{date}>0)', message)


def spec_checks(provider: str, plan: str, column: str, offering: str, date: str, spec: str,
                device: str) -> list[tuple[str, str, str]]:
    """The three refusals in calc's order: unknown provider, unknown plan, no row."""
    return [known_provider(provider, spec), known_plan(provider, plan, column),
            row_found(column, provider, offering, date, device)]
