"""Choices and extremes that take a float or an array and give the same value either way.

The step's formulas are written once (calc.step.terms, calc.step.step) and serve one question in
plain Python floats (no numpy call: a cell's answer in microseconds) and a million jobs as numpy
arrays, the way calc/base/arith.py serves the rest of calc. A Python float or bool goes through
Python's own comparison; anything else through numpy's ufunc, with the same IEEE value element
by element.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

_SCALAR = (float, int, bool)


def pick(cond: Any, if_true: Any, if_false: Any) -> Any:
    """`if_true` where `cond`, else `if_false` (numpy.where's value)."""
    if type(cond) is bool:
        return if_true if cond else if_false
    return np.where(cond, if_true, if_false)


def when(cond: Any, term: Callable[[], Any]) -> Any:
    """`term()` where `cond`, else 0.0; a scalar False never computes the term (a gated part of the step)."""
    if type(cond) is bool:
        return term() if cond else 0.0
    if not np.any(cond):
        return 0.0
    return np.where(cond, term(), 0.0)


def most(a: Any, b: Any) -> Any:
    """max(a, b) element by element (numpy.maximum's value)."""
    if type(a) in _SCALAR and type(b) in _SCALAR:
        return a if a >= b else b
    return np.maximum(a, b)


def least(a: Any, b: Any) -> Any:
    """min(a, b) element by element (numpy.minimum's value)."""
    if type(a) in _SCALAR and type(b) in _SCALAR:
        return a if a <= b else b
    return np.minimum(a, b)


def floor(x: Any) -> Any:
    """The whole part of a non-negative x (numpy.floor's value), a float for a float."""
    if type(x) is float:
        return float(math.floor(x))
    return np.floor(x)


def ceil(x: Any) -> Any:
    """The least whole number >= x (numpy.ceil's value), a float for a float."""
    if type(x) is float:
        return float(math.ceil(x))
    return np.ceil(x)


def take(values: tuple[float, ...], index: Any) -> Any:
    """values[index] for a whole-number index, or an array of them."""
    if type(index) in _SCALAR:
        return values[int(index)]
    return np.take(np.asarray(values), np.asarray(index, dtype=np.int64))
