"""A Budget of arrays of jobs makes each range's low / expected / high when first read
(calc/base/fastinit.py's `Later`: the vector question's speed): the same figures, bit for bit, as
the eager products; made once; checked in the budget() call, not on reading; and pickles,
copies, replace and repr hold values."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc.base.errors import ResultOverflowError
from trainbudget.calc.base.fastinit import Later, fast_init
from trainbudget.calc.compose.budget import Job, Span, budget
from trainbudget.calc.money.totals import hours_at

H100 = "H100 SXM, BF16 tensor core, dense"
RANGES = ("hours", "days", "device_hours", "cost_usd", "energy_kwh")


def _job(n: int = 64, **changes: object) -> Job:
    rng = np.random.default_rng(7)
    cols = {"params": rng.uniform(1e9, 7e10, n), "tokens": rng.uniform(1e11, 1e13, n),
            "devices": rng.choice([64.0, 128.0, 512.0], n), "zero_stage": rng.integers(0, 4, n).astype(float)}
    fixed = {"device": H100, "tp": 2, "utilization": calc.utilization_prior(), "price": 2.5, "pue": 1.2}
    return calc.job(**{**fixed, **cols, **changes})


def test_ranges_of_arrays_are_made_when_read_and_equal_the_eager_products():
    job = _job()
    b = budget(job)
    assert set(b.__dict__["_later"]) == set(RANGES)   # nothing made yet
    assert not set(RANGES) & set(b.__dict__)
    prior = job.utilization
    f = prior.hour_factors()
    flops = 6.0 * job.model.params * job.tokens
    hours1 = hours_at(flops, calc.catalog().get(H100).tflops, 1.0, job.cluster.devices, False)
    dh1 = hours1 * job.cluster.devices
    want = {"hours": hours1, "device_hours": dh1, "cost_usd": dh1 * 2.5,
            "energy_kwh": dh1 * calc.catalog().get(H100).watts * 1.2 / 1000.0}
    for name, point in want.items():
        span = getattr(b, name)
        assert type(span) is Span and span is getattr(b, name)   # made once, then a plain attribute
        for got, factor in zip(span, f, strict=True):
            assert np.array_equal(got, point * factor), name    # the same products, bit for bit
    hours = b.hours
    assert all(np.array_equal(d, h / 24) for d, h in zip(b.days, hours, strict=True))
    assert b.hours.low.shape == (64,) and np.all(b.hours.low <= b.hours.expected)
    assert np.all(b.hours.expected <= b.hours.high)


def test_reading_one_range_makes_only_that_one():
    b = budget(_job())
    _ = b.cost_usd.expected
    assert "cost_usd" in b.__dict__ and "hours" not in b.__dict__
    hours = b.__dict__["_later"]["hours"]
    assert not hasattr(hours, "value")
    _ = b.days
    assert hasattr(hours, "value") and b.hours is hours.value   # days are the hours / 24: made once


def test_copies_pickles_replace_and_repr_hold_values():
    b = budget(_job())
    for twin in (pickle.loads(pickle.dumps(b)), copy.copy(b), copy.deepcopy(b)):
        assert "_later" not in twin.__dict__ and set(RANGES) <= set(twin.__dict__)
        for name in RANGES:
            assert all(np.array_equal(x, y) for x, y in zip(getattr(twin, name), getattr(b, name), strict=True))
    other = budget(_job())
    assert dataclasses.replace(other, cost_usd=None).cost_usd is None
    assert all(np.array_equal(x, y) for x, y in zip(other.hours, b.hours, strict=True))
    assert "Span(low=array(" in repr(budget(_job(3)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.hours = 1.0  # type: ignore[misc]


def test_a_range_that_overflows_is_refused_in_the_call_not_on_reading():
    with pytest.raises(ResultOverflowError, match="cost"), np.errstate(over="ignore"):
        budget(_job(price=1e306))
    with pytest.raises(ResultOverflowError), np.errstate(over="ignore"):
        budget(_job(pue=1e306))   # energy: watts · device-hours · PUE
    near = budget(_job(price=1e300))   # beyond the one-reduction bound, yet finite: checked range by range
    assert np.all(np.isfinite(near.cost_usd.high)) and np.all(near.cost_usd.high > 1e300)


def test_scalar_budgets_and_points_stay_plain():
    b = budget(calc.job(params=13e9, tokens=1e12, device=H100, devices=64, utilization="prior", price=2.5))
    assert "_later" not in b.__dict__ and type(b.hours) is Span
    points = budget(_job(utilization=0.4))
    assert "_later" not in points.__dict__ and isinstance(points.hours, np.ndarray)


def test_later_is_made_once_and_lazy_fields_need_no_default():
    calls = []
    later = Later(lambda x: calls.append(x) or x * 2, 21)
    assert later.get() == 42 and later.get() == 42 and calls == [21]

    @dataclasses.dataclass(frozen=True)
    class WithDefault:
        a: int = 1

    with pytest.raises(TypeError, match="lazy"):
        fast_init(lazy=("a",))(WithDefault)


def test_any_order_of_reading_gives_the_same_figures():
    """The device-hours, cost and energy points are made on the first read of any of their ranges
    and each range then writes into its own point: every reading order gives the same arrays."""
    import itertools
    eager = budget(_job())
    want = {name: tuple(np.copy(x) for x in getattr(eager, name)) for name in RANGES}
    for order in itertools.permutations(RANGES):
        b = budget(_job())
        assert set(b.__dict__["_later"]) == set(RANGES)
        for name in order:
            got = getattr(b, name)
            assert all(np.array_equal(x, y) for x, y in zip(got, want[name], strict=True)), (order, name)
        for name in RANGES:   # reading one did not change another already read
            assert all(np.array_equal(x, y) for x, y in zip(getattr(b, name), want[name], strict=True))


def test_array_prices_take_the_eager_path_with_the_same_figures():
    job = _job()
    b = budget(job.with_(price=np.full(64, 2.5)))
    from trainbudget.calc.compose import ranges
    assert b.__dict__["_later"]["cost_usd"].make is ranges._span   # its point made in the call
    assert budget(job).__dict__["_later"]["cost_usd"].make is ranges._taken_span   # made when read
    assert all(np.array_equal(x, y) for x, y in zip(b.cost_usd, budget(job).cost_usd, strict=True))
