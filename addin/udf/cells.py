"""Values as Excel hands them to a UDF, in and out.

In (xlwings "raw" conversion): a float, a string, a bool, None for an empty cell, or a tuple of
row tuples for a range. Out: a float, a text, or a list of rows that spills. Errors become a
short text that starts like an Excel error, never a traceback.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import calc
from ..functions import native


class Missing(calc.TrainingBudgetError):
    """A required argument's cell is empty."""


def _empty_at(name: str, value: Any) -> str | None:
    """'name[i, j]' of the first empty (None) cell of a range, else None."""
    for i, row in enumerate(value):
        for j, cell in enumerate(row if isinstance(row, (tuple, list)) else (row,)):
            if cell is None or cell == "":
                return f"{name}[{i}, {j}]"
    return None


def number_in(name: str, value: Any, required: bool) -> Any:
    """A numeric argument: None when omitted (optional), a float, or a float array for a range."""
    if value is None or (isinstance(value, str) and value == ""):
        if required:
            raise Missing(f"{name} is empty")
        return None
    if not isinstance(value, (tuple, list)):
        return value  # calc names the argument if it is text or a boolean
    try:
        arr = np.array(value, dtype=np.float64)  # numpy would read TRUE as 1.0: booleans go to calc's check
        if any(type(v) is bool for row in value for v in (row if isinstance(row, (tuple, list)) else (row,))):
            arr = np.array(value, dtype=object)
    except (TypeError, ValueError):
        arr = np.array(value, dtype=object)  # text in the range: calc says which element
    if (arr.dtype == np.float64 and np.isnan(arr).any()) or arr.dtype == object:
        where = _empty_at(name, value)
        if where is not None:
            raise Missing(f"{where} is empty")
    return arr


def device_in(name: str, value: Any) -> Any:
    """A device argument: a name, a number, or an array of either."""
    if value is None or value == "":
        raise Missing(f"{name} is empty")
    if isinstance(value, (tuple, list)):
        where = _empty_at(name, value)
        if where is not None:
            raise Missing(f"{where} is empty")
        return np.array(value, dtype=object)
    return value


def text_in(value: Any) -> Any:
    """A text option (method, optimizer, recompute): None when omitted."""
    return None if value is None or value == "" else value


def flag_in(name: str, value: Any) -> Any:
    """A TRUE/FALSE option; 1 and 0 read as TRUE and FALSE."""
    if value is None or value == "":
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    raise calc.TrainingBudgetError(f"{name} must be TRUE or FALSE (got {calc.show_value(value)})")


def _cell_out(v: Any) -> Any:
    if isinstance(v, (float, np.floating)) and not math.isfinite(v):
        return native.DOES_NOT_FIT if v > 0 else "#NUM!"
    return v.item() if isinstance(v, np.generic) else v


def value_out(result: Any) -> Any:
    """A calc result as Excel takes it: a float, or rows of floats that spill."""
    if isinstance(result, np.ndarray):
        rows = result.reshape(-1, 1) if result.ndim == 1 else result.reshape(result.shape[0], -1)
        if np.isfinite(rows).all():
            return rows.tolist()
        return [[_cell_out(v) for v in row] for row in rows.tolist()]
    if isinstance(result, list):
        return [[_cell_out(v) for v in row] for row in result]
    return _cell_out(result)


MESSAGE_CHARS = 255  # a cell message's longest text (Excel's own limit for a function's help text)


def _short(text: str) -> str:
    """One line of at most MESSAGE_CHARS characters, cut with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS - 1] + "…"


def error_out(error: Exception) -> str:
    """A short cell text for an error: '#N/A ...' for an unknown device, '#VALUE! ...' otherwise."""
    if isinstance(error, calc.UnknownDeviceError):
        return _short(f"#N/A {error}")
    if isinstance(error, calc.TrainingBudgetError):
        return _short(f"#VALUE! {error}")
    return _short(f"#VALUE! unexpected {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")


def one_scenario(function: str, values: dict[str, Any]) -> dict[str, Any]:
    """`values` for a function that answers one scenario (a table): a range of one cell is that
    cell; a larger range is refused, naming the argument and its size."""
    single = dict(values)
    for name, value in values.items():
        if isinstance(value, np.ndarray):
            if value.size != 1:
                raise calc.TrainingBudgetError(
                    f"{function} takes one scenario; {name} is a range of {value.size} cells")
            single[name] = value.reshape(-1)[0].item() if value.dtype != object else value.reshape(-1)[0]
    return single
