"""Offerings as they are sold: device counts in whole instances, TPU chips in the slice shapes Google
sells, and 1- or 3-year prices as commitments. Units: devices (counts), years, hours, USD.

- **Instances.** A price row of calc/data/prices.csv sells `devices_per_instance` devices per
  instance (8 for an HGX node, 4 for a GB200 NVL72 compute tray): a plan on it takes whole
  instances, a multiple of that count (and of --node where given). A row selling one device per
  instance (RunPod Community Cloud, lambda's 1x H100, gcp's a3-highgpu-1g, as prices.csv records
  them) is a single-device offering: never a job of more than one device, as no multi-node fabric
  comes with it.
- **TPU slices.** A Cloud TPU is sold as a slice of a pod, in the shapes of calc/data/tpu_slices.csv
  (each row sourced to Google's page for that generation): a count is one of those sizes, or above
  the largest, a whole number of the largest slices joined over the data-center network (Cloud TPU
  Multislice, https://cloud.google.com/tpu/docs/multislice-introduction: slices joined over DCN).
- **Commitments.** A 1-year or 3-year price is a committed-use price: the buyer pays every hour of
  the term whether the devices run or not (Google Cloud committed use discounts,
  https://cloud.google.com/docs/cuds: the fee is billed monthly for the whole term, used or not;
  AWS Savings Plans and Azure reservations bill the same way). Its total is
  devices x rate x 8,760 h a year x years, renewed while the job outlasts it.
"""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..base.checks import TrainingBudgetError, positive
from ..compose.budget import Owned
from ..hardware.catalog import DeviceTable, catalog
from ..money import prices

HOURS_PER_YEAR = 8760.0  # 365 days x 24 h: the hours a committed-use term bills
TERM_YEARS = {"1yr": 1.0, "3yr": 3.0}


@functools.cache
def load_slices() -> dict[str, tuple[int, ...]]:
    """TPU hardware name (devices.csv `hardware`) -> the slice sizes sold, in chips, ascending."""
    text = resources.files("trainbudget.calc").joinpath("data/tpu_slices.csv").read_text("utf-8")
    found: dict[str, set[int]] = {}
    for r in csv.DictReader(text.splitlines()):
        found.setdefault(r["hardware"].strip().lower(), set()).add(int(r["chips"]))
    return {k: tuple(sorted(v)) for k, v in found.items()}


@dataclass(frozen=True)
class Offer:
    """One price option of a device as it is sold: `spec` prices a Job (calc.budget's price),
    `label` names it; `plan` the price row's plan (on_demand, 1yr, 3yr, spot; None for a price
    given or owned hardware); `instance` devices per instance; `slices` the TPU slice sizes sold
    (empty: not a TPU with known shapes); `single` a price row that sells one device per instance."""

    spec: Any
    label: str
    plan: str | None = None
    instance: int = 1
    slices: tuple[int, ...] = ()
    single: bool = False

    @property
    def term_years(self) -> float:
        """Years of the commitment a 1yr or 3yr price carries (0: none)."""
        return TERM_YEARS.get(self.plan or "", 0.0)

    def rule(self, node: int | None) -> tuple[int, tuple[int, ...]]:
        """(step, slices): counts are multiples of step (the instance and --node) and, for a TPU, sold shapes."""
        return math.lcm(self.instance, int(node or 1)), self.slices


def offer(spec: Any, label: str, device: str, table: DeviceTable) -> Offer:
    """The Offer of one price option of `device` (rank.price_options' spec and label)."""
    hardware = (table.get(device).hardware or "").strip().lower()
    slices = load_slices().get(hardware, ())
    if not isinstance(spec, str) or isinstance(prices.parse_spec(spec), float):
        return Offer(spec, label, slices=slices)
    row, plan = prices.lookup(spec, device, table)
    instance = 1 if slices else int(row.devices_per_instance)
    return Offer(spec, label, plan, instance, slices, single=not slices and instance == 1)


def is_sold(n: float, step: int, slices: tuple[int, ...]) -> bool:
    """`n` devices can be bought: a multiple of `step`, and for a TPU a slice size or a whole number
    of the largest slices (Multislice)."""
    if not math.isfinite(n) or n < 1 or n % step:
        return False
    return not slices or n in slices or (n > slices[-1] and n % slices[-1] == 0)


