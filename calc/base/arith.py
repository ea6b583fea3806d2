"""Arithmetic helpers that take a float or an array and give the same value either way.

calc writes each formula once, for a Python float (an Excel cell: plain Python, no numpy call)
and for arrays of jobs (numpy, whole-array passes). These helpers are what lets one expression
serve both: a Python float goes through Python's arithmetic, an array through numpy's, with
the same IEEE result element by element. On arrays they save passes: on this VM a pass that
writes a new 1e6-element array costs 3 to 6 times one that writes in place (fresh memory is
page-faulted in), so:
- identities are skipped (x / 1.0, x + 0.0 are x exactly: `over`, `plus`);
- `times` / `plus` / `over` / `ratio` / `sum_into` write into a `fresh` array (one this code
  made, that no one else holds) rather than allocate;
- `shard` is x / (d where on, else 1): numpy.where's value, in one allocation;
- `finite_below`: a non-negative figure whose sum times the largest factor is under SAFE cannot
  overflow, so one reduction checks a whole range;
- `log10` is numpy's ufunc, a float for a float (Python arithmetic after it, not numpy scalars');
- `integral` checks whole numbers in cache-sized blocks (no 8 MB temporaries).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

SAFE = 1e300  # a bound below float64's largest (1.8e308): products under it cannot overflow


def _into(x: Any, other: Any) -> bool:
    """Whether x op other keeps x's shape (so the result may go into x)."""
    shape = np.shape(other)
    return shape == () or shape == x.shape or _shape(x.shape, shape) == x.shape


def _shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shapes broadcast together, or None where they do not (numpy's own op then says so)."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


def times(x: Any, c: Any, fresh: bool = False) -> Any:
    """x · c (into x when x is a `fresh` array that keeps its shape)."""
    if fresh and type(x) is not float and isinstance(x, np.ndarray) and x.ndim and _into(x, c):
        return np.multiply(x, c, out=x)
    return x * c


def plus(x: Any, y: Any, fresh: bool = False) -> Any:
    """x + y (y = 0.0 gives x; into x when x is a `fresh` array that keeps its shape)."""
    if type(y) is float and y == 0.0:
        return x
    if fresh and isinstance(x, np.ndarray) and x.ndim and _into(x, y):
        return np.add(x, y, out=x)
    return x + y


def sum_into(buf: Any, x: Any, y: Any) -> Any:
    """x + y, into `buf` (an array no one else holds, or None) when it has the result's shape."""
    if isinstance(buf, np.ndarray) and buf.ndim and _shape(np.shape(x), np.shape(y)) == buf.shape:
        return np.add(x, y, out=buf)
    return x + y


def over(x: Any, d: Any, fresh: bool = False) -> Any:
    """x / d (d = 1.0 gives x; into x when x is a `fresh` array that keeps its shape)."""
    if type(d) is float and d == 1.0:
        return x
    if fresh and isinstance(x, np.ndarray) and x.ndim and _into(x, d):
        return np.divide(x, d, out=x)
    return x / d


def ratio(x: Any, d: Any, fresh: bool = False) -> Any:
    """x / d (into d when d is a `fresh` array that keeps its shape)."""
    if fresh and isinstance(d, np.ndarray) and d.ndim and _into(d, x):
        return np.divide(x, d, out=d)
    return x / d


def shard(x: Any, on: Any, d: Any) -> Any:
    """x / d where `on`, else x (numpy.where(on, d, 1.0) as the divisor; d >= 1, a whole count).

    On arrays: max(d · on, 1) is d where on and 1 elsewhere, exactly (d >= 1), then one divide
    into that buffer: three passes, one allocation."""
    if on is True or on is False:
        if on and type(x) is float and type(d) is float:
            return x / d  # over(x, d): x / 1.0 is x exactly, so no identity test on floats
        return over(x, d) if on else x
    div = np.multiply(d, on)
    if not isinstance(div, np.ndarray) or not div.ndim or not _into(div, x):
        return x / np.maximum(div, 1.0)
    np.maximum(div, 1.0, out=div)
    return np.divide(x, div, out=div)


def log10(x: Any) -> Any:
    """numpy's log10 (one ufunc for floats and arrays alike, so a scalar job's figure equals its
    element of an array), a Python float for a float: the arithmetic after it runs on floats."""
    return float(np.log10(x)) if type(x) is float else np.log10(x)


def finite_below(bound: float) -> bool:
    """Whether `bound` (a figure's sum times its largest factor) is a number under SAFE."""
    return bound < SAFE and not math.isnan(bound)


_BLOCK = 1 << 15  # elements per block: 256 KiB of float64, a buffer that stays in cache


def integral(arr: np.ndarray) -> bool:
    """Whether every element of a float array is a whole number (NaN is not; an infinity passes,
    so callers bound the range with min and max).

    Checked in blocks through one small buffer, so a 1e6-element array costs two passes in
    cache rather than two 8 MB temporaries (np.array_equal(np.floor(a), a))."""
    flat = arr.reshape(-1)
    if flat.size <= _BLOCK:
        return bool(np.array_equal(np.floor(flat), flat))
    buf, same = np.empty(_BLOCK), np.empty(_BLOCK, dtype=bool)
    for i in range(0, flat.size, _BLOCK):
        x = flat[i:i + _BLOCK]
        b, eq = buf[:x.size], same[:x.size]
        np.floor(x, out=b)
        if not np.equal(b, x, out=eq).all():
            return False
    return True
