"""Argument checks shared by every calc function.

Each check takes a scalar, list or array and raises `TrainingBudgetError` naming the argument,
the value as given and, for arrays, the element. A Python float or int takes a plain-Python
path and comes back as a Python float (an Excel cell is one scalar call: no numpy machinery);
anything else becomes a float64 ndarray checked in whole-array numpy passes (a few ns per
element). Both paths apply the same rules and word their messages the same way.

The error classes, `show` and the guards on results and shapes (`out`, `agree`, `broadcasts`,
`pick`) live in calc/base/errors.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .arith import integral
from .errors import (
    Number,
    TrainingBudgetError,
    _index,
    agree as agree,
    broadcasts as broadcasts,
    out as out,
    pick as pick,
    show,
)

_INF = math.inf


def _fail(name: str, given: Any, arr: np.ndarray, bad: np.ndarray, rule: str) -> TrainingBudgetError:
    """The error for the first bad element, showing it as the caller gave it."""
    flat = int(np.argmax(bad)) if arr.ndim else 0
    where = _index(arr.shape, flat)
    source = np.asarray(given) if np.shape(given) == arr.shape and isinstance(given, (np.ndarray, np.generic)) else arr
    return TrainingBudgetError(f"{name}{where} {rule} (got {show(source.reshape(-1)[flat])})")


def _scalar_fail(name: str, value: Any, rule: str) -> TrainingBudgetError:
    return TrainingBudgetError(f"{name} {rule} (got {show(value)})")


def _scalar(name: str, value: Any) -> float | None:
    """A Python float or int as a finite float (refused if not finite); None for anything else."""
    t = type(value)
    if t is float:
        if value - value == 0.0:  # finite (inf - inf and nan - nan are nan)
            return value
        raise _scalar_fail(name, value, "must be a finite number")
    if t is int:
        try:
            return float(value)
        except OverflowError:
            raise _scalar_fail(name, value, "must be a finite number") from None
    return None


def number(name: str, value: Any) -> Number:
    """`value` as a finite float (scalar in) or float64 array; text, booleans, complex, None, NaN
    and infinities are refused."""
    v = _scalar(name, value)
    return _array(name, value) if v is None else v


def _array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, (bool, np.bool_)):
        raise TrainingBudgetError(f"{name} must be a number, not a boolean (got {show(value)})")
    if isinstance(value, (complex, np.complexfloating)):
        raise _scalar_fail(name, value, "must be a real number")
    arr = _real(name, value)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise _fail(name, value, arr, bad, "must be a finite number")
    return arr


def _real(name: str, value: Any) -> np.ndarray:
    """`value` as a float64 array (not yet checked for finiteness)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
        return value.astype(np.float64, copy=False)
    if isinstance(value, np.ndarray) and value.dtype.kind == "c":
        raise _fail(name, value, value, value.imag != 0, "must be a real number")
    if isinstance(value, (bool, np.bool_)):
        raise TrainingBudgetError(f"{name} must be a number, not a boolean (got {show(value)})")
    if isinstance(value, (complex, np.complexfloating)):
        raise _scalar_fail(name, value, "must be a real number")
    if isinstance(value, np.generic) and value.dtype.kind in "fiu":
        return np.asarray(value, dtype=np.float64)
    return _strict(name, value)


def _strict(name: str, value: Any) -> np.ndarray:
    """Lists, tuples and object arrays: real numbers only, the first offender named with its index."""
    try:
        obj = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
    except ValueError:
        raise TrainingBudgetError(f"{name} must be a number or a rectangular array of numbers "
                                  f"(got {show(value)})") from None
    if obj.dtype.kind == "b":
        raise TrainingBudgetError(f"{name} must be a number, not a boolean (got {show(value)})")
    flat = obj.reshape(-1)
    for i, v in enumerate(flat):
        if isinstance(v, (complex, np.complexfloating)):
            raise TrainingBudgetError(f"{name}{_index(obj.shape, i)} must be a real number (got {show(v)})")
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
            raise TrainingBudgetError(f"{name}{_index(obj.shape, i)} must be a number (got {show(v)})")
    try:
        return np.asarray(obj, dtype=np.float64)
    except OverflowError:  # a Python int beyond float64
        for i, v in enumerate(flat):
            if isinstance(v, int) and abs(v) > 2**1023:
                raise TrainingBudgetError(
                    f"{name}{_index(obj.shape, i)} must be a finite number (got {show(v)})") from None
        raise


def _rule(name: str, value: Any, ok: Callable[[float], bool], bad: Callable[[np.ndarray], np.ndarray],
          rule: str, interval: bool = True) -> Number:
    """`value` checked by `ok` (a scalar) or `bad` (the array's offending elements).

    When the rule is an `interval` (ok for the least and the greatest element means ok for all),
    an array is checked by two reductions (min and max: no temporary arrays; NaN propagates to
    both); only a failing array pays for locating its first offending element.
    """
    v = _scalar(name, value)
    if v is not None:
        if ok(v):
            return v
        raise _scalar_fail(name, value, rule)
    arr = _real(name, value)
    if interval and arr.size:
        lo, hi = float(arr.min()), float(arr.max())
        if lo - lo == 0.0 and hi - hi == 0.0 and ok(lo) and ok(hi):
            return arr
    finite = np.isfinite(arr)
    if not finite.all():
        raise _fail(name, value, arr, ~finite, "must be a finite number")
    mask = bad(arr)
    if mask.any():
        raise _fail(name, value, arr, mask, rule)
    return arr


