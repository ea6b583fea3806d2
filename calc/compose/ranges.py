"""Budgets as ranges: low / expected / high from the utilization prior.

Convention: a range is a TRAILING AXIS OF 3, (low, expected, high) of the quantity itself, so
low <= expected <= high always (low hours come from the prior's HIGH utilization). A scalar job
gives shape (3,); an array of N jobs gives (N, 3). Hours, device-hours, cost and energy are all
proportional to 1/utilization, so each is computed once at utilization 1.0 and multiplied by
the prior's three factors 1/(u · goodput): reported device-hours include downtime
(prior.GOODPUT, fitted on the runs). Energy counts every device-hour at board power,
downtime included (an upper bound for the downtime share).

calc.budget's ranges come from the last section (range_of, checked_once, days_of): for arrays of
jobs each range is checked in the call and its three products made when first read (a `Later`).

The prior's utilizations are shares of a 16-bit (BF16/FP16) dense peak: use a device's BF16
row; against an FP8 row the same run reads about half (DeepSeek-V3: 0.19 of FP8, 0.39 of BF16).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.arith import SAFE, finite_below, times
from ..base.checks import at_least, positive, whole
from ..base.errors import ResultOverflowError, TrainingBudgetError, broadcasts, out, show
from ..base.fastinit import Later
from ..hardware.catalog import DeviceTable, catalog, sixteen_bit_row
from ..money.totals import kwh, price_per_device_hour, train_hours
from ..prior.utilization import KEYED, UtilizationPrior, job_prior
from .job import Span

LABELS = ("low", "expected", "high")


def wants_prior(utilization: Any) -> bool:
    """True for utilization="prior", "prior:job" (each job's own prior) or a UtilizationPrior (a range)."""
    if isinstance(utilization, str):  # the exact word first: no strip or lower for the common case
        return utilization in _PRIOR_WORDS or utilization.strip().lower() in _PRIOR_WORDS
    return isinstance(utilization, UtilizationPrior)


_PRIOR_WORDS = ("prior", KEYED)


def resolve(utilization: Any, params: Any, tokens: Any, device: Any, devices: Any = 1,
            table: DeviceTable | None = None) -> UtilizationPrior:
    """The prior `utilization` names: a UtilizationPrior given, else ("prior", "prior:job") the job's
    own (calc.job_prior of a dense job: active = total parameters), as calc.budget's."""
    if isinstance(utilization, UtilizationPrior):
        return utilization
    return job_prior(device, active_params=params, devices=devices, moe=False, tokens=tokens, table=table)


def _factors(prior: UtilizationPrior) -> np.ndarray:
    """hour_factors on a trailing axis of 3 (a job-keyed prior of arrays holds them on the first)."""
    return np.moveaxis(np.asarray(prior.hour_factors()), 0, -1)


def prior_device(device: Any, table: DeviceTable | None = None) -> Any:
    """The row the prior applies to (calc.hardware.catalog.sixteen_bit_row, as the step's MFU basis):
    for a named vendor FP8, TF32 or FP32 peak row, the same hardware's BF16/FP16 row, since the prior's
    utilizations are shares of 16-bit peaks; anything else unchanged (numbers, arrays, measured rows,
    hardware without a 16-bit row)."""
    if not isinstance(device, str):
        return device
    t = catalog() if table is None else table
    d = t.get(device)
    row = sixteen_bit_row(d, t)
    return device if row is d else row.name


# flat: one numpy-broadcasting argument per cell, as train_hours (the sheets' ranged figures' flat call)
@broadcasts
def train_range(params: Any, tokens: Any, device: Any, *, devices: Any = 1,
                prior: UtilizationPrior | None = None, usd_per_device_hour: Any = None,
                pue: Any = 1.0, watts: Any = None, table: DeviceTable | None = None,
                **flops_options: Any) -> dict[str, np.ndarray]:
    """Hours, device-hours, USD and kWh as ranges (trailing axis: low, expected, high).

    One utilization-1.0 pass; `usd` appears when a price is given (a number or "provider:plan"),
    `kwh` when the device has watts (or `watts` is given). `prior` defaults to the job's own (as calc.budget's); the
    prior's utilizations are the range, so a `utilization` is refused (train_hours takes one).
    """
    if "utilization" in flops_options:
        raise TrainingBudgetError(
            f"train_range takes its utilizations from the prior, not utilization="
            f"{show(flops_options['utilization'])}: pass prior=UtilizationPrior(...), or use train_hours "
            "for one utilization")
    if prior is not None and not isinstance(prior, UtilizationPrior):
        raise TrainingBudgetError(f"prior must be a UtilizationPrior from calc.utilization_prior() or None "
                                  f"(got {show(prior)})")
    factors = _factors(resolve(prior, params, tokens, device, devices, table))
    device = prior_device(device, table)
    hours = np.asarray(train_hours(params, tokens, device, devices=devices, table=table, **flops_options))
    n = np.asarray(whole("devices", devices))
    price = (None if usd_per_device_hour is None
             else np.asarray(price_per_device_hour(device, usd_per_device_hour, table=table)))
    w = positive("watts", watts) if watts is not None else _watts(device, table)
    per_dh = None if w is None else np.asarray(kwh(w, 1.0, at_least("pue", pue, 1.0)))  # kWh per device-hour
    try:  # finite inputs overflow only in a product: refused (the argument named by @broadcasts), never inf
        with np.errstate(over="raise", invalid="raise"):
            dh = hours * n
            out = {"hours": hours[..., None] * factors, "device_hours": dh[..., None] * factors}
            if price is not None:
                out["usd"] = (dh * price)[..., None] * factors
            if per_dh is not None:
                out["kwh"] = (dh * per_dh)[..., None] * factors
    except FloatingPointError:
        raise ResultOverflowError("the result overflows float64") from None
    return out


def _watts(device: Any, table: DeviceTable | None) -> Any:
    """Board watts of `device` from the table, or None where the row (or a number) has none."""
    try:
        return (catalog() if table is None else table).value(device, "watts")
    except TrainingBudgetError:
        return None


# --- a Budget's ranges (calc.budget): a point times the prior's three factors -------------------

_tuple_new = tuple.__new__  # _tuple_new(Span, (low, expected, high)): a Span in one C call (calc/compose/job.py)


def top_factor(factors: Any) -> float:
    """The largest of the prior's hour factors (each a float, or an array for a job-keyed prior)."""
    if factors is None:
        return 1.0
    f0, f1, f2 = factors
    if type(f0) is float and type(f1) is float and type(f2) is float:  # a scalar prior: no numpy
        return max(f0, f1, f2)
    return max(f if type(f) is float else float(np.max(f)) for f in factors)


def _scale(usd: Any, watts: Any, pue: Any) -> float | None:
    """The largest of 1, usd and watts · PUE (what cost and energy multiply the device-hours by),
    or None where a price, the watts or the PUE is an array (then each range is checked alone)."""
    scale = 1.0
    if usd is not None:
        if type(usd) is not float:
            return None
        scale = max(scale, usd)
    if watts is not None:
        if type(watts) is not float or type(pue) is not float:
            return None
        scale = max(scale, watts * pue)
    return scale


def range_of(point: Any, factors: Any, top: float) -> Any:
    """A point (>= 0), checked, or a Span of the point times each of the prior's three factors
    (an overflowing product refused). A point whose elements sum below arith.SAFE / the largest
    factor (>= 1) cannot overflow, point or products, so one comparison (a float) or one
    reduction (an array) checks all four (`top` 0.0: checked_once has checked it). An array's
    Span is a `Later` (calc/base/fastinit.py): checked here, its three N-element products made when
    the Budget's field is first read."""
    if factors is None:
        return out(point)
    f0, f1, f2 = factors
    if type(point) is float:
        if point * top < SAFE:  # NaN and infinities fail it
            return _tuple_new(Span, (point * f0, point * f1, point * f2))
    elif (isinstance(point, np.ndarray) and point.ndim
          and (top == 0.0 or finite_below(float(np.add.reduce(point, axis=None)) * top))):
        return Later(_span, point, f0, f1, f2)  # checked now, made when read (calc/base/fastinit.py)
    point = out(point)
    return Span(out(point * f0), out(point * f1), out(point * f2))


def checked_once(device_hours1: np.ndarray, top: float, usd: Any, watts: Any, pue: Any) -> float:
    """_over's bound for all four ranges of arrays from one reduction, or `top` as it is.

    Every hours element is at most its device-hours (devices >= 1), cost is device-hours · usd
    and energy device-hours · watts · PUE / 1000, all >= 0; so when the device-hours sum times
    the largest factor and the largest of 1, usd and watts · PUE is under arith.SAFE, no point
    or product of the four can overflow (SAFE is 1e8 below float64's largest: rounding cannot
    matter), and _over need not sum each (top 0.0 tells it so). Otherwise (or for arrays of
    prices, watts or PUEs) each range is checked on its own and a failure named as before."""
    scale = _scale(usd, watts, pue)
    if scale is not None and finite_below(float(np.add.reduce(device_hours1, axis=None)) * top * scale):
        return 0.0
    return top


def lazy_ranges(hours1: Any, n: Any, usd: Any, watts: Any, pue: Any, factors: Any,
                top: float) -> tuple[Later, Later, Later | None, Later | None] | None:
    """Arrays of jobs: the hours, device-hours, cost and energy ranges as `Later`s made from the
    hours at utilization 1 alone (device-hours, cost and energy points too are made when first
    read), checked now by one reduction; None where that bound does not hold or the prices,
    watts or PUE are arrays (then calc.budget makes the points and checks range by range).

    The bound: device-hours are hours · devices <= hours · max(devices), cost and energy are
    device-hours times usd and watts · PUE / 1000, all >= 0; so when the hours' sum times the
    largest device count, the largest factor and the largest of 1, usd and watts · PUE is under
    arith.SAFE, no point or product of the four overflows (checked_once's bound, one product on).
    The figures are the same products as checked_once's path, bit for bit: device-hours
    hours · devices, cost device-hours · usd, energy schedule.kwh(watts, device-hours, PUE)."""
    scale = _scale(usd, watts, pue)
    if scale is None or not (isinstance(hours1, np.ndarray) and hours1.ndim):
        return None
    most = float(np.max(n)) if isinstance(n, np.ndarray) else float(n)
    if not finite_below(float(np.add.reduce(hours1, axis=None)) * most * top * scale):
        return None
    f0, f1, f2 = factors
    hours = _Shared(hours1, 2)  # read by the hours' Span and by the device-hours point
    points = Later(_points, hours, n, usd, watts, pue)
    return (Later(_hours_span, hours, f0, f1, f2), Later(_taken_span, points, 0, f0, f1, f2),
            None if usd is None else Later(_taken_span, points, 1, f0, f1, f2),
            None if watts is None else Later(_taken_span, points, 2, f0, f1, f2))


class _Shared:
    """An array (an N-element point this module was given to keep) that `uses` makers read; the
    last to take it may write into its buffer. Taken only inside a `Later`'s make, which runs
    under calc/base/fastinit.py's lock, so the count needs no lock of its own."""

    __slots__ = ("uses", "value")

    def __init__(self, value: np.ndarray, uses: int) -> None:
        self.value, self.uses = value, uses

    def take(self) -> tuple[np.ndarray, bool]:
        value = self.value
        self.uses -= 1
        if self.uses == 0:
            self.value = None
        return value, self.uses == 0


def _points(hours: _Shared, n: Any, usd: Any, watts: Any, pue: Any) -> list[Any]:
    """[device-hours, cost, energy] at utilization 1, made together on the first read of any of
    their ranges: device-hours · usd and kWh need the device-hours, which their range consumes."""
    h, last = hours.take()
    dh = times(h, n, last)
    return [dh, None if usd is None else dh * usd, None if watts is None else kwh(watts, dh, pue, False)]


def _hours_span(hours: _Shared, f0: Any, f1: Any, f2: Any) -> Span:
    h, last = hours.take()
    return _tuple_new(Span, (h * f0, h * f1, times(h, f2, last)))  # the last reader's buffer


def _taken_span(points: Later, i: int, f0: Any, f1: Any, f2: Any) -> Span:
    """The Span of _points' point `i`, which only this range reads (so _span may write into it)."""
    made = points.get()
    point, made[i] = made[i], None
    return _span(point, f0, f1, f2)


def _span(point: Any, f0: Any, f1: Any, f2: Any) -> Span:
    """The Span of a point (an array this module made, held by the Later alone) times the prior's
    three factors: the point's buffer takes the last product."""
    return _tuple_new(Span, (point * f0, point * f1, times(point, f2, True)))


def days_of(hours: Any) -> Any:
    """Hours / 24, a point or each of a Span's three (made when read where the hours are)."""
    if type(hours) is Later:
        return Later(_made_days, hours)
    if isinstance(hours, Span):
        low, expected, high = hours
        return _tuple_new(Span, (low / 24, expected / 24, high / 24))
    return hours / 24


def _made_days(hours: Later) -> Span:
    return days_of(hours.get())
