"""What runs inside xlwings Lite: one call of a Lite function, from Excel's values to calc and back.

This module is bundled into the workbook's main.py (see bundle.py) and runs in Pyodide, so it
imports only the standard library, numpy and trainbudget.calc (bundled beside it). It gets what
it knows of a function as plain data (spec.py: names, argument kinds, the calc function's module
and name), never from the registry, which needs openpyxl.

Values in (xlwings' "raw" conversion under Office.js): a number, a string, a bool, None for an
omitted argument or an empty cell ("" as well; an empty cell inside a range is Pyodide's jsnull
from Pyodide 0.28 on), an error cell as a dict (Excel.ErrorCellValue), or a list of row lists for
a range. `plain` reads every argument first: jsnull becomes None and an error cell is refused,
naming the argument and the cell. Out: a float, a text, or a list of rows that spills. Errors are
raised: Lite shows #VALUE! with the message on hover (xlwings-server docs/custom_functions.md).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import calc

MESSAGE_CHARS = 255  # a message's longest text (Excel's own limit for a function's help text)


class LiteError(calc.TrainingBudgetError):
    """A Lite function's error, its message one line of at most MESSAGE_CHARS characters."""


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS - 1] + "…"


def _rows(value: Any) -> list[list[Any]]:
    """A range as rows. Office.js passes every range as rows of cells; xlwings hands a one-row
    range on as that row alone (udfs_officejs.to_scalar), so a flat list is one row."""
    if not any(isinstance(row, (list, tuple)) for row in value):
        return [list(value)]
    return [list(row) if isinstance(row, (list, tuple)) else [row] for row in value]


def _jsnull(cell: Any) -> bool:
    """Pyodide's jsnull: JavaScript's null from Pyodide 0.28 on, which xlwings turns into None only
    for a whole argument (xlwings/pro/udfs_officejs.py js_to_none), not for a cell inside a range."""
    return type(cell).__name__ == "JsNull"


def _empty(cell: Any) -> bool:
    """An empty cell: None, "", or jsnull."""
    return cell is None or (isinstance(cell, str) and cell == "") or _jsnull(cell)


# How Excel shows each errorType of an error cell (Excel.ErrorCellValue,
# https://learn.microsoft.com/javascript/api/excel/excel.errorcellvalue). xlwings declares every
# function with allowErrorForDataTypeAny (udfs_officejs.custom_functions_meta), so an error cell
# reaches the function as {"type": "Error", "errorType": ..., "basicValue": "#N/A", ...}.
ERROR_TEXTS = {"Blocked": "#BLOCKED!", "Busy": "#BUSY!", "Calc": "#CALC!", "Connect": "#CONNECT!",
               "Div0": "#DIV/0!", "External": "#EXTERNAL!", "Field": "#FIELD!", "GettingData": "#GETTING_DATA",
               "Name": "#NAME?", "NotAvailable": "#N/A", "Null": "#NULL!", "Num": "#NUM!", "Python": "#PYTHON!",
               "Ref": "#REF!", "Spill": "#SPILL!", "Value": "#VALUE!"}


def cell_text(cell: dict[Any, Any]) -> str:
    """What a cell holding a data type (a dict) shows: the error's text, or the type's name."""
    if cell.get("type") == "Error":
        shown = cell.get("basicValue")
        if isinstance(shown, str) and shown.startswith("#"):
            return shown[:20]
        return ERROR_TEXTS.get(str(cell.get("errorType")), "an error")
    return f"a data type ({str(cell.get('type', 'unknown'))[:20]}), not a plain value"


def _cell(where: str, cell: Any) -> Any:
    """One cell as the readers take it: jsnull as None; a dict (an error cell) refused."""
    if isinstance(cell, dict):
        raise LiteError(f"{where}: the cell holds {cell_text(cell)}")
    return None if _jsnull(cell) else cell


def plain(name: str, value: Any) -> Any:
    """An argument with jsnull read as None and error cells refused, naming the argument and, in a
    range, the cell (0-based row and column, as `name[i, j]`)."""
    if not isinstance(value, (list, tuple)):
        return _cell(name, value)
    return [[_cell(f"{name}[{i}, {j}]", c) for j, c in enumerate(row)] for i, row in enumerate(_rows(value))]


