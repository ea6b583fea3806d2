"""The registry's two types: an Excel function's argument (`Arg`) and the function itself
(`ExcelFunction`: name, the calc function behind it, arguments, native equivalent). The entries
are in registry (and step_registry for the step model's)."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ... import calc
from . import native

REQUIRED = inspect.Parameter.empty
CATEGORY = "TrainingBudget"
_REF = re.compile(r"^\$?[A-Za-z]{1,3}\$?\d+$")


@dataclass(frozen=True)
class Arg:
    """One argument: `name` as in calc and in Excel, its unit and one-line help."""

    name: str
    unit: str
    help: str
    native_default: str | None = None  # Excel expression when omitted; else the calc default
    kind: str = "number"  # number | device | text | flag | table (LITE_TABLE): how a cell's value is read
    default_text: str | None = None  # how docs describe an omitted value, where calc's default is None

    def doc(self, default: Any) -> str:
        """Argument help as Excel's function wizard shows it (<= 255 characters)."""
        tail = "" if default is REQUIRED else f" Optional; default {self.describe(default)}."
        return f"{self.help} [{self.unit}].{tail}"[:255]

    def describe(self, default: Any) -> str:
        """The default in words: an Excel literal, or this argument's text for None."""
        return (self.default_text or "none") if default is None else native.excel_literal(default)


# The xlwings Lite edition's one extra argument, after all others on every function that takes a
# device: a Lite function receives its arguments and nothing else (xlwings/pro/caller.py), so the
# workbook's Devices rows come in as a range. The desktop add-in reads the Devices sheet itself.
LITE_TABLE = Arg("devices_table", "range", "The workbook's Devices table with its header row, e.g. Devices[#All], "
                 "so its measured rows count", kind="table", default_text="the catalog bundled in main.py")


@dataclass(frozen=True)
class ExcelFunction:
    """An Excel function: name, the calc function behind it, arguments, native equivalent."""

    name: str
    summary: str
    unit: str
    calc: Callable[..., Any]
    args: tuple[Arg, ...]
    native: str | None
    example: tuple[str, ...]

    @property
    def takes_device(self) -> bool:
        """A device argument: the Lite edition adds LITE_TABLE after the others."""
        return any(a.kind == "device" for a in self.args)

    @functools.cached_property
    def _parameters(self) -> dict[str, inspect.Parameter]:
        """The calc function's parameters, read once (inspect is slow, and UDF calls are many)."""
        return dict(inspect.signature(self.calc).parameters)

    def default(self, arg: Arg) -> Any:
        """The calc function's default for `arg` (REQUIRED when it has none; None for an option the
        calc function takes through **flops_options, e.g. train_hours' active_params)."""
        p = self._parameters.get(arg.name)
        if p is None and any(q.kind is inspect.Parameter.VAR_KEYWORD for q in self._parameters.values()):
            return None
        return self._parameters[arg.name].default

    @property
    def example_values(self) -> dict[str, Any]:
        """The example's arguments as the add-in receives them: '7E9' -> 7e9, '"adamw"' -> 'adamw'."""
        def value(text: str) -> Any:
            if text in ("TRUE", "FALSE"):
                return text == "TRUE"
            try:
                return float(text)
            except ValueError:
                return text.strip('"')
        return {a.name: value(t) for a, t in zip(self.args, self.example, strict=False)}

    @property
    def example_exprs(self) -> dict[str, str]:
        """The example's arguments as Excel text, by argument name."""
        return {a.name: t for a, t in zip(self.args, self.example, strict=False)}

    @functools.cached_property
    def required(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if self.default(a) is REQUIRED)

    @property
    def description(self) -> str:
        return f"{self.summary} [{self.unit}]"[:255]

    def call(self, values: dict[str, Any], table: calc.DeviceTable | None = None) -> Any:
        """Call calc with Excel's values; an omitted optional argument takes calc's default."""
        positional = [values[a.name] for a in self.required]
        keywords = {a.name: values[a.name] for a in self.args
                    if self.default(a) is not REQUIRED and values.get(a.name) is not None}
        if "table" in self._parameters:
            keywords["table"] = table
        return self.calc(*positional, **keywords)

    def native_formula(self, exprs: dict[str, str], blank_means_default: bool = True,
                       cells: frozenset[str] | None = None,
                       helpers: dict[str, str] | None = None) -> str:
        """The native Excel expression for this call; `exprs` maps argument names to Excel text.

        An omitted optional argument takes its native default; with `blank_means_default`,
        one given as a single-cell reference takes the default when the cell is blank, as the
        add-in does (`cells`: the arguments given as one cell or a name, by the caller's
        tokenizer; by default a plain A1 reference). `helpers` names cells that hold derived
        figures ("device:tflops", "_trainable", ...; see native.render), used instead of
        computing them inline.
        """
        if self.native is None:
            raise calc.TrainingBudgetError(f"{self.name} has no native Excel equivalent")
        filled = dict(exprs)
        for a in self.args:
            if a.name in filled or self.default(a) is REQUIRED:
                continue
            filled[a.name] = self._native_default(a, filled)
        for a in self.args:
            given = exprs.get(a.name)
            if blank_means_default and given and self.default(a) is not REQUIRED and (
                    a.name in cells if cells is not None else _REF.match(given)):
                filled[a.name] = f'IF({given}="",{self._native_default(a, exprs)},{given})'
        return native.render(self.native, {**filled, **(helpers or {})})

    def _native_default(self, a: Arg, exprs: dict[str, str]) -> str:
        if a.native_default is not None:
            return native.render(a.native_default, exprs)
        return native.excel_literal(self.default(a))
