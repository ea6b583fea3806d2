"""What calc raises and how it guards its results: the error classes, a value as a message shows it,
and the checks on a result or on arguments' shapes (`out`, `agree`, `broadcasts`).

calc/base/checks.py (the argument checks) builds on this module.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any, TypeVar

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


class ResultOverflowError(TrainingBudgetError):
    """A result too large for float64: it would be infinity (or NaN)."""


class ResultUnderflowError(ResultOverflowError):
    """A figure that is > 0 by its formula (FLOPs, hours) came out below float64's least normal number
    (0 included): a silent 0 refused. A ResultOverflowError too, so one `except` catches both."""


SHOWN_CHARS = 60  # longest value text a message shows; longer text is cut with an ellipsis
Number = float | np.ndarray
_INF = math.inf
# The least normal float64, 2.2250738585072014e-308 (IEEE 754 binary64; numpy.finfo(float64).tiny): a figure
# that must be > 0 (FLOPs, hours) and comes out below it has underflowed (to 0, or to a subnormal that lost digits).
TINY = float(np.finfo(np.float64).tiny)


def show(value: Any) -> str:
    """A value as given: 1.0000001 stays 1.0000001, -1.0 reads -1, 7e9 reads 7000000000, text quoted."""
    if isinstance(value, (bool, np.bool_)):
        text = str(bool(value))
    elif isinstance(value, (int, np.integer)):
        text = str(int(value))
    elif isinstance(value, (float, np.floating)):
        f = float(value)
        if f.is_integer() and abs(f) < 1e16:
            text = str(int(f))
        else:  # shortest text that reads back as the same number (of the value's own precision)
            text = repr(f) if type(value) in (float, np.float64) else str(value)
    elif isinstance(value, (complex, np.complexfloating)):
        text = repr(complex(value))
    elif isinstance(value, str):  # numpy's str_ too, shown as plain text
        text = repr(str(value))
    else:
        text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


def _index(shape: tuple[int, ...], flat: int) -> str:
    return "" if not shape else "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"


def pick(condition: Any, if_true: Any, if_false: Any) -> Any:
    """`np.where` that stays a plain Python value when `condition` is a Python bool (a scalar call)."""
    if condition is True or condition is False:
        return if_true if condition else if_false
    return np.where(condition, if_true, if_false)


def out(value: Any, finite: bool = True) -> Number:
    """Results: a Python float stays one, a 0-d array becomes one, arrays stay arrays.

    With `finite` (the default) a result that overflowed to infinity or NaN raises `ResultOverflowError`
    rather than reach the caller as a number.
    """
    if type(value) is float:
        if value - value == 0.0 or not finite:
            return value
        raise ResultOverflowError(f"the result overflows float64 (got {show(value)})")
    arr = np.asarray(value, dtype=np.float64)
    if finite and not np.isfinite(arr.sum()):  # one fast pass; find the element only on failure
        bad = ~np.isfinite(arr)
        if bad.any():
            flat = int(np.argmax(bad)) if arr.ndim else 0
            raise ResultOverflowError(f"the result{_index(arr.shape, flat)} overflows float64 "
                           f"(got {show(arr.reshape(-1)[flat])})")
    return float(arr) if arr.ndim == 0 else arr


def out_positive(value: Any, what: str = "result") -> Number:
    """`out` for a figure that is > 0 by its formula (FLOPs, hours): one that underflowed below TINY
    (to 0: a silent 0 hours) is refused as `ResultUnderflowError`, as one that overflowed is."""
    if type(value) is float:
        if TINY <= value < _INF:
            return value
        if value - value == 0.0:
            raise ResultUnderflowError(f"the {what} underflows float64 (got {show(value)})")
        return out(value)
    arr = out(value)  # finite: one reduction finds an underflow, only a failure locates it
    if np.size(arr) and float(np.min(arr)) < TINY:
        flat = int(np.argmax(np.asarray(arr) < TINY)) if np.ndim(arr) else 0
        raise ResultUnderflowError(f"the {what}{_index(np.shape(arr), flat)} underflows float64 "
                                  f"(got {show(np.asarray(arr).reshape(-1)[flat])})")
    return arr


F = TypeVar("F", bound=Callable[..., Any])


def _shaped(bound: inspect.BoundArguments) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of each argument given as an array, list or tuple, keyword options included."""
    items: list[tuple[str, Any]] = []
    for k, v in bound.arguments.items():
        if bound.signature.parameters[k].kind is inspect.Parameter.VAR_KEYWORD:
            items += list(v.items())
        else:
            items.append((k, v))
    shaped = []
    for k, v in items:
        if isinstance(v, (np.ndarray, list, tuple)):
            try:
                shaped.append((k, np.shape(v)))
            except ValueError:  # ragged: its own check says so
                continue
    return shaped


_PLAIN = frozenset((float, int, bool, str, type(None)))  # types that carry no shape


def agree(names: tuple[str, ...], values: tuple[Any, ...]) -> None:
    """Refuse arguments `values` (named by `names`; lists, tuples or arrays) whose shapes do not
    broadcast together, naming the first two: for arguments a mode leaves unused, whose shapes no
    arithmetic would otherwise meet. A call of plain scalars costs one type test per argument."""
    for v in values:
        if type(v) not in _PLAIN:
            break
    else:
        return
    shaped = []
    for k, v in zip(names, values, strict=True):
        if isinstance(v, (np.ndarray, list, tuple)):
            try:
                shaped.append((k, np.shape(v)))
            except ValueError:  # ragged: its own check says so
                continue
    error = _mismatch(shaped)
    if error is not None:
        raise error


def _mismatch(shaped: list[tuple[str, tuple[int, ...]]]) -> TrainingBudgetError | None:
    for i, (b, sb) in enumerate(shaped):
        for a, sa in shaped[:i]:
            try:
                np.broadcast_shapes(sa, sb)
            except ValueError:
                return TrainingBudgetError(f"{a} and {b} have shapes {sa} and {sb} that do not broadcast")
    return None


def _extremes(bound: inspect.BoundArguments) -> str:
    """The numeric arguments whose magnitude is extreme (>= 1e100 or <= 1e-100), as 'name (got v)'."""
    found = []
    for k, v in bound.arguments.items():
        try:
            a = np.abs(np.asarray(v, dtype=np.float64))
        except (TypeError, ValueError):
            continue
        if a.size and (((a >= 1e100) | ((a > 0) & (a <= 1e-100))).any()):
            found.append(f"{k} (got {show(v if a.ndim == 0 else a.max())})")
    return ", ".join(found)


def broadcasts(fn: F) -> F:
    """Decorate a calc function: arguments whose shapes do not broadcast, and results that
    overflow, become `TrainingBudgetError`s that name the arguments (numpy's ValueError never leaks).
    Costs nothing until something fails."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TrainingBudgetError as e:
            if isinstance(e, ResultOverflowError) and not getattr(e, "named", False):
                bound = sig.bind(*args, **kwargs)
                culprits = _extremes(bound)
                new = ResultOverflowError(f"{culprits} out of range: {e}" if culprits
                                          else f"{e}: the inputs are too large for {fn.__name__}")
                new.named = True  # type: ignore[attr-defined]
                raise new from None
            raise
        except ValueError:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                raise
            error = _mismatch(_shaped(bound))
            if error is None:
                raise
            raise error from None

    return checked  # type: ignore[return-value]