def _empty_at(name: str, value: Any) -> str | None:
    """'name[i, j]' of the first empty cell of a range, else None."""
    for i, row in enumerate(_rows(value)):
        for j, cell in enumerate(row):
            if _empty(cell):
                return f"{name}[{i}, {j}]"
    return None


def number_in(name: str, value: Any, required: bool) -> Any:
    """A numeric argument: None when omitted (optional), the value, or an array for a range."""
    if _empty(value):
        if required:
            raise LiteError(f"{name} is empty")
        return None
    if not isinstance(value, (list, tuple)):
        return value  # calc names the argument if it is text or a boolean
    rows = _rows(value)
    where = _empty_at(name, rows)
    if where is not None:
        raise LiteError(f"{where} is empty")
    if any(type(v) is bool or isinstance(v, str) for row in rows for v in row):
        return np.array(rows, dtype=object)  # calc says which element is not a number
    return np.array(rows, dtype=np.float64)


def device_in(name: str, value: Any) -> Any:
    """A device argument: a name, a number (TFLOP/s), or an array of either."""
    if _empty(value):
        raise LiteError(f"{name} is empty")
    if isinstance(value, (list, tuple)):
        where = _empty_at(name, value)
        if where is not None:
            raise LiteError(f"{where} is empty")
        return np.array(_rows(value), dtype=object)
    return value


def text_in(name: str, value: Any) -> Any:
    """A text option (method, optimizer, recompute): None when omitted."""
    return None if _empty(value) else value


