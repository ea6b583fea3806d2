"""The sheets' formula pieces: every formula the template's Budget, Scenarios and blocks write that is
not a registry function, each written once here over named cells (the sheet builders type none).

The registry (registry.py) holds the Excel functions; native.py the pieces they are made of; this
module composes the sheets' own rows from both: memory parts by ZeRO stage, the one price rule,
money in the chosen currency, the comparison's rows. Units as in calc: bytes, GB = 1E9 bytes where
a label says GB, device memory in GiB.
"""

from __future__ import annotations

from . import native

NO_PRICE = "no price"  # a cost without a price: never the typed cloud price for another device
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


def difference(whole: str, part: str) -> str:
    return f"{native.wrap(whole)}-{native.wrap(part)}"


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


def row_price(device: str) -> str:
    """The Devices row's own price (USD per device-hour), blank where the row has none."""
    return f'IFERROR({native.lookup(device, "usd_per_device_hour")},"")'


def own_price(name: str) -> str:
    """The price cell of a name taken from the Devices table itself (blank: the row has none)."""
    return f"INDEX({native.column('usd_per_device_hour')},MATCH({name},{native.NAMES},0))"


def price_used(provider: str, found: str, typed: str, own: str) -> str:
    """The one price rule: the provider's price when a provider is chosen (none found: no price),
    else the typed price, else the device row's own price, else no price (as calc's
    schedule.price_per_device_hour: a given price wins, else the row's)."""
    return (f'IF({provider}<>"",IF({found}="","{NO_PRICE}",{found}),'
            f'IF(ISNUMBER({typed}),{typed},IF({own}="","{NO_PRICE}",{own})))')


def price_source(provider: str, plan: str, found: str, typed: str, own: str) -> str:
    """Whose price `price_used` took, in words."""
    return (f'IF({provider}<>"",IF({found}="","no "&{provider}&" price for it",'
            f'{provider}&" "&{plan}&" price"),IF(ISNUMBER({typed}),"{TYPED}",'
            f'IF({own}="","{NO_PRICE}","{ROW_PRICE}")))')


def price_note(source: str) -> str:
    return f'"price: "&{source}'


def cost(device_hours: str, price: str, rate: str = "USD_rate") -> str:
    """Device-hours times the price, in the chosen currency; "no price" without one."""
    return f'IF(ISNUMBER({price}),{native.wrap(device_hours)}*{price}*{rate},"{NO_PRICE}")'


def compare_price(name: str, chosen: str, used: str, own: str) -> str:
    """A comparison row's price: the chosen device's row takes the price the results use; any
    other row its own price, else none (a typed price is a price for the chosen device only)."""
    return f'IF({name}={chosen},{used},IF({own}="","{NO_PRICE}",{own}))'


def compare_source(name: str, chosen: str, source: str, own: str) -> str:
    return f'IF({name}={chosen},{source},IF({own}="","{NO_PRICE}","{ROW_PRICE}"))'


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
