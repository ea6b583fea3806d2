"""The registry as plain data for the Lite edition: what main.py declares and runtime.py calls.

Read-only over trainbudget.addin.functions.registry (the one definition of every function):
names, descriptions, argument docs and kinds, which arguments are required, and where the calc
function lives. The Lite signature is the desktop UDF's without xlwings' `caller`, plus one
optional trailing `devices_table` range on functions that take a device, since a Lite function
receives its arguments and nothing else (xlwings/pro/caller.py: "a custom function receives its
arguments and nothing else").
"""

from __future__ import annotations

import inspect
from typing import Any

from ... import calc
from ..functions import native
from ..functions.registry import FUNCTIONS, LITE_TABLE, ExcelFunction
from ..template import devices_table as workbook_devices

# Modules of the add-in that main.py bundles beside calc (each imports only calc and numpy): the step
# model's functions (functions.step_calls), relative to the package root.
BUNDLED = ("addin.functions.step_calls",)
TABLE_ARG = LITE_TABLE.name
TABLE_DOC = LITE_TABLE.doc(None)  # "... [range]. Optional; default the catalog bundled in main.py."


def calc_target(spec: ExcelFunction) -> str:
    """'module:qualname' of the calc function behind `spec`, the module relative to calc; a function
    of a module Lite bundles beside calc (BUNDLED: one that imports only calc) is '/module:qualname',
    the module relative to the package root."""
    fn = spec.calc
    module = fn.__module__
    prefix = calc.__name__ + "."
    if module.startswith(prefix):
        return f"{module[len(prefix):]}:{fn.__qualname__}"
    root = calc.__name__.rsplit(".", 1)[0] + "."
    if module.startswith(root) and module[len(root):] in BUNDLED:
        return f"/{module[len(root):]}:{fn.__qualname__}"
    raise calc.TrainingBudgetError(f"{spec.name}: {module}.{fn.__qualname__} is not in trainbudget.calc")


def uses_devices(spec: ExcelFunction) -> bool:
    return spec.takes_device


def function(spec: ExcelFunction) -> dict[str, Any]:
    """One function as data: its name, description, arguments and calc target."""
    args = [{"name": a.name, "kind": a.kind, "doc": a.doc(spec.default(a)), "required": a in spec.required}
            for a in spec.args]
    if uses_devices(spec):
        args.append({"name": TABLE_ARG, "kind": "table", "doc": TABLE_DOC, "required": False})
    return {"name": spec.name, "description": spec.description, "calc": calc_target(spec), "args": args,
            "takes_table": "table" in inspect.signature(spec.calc).parameters,
            "one_scenario": spec.unit == "table"}


def headers() -> dict[str, str]:
    """Every header the Devices table may carry (case and spaces ignored) -> its Device field, as
    the desktop add-in reads them (template.devices_table)."""
    names = [*native.HEADERS.values(), *native.HEADERS, *workbook_devices.LEGACY_HEADERS]
    fields = workbook_devices.header_fields(names)
    return {"".join(n.lower().split()): f for n, f in zip(names, fields, strict=True) if f}


def build() -> dict[str, Any]:
    """The whole spec main.py carries: every function, the table's headers, the does-not-fit text."""
    return {"functions": [function(s) for s in FUNCTIONS], "headers": headers(),
            "required": {f: native.HEADERS[f] for f in workbook_devices.REQUIRED_FIELDS}, "table_arg": TABLE_ARG,
            "does_not_fit": native.DOES_NOT_FIT}