def sold_counts(n0: float, step: int, slices: tuple[int, ...]) -> Iterator[float]:
    """The counts sold from `n0` upward, ascending: multiples of `step`; for a TPU the slice sizes at
    least n0, then whole numbers of the largest slice (each also a multiple of `step`)."""
    if not slices:
        n = math.ceil(n0 / step) * step
        while True:
            yield float(n)
            n += step
    for size in slices:
        if size >= n0 and size % step == 0:
            yield float(size)
    top = slices[-1]
    k = max(2, math.ceil(n0 / top))
    while True:
        if (k * top) % step == 0:
            yield float(k * top)
        k += 1


def commitment_usd(devices: float, usd_per_device_hour: float, years: float, hours: float) -> float:
    """What a commitment costs: devices x rate x the term's hours, renewed while the job (`hours`
    of wall clock) outlasts it."""
    term = years * HOURS_PER_YEAR
    return devices * usd_per_device_hour * term * max(1, math.ceil(hours / term))


def price_options(device: str, price: Any = None, own: Owned | None = None,
                  table: DeviceTable | None = None) -> list[tuple[Any, str]]:
    """(price for a Job, label) pairs for `device`: the one given (a number or PROVIDER:PLAN[:OFFERING]),
    else the device row's own price and one option per provider, offering and plan of the price rows
    for its hardware (the newest row of an offering, then the cheapest, as calc.prices.lookup), each
    priced by that row: the spec "provider:plan:offering" (calc.prices.spec_for); owned last."""
    table = catalog() if table is None else table
    if isinstance(price, str) and ":" not in price:
        price = float(price) if _is_number(price) else f"{price}:on_demand"
    if price is not None and not isinstance(price, str):
        found = [(float(positive("price", price)), f"{float(price):g} USD per device-hour (given)")]
    elif isinstance(price, str):
        provider, plan = prices.parse_spec(price)  # an unknown provider or plan is refused here
        named = prices.offering(price).lower()
        rows = [r for r in prices.find(device, provider, plan, table) if not named or r.offering.lower() == named]
        found = [_option(prices.lookup(price, device, table)[0], plan)] if rows else []
    else:
        own_price = table.get(device).usd_per_device_hour
        found = [] if own_price is None else [(None, "the device row's own price")]
        best: dict[tuple[str, str, str], prices.Price] = {}
        for r in prices.find(device, table=table):
            for p in (p for p in prices.PLANS if p in r.usd):
                key, held = (r.provider, r.offering.lower(), p), best.get((r.provider, r.offering.lower(), p))
                if held is None or (r.as_of, -r.usd[p]) > (held.as_of, -held.usd[p]):
                    best[key] = r
        found += [_option(r, p) for (_, _, p), r in best.items()]
    if own is not None and table.get(device).watts is not None:
        found.append((own, own.label()))
    return found


def _option(row: prices.Price, plan: str) -> tuple[str, str]:
    """A row's option: the spec that prices by that row, and the label calc.budget gives it."""
    return prices.spec_for(row, plan), f"{row.provider}:{plan} {row.offering}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def unpriced(price: Any, names: list[str], table: DeviceTable) -> dict[str, str]:
    """For a PROVIDER:PLAN[:OFFERING] price, why each device without a row for it has no price
    (calc.prices.lookup's words); refused in those words where no device planned has a row, as
    calc.budget refuses the spec for one job."""
    if not isinstance(price, str) or _is_number(price):
        return {}
    missing: dict[str, str] = {}
    for name in names:
        try:
            prices.lookup(price, name, table)  # a bare provider: on_demand
        except TrainingBudgetError as e:
            missing[name] = str(e)
    if names and len(missing) == len(names):
        if len(names) == 1:
            raise TrainingBudgetError(missing[names[0]])
        raise TrainingBudgetError(f"price: no {prices.spec_words(price)} price for any of the {len(names)} devices "
                                  f"planned (trainbudget prices lists each provider's offerings)")
    return {name: f"no {prices.spec_words(price)} price for this device" for name in missing}
