"""xlwings UDFs: one thin wrapper per registry entry (trainbudget.addin.functions).

The workbook's `xlwings.conf` sheet names this module under `UDF Modules`; "Import Functions"
then writes one VBA wrapper per function. Off Windows, xlwings' decorators do nothing and
these are plain Python functions. Every argument arrives "raw" (floats, strings, None for an
empty cell, tuples of row tuples for a range); every error comes back as a short cell text.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import xlwings as xw

from ..functions.registry import CATEGORY, FUNCTIONS, Arg, ExcelFunction
from ..template.devices_table import devices_for
from . import cells

_READERS: dict[str, Callable[[ExcelFunction, Arg, Any], Any]] = {
    "number": lambda f, a, v: cells.number_in(a.name, v, f.default(a) is inspect.Parameter.empty),
    "device": lambda f, a, v: cells.device_in(a.name, v),
    "text": lambda f, a, v: cells.text_in(v),
    "flag": lambda f, a, v: cells.flag_in(a.name, v),
}


def _signature(spec: ExcelFunction) -> inspect.Signature:
    """Excel's argument list: required first, optional ones default None, then xlwings' `caller`."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(a.name, kind, default=(inspect.Parameter.empty
                                                       if a in spec.required else None))
              for a in spec.args]
    return inspect.Signature([*params, inspect.Parameter("caller", kind, default=None)])


def declare(spec: ExcelFunction, func: Callable = xw.func, arg: Callable = xw.arg,
            ret: Callable = xw.ret) -> Callable[..., Any]:
    """The UDF for `spec`, decorated with `func`, `arg` and `ret` (xlwings' by default)."""
    sig = _signature(spec)
    uses_devices = any(a.kind == "device" for a in spec.args)
    one_scenario = spec.unit == "table"  # TRAIN_BUDGET: one label/value table, so one scenario

    def udf(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            values = {a.name: _READERS[a.kind](spec, a, bound.arguments[a.name]) for a in spec.args}
            if one_scenario:
                values = cells.one_scenario(spec.name, values)
            table = devices_for(bound.arguments["caller"]) if uses_devices else None
            return cells.value_out(spec.call(values, table))
        except Exception as e:  # never a traceback in a cell
            return cells.error_out(e)

    udf.__name__ = udf.__qualname__ = spec.name
    udf.__doc__ = spec.description
    udf.__signature__ = sig  # type: ignore[attr-defined]
    for a in spec.args:
        udf = arg(a.name, "raw", doc=a.doc(spec.default(a)))(udf)
    return func(category=CATEGORY)(ret("raw")(udf))


def _declare_all() -> dict[str, Callable[..., Any]]:
    return {spec.name: declare(spec) for spec in FUNCTIONS}


globals().update(_declare_all())
__all__ = [spec.name for spec in FUNCTIONS]
