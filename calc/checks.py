"""Argument checks shared by every calc function.

Each check turns a scalar, list or array into a float64 ndarray and raises
`TrainingBudgetError` naming the argument, the value and, for arrays, the element.
The checks are whole-array numpy passes, so they cost a few ns per element.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class TrainingBudgetError(ValueError):
    """Bad input to a TrainingBudget function; the message names the argument and the value.

    `field` names the table column at fault when the input was a table row (else None).
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class UnknownDeviceError(TrainingBudgetError):
    """A device name that no table holds; the message lists the closest known names."""


def _where(arr: np.ndarray, bad: np.ndarray) -> tuple[str, Any]:
    """Index text ('' for a scalar, '[i]' or '[i, j]' for arrays) and value of the first bad element."""
    if arr.ndim == 0:
        return "", arr[()]
    idx = np.unravel_index(int(np.argmax(bad)), arr.shape)
    return "[" + ", ".join(str(int(i)) for i in idx) + "]", arr[idx]


def show(value: Any) -> str:
    """A value as a message shows it: numbers plainly (-1, 0.5, 7e+09, nan), text quoted."""
    if isinstance(value, (float, np.floating, int, np.integer)) and not isinstance(value, bool):
        return f"{float(value):g}"
    return repr(value)


def _fail(name: str, arr: np.ndarray, bad: np.ndarray, rule: str) -> TrainingBudgetError:
    where, value = _where(arr, bad)
    return TrainingBudgetError(f"{name}{where} {rule} (got {show(value)})")


def number(name: str, value: Any) -> np.ndarray:
    """`value` as a finite float64 array; text, booleans, None, NaN and infinities are refused."""
    if isinstance(value, (bool, np.bool_)):
        raise TrainingBudgetError(f"{name} must be a number, not a boolean (got {value!r})")
    if type(value) in (float, int):  # the common scalar case, without the object-array pass
        arr = np.array(float(value))
    elif isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
        arr = value.astype(np.float64, copy=False)
    else:
        arr = _strict(name, value)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise _fail(name, arr, bad, "must be a finite number")
    return arr


def _strict(name: str, value: Any) -> np.ndarray:
    """Lists, tuples and object arrays: numbers only, the first offender named with its index."""
    obj = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
    if obj.dtype.kind == "b":
        raise TrainingBudgetError(f"{name} must be a number, not a boolean (got {value!r})")
    flat = obj.reshape(-1)
    for i, v in enumerate(flat):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
            where = "" if obj.ndim == 0 else "[" + ", ".join(str(int(j)) for j in np.unravel_index(i, obj.shape)) + "]"
            raise TrainingBudgetError(f"{name}{where} must be a number (got {show(v)})")
    return np.asarray(obj, dtype=np.float64)


def positive(name: str, value: Any) -> np.ndarray:
    """`value` as a float64 array whose every element is > 0."""
    arr = number(name, value)
    bad = arr <= 0
    if bad.any():
        raise _fail(name, arr, bad, "must be > 0")
    return arr


def non_negative(name: str, value: Any) -> np.ndarray:
    """`value` as a float64 array whose every element is >= 0."""
    arr = number(name, value)
    bad = arr < 0
    if bad.any():
        raise _fail(name, arr, bad, "must be >= 0")
    return arr


def fraction(name: str, value: Any) -> np.ndarray:
    """`value` as a float64 array in (0, 1], e.g. a utilization."""
    arr = number(name, value)
    bad = (arr <= 0) | (arr > 1)
    if bad.any():
        raise _fail(name, arr, bad, "must be in (0, 1]")
    return arr


def whole(name: str, value: Any, minimum: int = 1) -> np.ndarray:
    """`value` as a float64 array of whole numbers >= `minimum` (device counts, layers)."""
    arr = number(name, value)
    bad = (arr < minimum) | (arr != np.floor(arr))
    if bad.any():
        raise _fail(name, arr, bad, f"must be a whole number >= {minimum}")
    return arr


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """`value` as one of `allowed` (case-insensitive; '-' and ' ' read as '_')."""
    key = str(value).strip().lower().replace("-", "_").replace(" ", "_") if isinstance(value, str) else None
    if key not in allowed:
        raise TrainingBudgetError(f"{name} must be one of {', '.join(allowed)} (got {value!r})")
    return key


def out(value: np.ndarray | float) -> np.ndarray | float:
    """Results: a 0-d array becomes a Python float, arrays stay arrays."""
    arr = np.asarray(value)
    return float(arr) if arr.ndim == 0 else arr