def positive(name: str, value: Any) -> Number:
    """`value` as a float (or float64 array) whose every element is > 0."""
    if type(value) is float and 0.0 < value < _INF:  # the common cell: no further work
        return value
    return _rule(name, value, lambda v: v > 0, lambda a: a <= 0, "must be > 0")


def non_negative(name: str, value: Any) -> Number:
    """`value` as a float (or float64 array) whose every element is >= 0."""
    if type(value) is float and 0.0 <= value < _INF:
        return value
    return _rule(name, value, lambda v: v >= 0, lambda a: a < 0, "must be >= 0")


def at_least(name: str, value: Any, minimum: float) -> Number:
    """`value` as a float (or float64 array) whose every element is >= `minimum` (e.g. a PUE >= 1)."""
    if type(value) is float and minimum <= value < _INF:
        return value
    return _rule(name, value, lambda v: v >= minimum, lambda a: a < minimum, f"must be >= {show(minimum)}")


def fraction(name: str, value: Any) -> Number:
    """`value` as a float (or float64 array) in (0, 1], e.g. a utilization."""
    if type(value) is float and 0.0 < value <= 1.0:
        return value
    return _rule(name, value, lambda v: 0 < v <= 1, lambda a: (a <= 0) | (a > 1), "must be in (0, 1]")


def whole(name: str, value: Any, minimum: int = 1) -> Number:
    """`value` as a float (or float64 array) of whole numbers >= `minimum` (device counts, layers)."""
    t = type(value)
    if t is float:
        if value >= minimum and value.is_integer():  # NaN and infinities are not whole
            return value
    elif t is int and minimum <= value < 2**53:
        return float(value)
    elif isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size:
        arr = value.astype(np.float64, copy=False)
        lo, hi = float(arr.min()), float(arr.max())  # NaN propagates to both
        if minimum <= lo and hi < _INF and integral(arr):
            return arr
    return _rule(name, value, lambda v: v >= minimum and v.is_integer(),
                 lambda a: (a < minimum) | (a != np.floor(a)), f"must be a whole number >= {minimum}",
                 interval=False)


def whole_in(name: str, value: Any, allowed: tuple[int, ...]) -> Number:
    """`value` as a float (or float64 array) whose every element is one of the whole numbers `allowed`."""
    if type(value) in (int, float) and value in allowed:
        return float(value)
    if (isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size
            and allowed == tuple(range(allowed[0], allowed[-1] + 1))):  # a run of whole numbers:
        lo, hi = float(value.min()), float(value.max())               # no numpy.isin pass
        if allowed[0] <= lo and hi <= allowed[-1] and integral(value):
            return value.astype(np.float64, copy=False)
    rule = "must be " + ", ".join(map(str, allowed[:-1])) + f" or {allowed[-1]}"
    return _rule(name, value, lambda v: v in allowed, lambda a: ~np.isin(a, allowed), rule, interval=False)


def divides(name: str, value: Any, of_name: str, of_value: Any) -> None:
    """Refuse unless every `value` divides `of_value` (checked numbers, broadcast), e.g. a
    tensor-parallel size and the heads it splits; arrays name the first bad element."""
    if type(value) is float and type(of_value) is float:  # the scalar fast path
        if of_value % value:
            raise TrainingBudgetError(f"{name} must divide {of_name} (got {name}={show(value)}, "
                                      f"{of_name}={show(of_value)})")
        return
    a, b = np.broadcast_arrays(np.asarray(value, dtype=np.float64), np.asarray(of_value, dtype=np.float64))
    bad = np.mod(b, a) != 0
    if bad.any():
        flat = int(np.argmax(bad))
        idx = np.unravel_index(flat, a.shape)
        raise TrainingBudgetError(f"{name}{_index(a.shape, flat)} must divide {of_name} "
                                  f"(got {name}={show(a[idx])}, {of_name}={show(b[idx])})")


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """`value` as one of `allowed` (case-insensitive; '-' and ' ' read as '_')."""
    if type(value) is str and value in allowed:  # already canonical (a default, a dropdown's text)
        return value
    key = value.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(value, str) else None
    if key not in allowed:
        raise TrainingBudgetError(f"{name} must be one of {', '.join(allowed)} (got {show(value)})")
    return key


_TRUE = frozenset(("true", "yes", "1"))
_FALSE = frozenset(("false", "no", "0"))


def flag(name: str, value: Any) -> bool:
    """`value` as a bool: True/False (numpy's too), or the text true/false, yes/no, 1/0 in any case.

    Anything else is refused, so 'no' or 'False' can never read as True.
    """
    if value is True or value is False:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, str):
        key = value.strip().lower()
        if key in _TRUE or key in _FALSE:
            return key in _TRUE
    raise TrainingBudgetError(f"{name} must be True or False (got {show(value)})")