def flag_in(name: str, value: Any) -> Any:
    """A TRUE/FALSE option; 1 and 0 read as TRUE and FALSE."""
    if _empty(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    raise LiteError(f"{name} must be TRUE or FALSE (got {calc.show_value(value)})")


READERS: dict[str, Callable[..., Any]] = {"device": device_in, "text": text_in, "flag": flag_in}


def _cell_out(v: Any, does_not_fit: str) -> Any:
    if isinstance(v, (float, np.floating)) and not math.isfinite(v):
        return does_not_fit if v > 0 else "#NUM!"  # "#NUM!" becomes Excel's error value
    return v.item() if isinstance(v, np.generic) else v


def value_out(result: Any, does_not_fit: str) -> Any:
    """A calc result as Excel takes it: a float, or rows that spill."""
    if isinstance(result, np.ndarray):
        rows = result.reshape(-1, 1) if result.ndim == 1 else result.reshape(result.shape[0], -1)
        return [[_cell_out(v, does_not_fit) for v in row] for row in rows.tolist()]
    if isinstance(result, list):
        return [[_cell_out(v, does_not_fit) for v in row] for row in result]
    return _cell_out(result, does_not_fit)


def one_scenario(function: str, values: dict[str, Any]) -> dict[str, Any]:
    """`values` for a function that answers one scenario (a table): a one-cell range is that
    cell; a larger range is refused, naming the argument and its size."""
    single = dict(values)
    for name, value in values.items():
        if isinstance(value, np.ndarray):
            if value.size != 1:
                raise LiteError(f"{function} takes one scenario; {name} is a range of {value.size} cells")
            first = value.reshape(-1)[0]
            single[name] = first.item() if isinstance(first, np.generic) else first
    return single


# The Devices table passed as a range (its header row first) --------------------------------


def _key(text: Any) -> str:
    return "".join(str(text or "").lower().split())


def table_from_rows(rows: Any, headers: dict[str, str], required: dict[str, str]) -> calc.DeviceTable:
    """A DeviceTable from a Devices range: a header row, then one row per device (empty rows
    skipped). `headers` maps each accepted header, keyed as _key does, to its Device field;
    `required` maps the fields a table must have to the header that names them."""
    rows = _rows(rows) if isinstance(rows, (list, tuple)) else [[rows]]
    _refuse_error_cells(rows)
    rows = [[None if _empty(v) else v for v in row] for row in rows]
    fields = [headers.get(_key(h)) for h in rows[0]]
    for field, header in required.items():
        if field not in fields:
            found = ", ".join(str(h) for h in rows[0] if not _empty(h))
            raise LiteError(f"devices_table has no {header!r} column in its first row (found: {found or 'nothing'})")
    records = ({f: v for f, v in zip(fields, row, strict=False) if f}
               for row in rows[1:] if any(not _empty(v) for v in row))
    return calc.DeviceTable.from_records(records, "devices_table row")


def _refuse_error_cells(rows: list[list[Any]]) -> None:
    """A LiteError for the first error cell of a Devices range, naming its row and column."""
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            if isinstance(cell, dict):
                header = rows[0][j] if j < len(rows[0]) and isinstance(rows[0][j], str) else f"column {j + 1}"
                if i == 0:
                    raise LiteError(f"devices_table's header row, column {j + 1}: the cell holds {cell_text(cell)}")
                name = row[0] if isinstance(row[0], str) else ""
                raise LiteError(_short(f"devices_table row {i} ({name!r}): the {header!r} cell holds "
                                       f"{cell_text(cell)}"))


@functools.lru_cache(maxsize=8)
def _table(frozen: tuple[tuple[Any, ...], ...], headers: tuple[tuple[str, str], ...],
           required: tuple[tuple[str, str], ...]) -> calc.DeviceTable:
    """The range's devices, then the bundled catalog's (one recalculation reads a table once)."""
    return table_from_rows(frozen, dict(headers), dict(required)).with_fallback(calc.catalog())


def devices_table(value: Any, spec: dict[str, Any]) -> calc.DeviceTable | None:
    """The table a device name resolves against: the range given, else None (calc's catalog)."""
    if _empty(value):
        return None
    if isinstance(value, dict):
        raise LiteError(f"{spec['table_arg']}: the cell holds {cell_text(value)}")
    rows = _rows(value) if isinstance(value, (list, tuple)) else [[value]]
    _refuse_error_cells(rows)
    rows = [[None if _empty(v) else v for v in row] for row in rows]  # one cache key for None, "" and jsnull
    return _table(tuple(tuple(r) for r in rows), tuple(sorted(spec["headers"].items())),
                  tuple(spec["required"].items()))


# One call ------------------------------------------------------------------------------------


def calc_function(target: str) -> Callable[..., Any]:
    """The calc function named 'module:qualname' (module relative to trainbudget.calc), or
    '/module:qualname' for a module bundled beside calc (relative to the package root)."""
    module, _, name = target.partition(":")
    if module.startswith("/"):  # a module bundled beside calc, relative to the package root (spec.BUNDLED)
        obj: Any = importlib.import_module(f"{calc.__name__.rsplit('.', 1)[0]}.{module[1:]}")
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    obj = calc
    for part in module.split("."):  # through this runtime's own calc package, never a newer copy
        found = getattr(obj, part, None)
        obj = found if inspect.ismodule(found) else importlib.import_module(f"{obj.__name__}.{part}")
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _inputs(fn: dict[str, Any]) -> list[dict[str, Any]]:
    """The function's calc arguments (all but the devices_table range)."""
    return [a for a in fn["args"] if a["kind"] != "table"]


def _read(fn: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    read = {}
    for a in _inputs(fn):
        reader = READERS.get(a["kind"])
        given = plain(a["name"], values.get(a["name"]))
        read[a["name"]] = (reader(a["name"], given) if reader else number_in(a["name"], given, a["required"]))
    return one_scenario(fn["name"], read) if fn["one_scenario"] else read


def call(fn: dict[str, Any], values: dict[str, Any], spec: dict[str, Any]) -> Any:
    """Excel's `values` (by argument name) through calc: the result as Excel takes it, or a
    LiteError (one short line) that Lite shows as #VALUE! with its message."""
    try:
        read = _read(fn, values)
        positional = [read[a["name"]] for a in _inputs(fn) if a["required"]]
        keywords = {a["name"]: read[a["name"]] for a in _inputs(fn)
                    if not a["required"] and read[a["name"]] is not None}
        if fn["takes_table"]:
            keywords["table"] = devices_table(values.get(spec["table_arg"]), spec)
        return value_out(calc_function(fn["calc"])(*positional, **keywords), spec["does_not_fit"])
    except LiteError:
        raise
    except calc.TrainingBudgetError as e:
        raise LiteError(_short(str(e)), e.field) from e
    except Exception as e:  # never a traceback in a cell: one line naming what went wrong
        first = str(e).splitlines()[0] if str(e) else ""
        raise LiteError(_short(f"unexpected {type(e).__name__}: {first}")) from e
