"""Native-Excel building blocks: the formula pieces the registry's native equivalents are made of.

Every piece reads the workbook's `Devices` table through structured references of the form
`Devices[[#Data],[Col]]` with INDEX/MATCH: no XLOOKUP, LET or `[@Col]`, which LibreOffice 7.4
lacks. MATCH is case-insensitive, as calc's lookups are (calc also ignores spaces).
"""

from __future__ import annotations

import re
import string
from typing import Any

from ...calc import memory

TABLE = "Devices"
# Workbook header of each Device field (the CSV's snake_case names are accepted too on reading).
HEADERS = {
    "name": "Name", "hardware": "Hardware", "precision": "Precision", "tflops": "TFLOPS",
    "kind": "Kind", "memory_gb": "Memory GB", "memory_tbps": "Memory TB/s", "watts": "Watts",
    "usd_per_device_hour": "USD per device-hour", "source": "Source", "as_of": "As of",
    "note": "Note",
}

DOES_NOT_FIT = "#NUM! does not fit in device memory at this ZeRO stage"

_SIMPLE = re.compile(r"""^(\$?[A-Za-z]{1,3}\$?\d+|[A-Za-z_][\w.]*|\d+(\.\d+)?([eE][+-]?\d+)?|"[^"]*")$""")


def column(field: str) -> str:
    """`Devices[[#Data],[Header]]` for a Device field."""
    return f"{TABLE}[[#Data],[{HEADERS[field]}]]"


def lookup(device: str, field: str) -> str:
    """The `field` of the Devices row named `device` (an expression); a blank field is #N/A, as
    calc refuses a device row without the figure (no watts: no energy)."""
    found = f"INDEX({column(field)},MATCH({device},{column('name')},0))"
    if field == "tflops":  # a number as device means TFLOP/s, as in calc
        return f"IF(ISNUMBER({device}),{device},{found})"
    return f'IF({found}="",NA(),{found})'


def wrap(expr: str) -> str:
    """`expr` in parentheses unless it is one token (a reference, a name, a number, a string)."""
    return expr if _SIMPLE.match(expr.strip()) else f"({expr})"


def excel_literal(value: Any) -> str:
    """A Python value as an Excel literal: 1.5, "adamw", TRUE."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    return repr(float(value)) if isinstance(value, float) else str(value)


def array(values: list[Any]) -> str:
    """An Excel array constant {a,b,c}."""
    return "{" + ",".join(excel_literal(v) for v in values) + "}"


class NativeFormatter(string.Formatter):
    """Fills a native template: `{arg}` is the argument's expression, `{arg:field}` a Devices lookup."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return lookup(value, format_spec) if format_spec else wrap(value)


def render(template: str, exprs: dict[str, str]) -> str:
    """The template with each argument replaced by its Excel expression."""
    return NativeFormatter().vformat(template, (), exprs)


def _escaped(text: str) -> str:
    """Literal braces (array constants) made safe inside a template."""
    return text.replace("{", "{{").replace("}", "}}")


# Memory pieces shared by TRAIN_BYTES, TRAIN_DEVICES_NEEDED and the Budget sheet's breakdown
# (see calc.memory for the sources). Each part is bytes for all devices together.
_OPT = (f"INDEX({_escaped(array(list(memory.OPTIMIZER_BYTES.values())))},"
        f"MATCH({{optimizer}},{_escaped(array(list(memory.OPTIMIZER_BYTES)))},0))")
TRAINABLE = ('IF({method}="full",{params},IF({method}="inference",0,'
             'IF({trainable}<=1,{trainable}*{params},{trainable})))')
WEIGHTS = (f'(IF({{method}}="qlora",{memory.QLORA_BASE_BYTES!r},{memory.WEIGHT_BYTES!r})*{{params}}'
           f'+IF(OR({{method}}="lora",{{method}}="qlora"),{memory.WEIGHT_BYTES!r}*{TRAINABLE},0))')
GRADIENTS = f"{memory.GRAD_BYTES!r}*{TRAINABLE}"
OPTIMIZER = f"{_OPT}*{TRAINABLE}"
MASTER = f"{memory.MASTER_BYTES!r}*{TRAINABLE}"
# Part -> (bytes, the ZeRO stage from which it is sharded over the devices; ZeRO §5)
PARTS = {"weights": (WEIGHTS, 3), "gradients": (GRADIENTS, 2), "optimizer": (OPTIMIZER, 1),
         "master": (MASTER, 1)}


def per_device(part: str) -> str:
    """Template: bytes per device of a model-state part under ZeRO {zero_stage} over {devices}."""
    expr, stage = PARTS[part]
    return f"({expr})/IF({{zero_stage}}>={stage},{{devices}},1)"


def sharded(part: str) -> str:
    """Template: the part's bytes when ZeRO {zero_stage} shards it, else 0."""
    expr, stage = PARTS[part]
    return f"IF({{zero_stage}}>={stage},{expr},0)"
