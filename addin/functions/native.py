"""Native-Excel building blocks: the formula pieces the registry's native equivalents are made of.

Every piece reads the workbook's `Devices` table through structured references of the form
`Devices[[#Data],[Col]]` with INDEX/MATCH: no XLOOKUP, LET or `[@Col]`, which LibreOffice 7.4
lacks. MATCH is case-insensitive, as calc's lookups are (calc also ignores spaces).
"""

from __future__ import annotations

import re
import string
from typing import Any

from ... import calc
from . import fold
from .plan_native import USABLE_GIB

TABLE = "Devices"
OPTIMIZER_TABLE = "Optimizers"  # optimizer -> bytes per trainable parameter, on the About sheet
# Workbook header of each Device field (the CSV's snake_case names are accepted too on reading).
HEADERS = {
    "name": "Name", "hardware": "Hardware", "precision": "Precision", "tflops": "TFLOP/s",
    "kind": "Kind", "memory_gib": "Memory GiB", "memory_tbps": "Memory TB/s", "watts": "Watts",
    "usd_per_device_hour": "USD per device-hour", "source": "Source", "as_of": "As of",
    "note": "Note",
}
# The Optimizers table: bytes of optimizer state per trainable parameter (calc.physics.memory), with sources.
OPTIMIZER_HEADERS = ("Optimizer", "Bytes per parameter", "Source")
OPTIMIZER_SOURCES = {
    "adamw": "m and v in fp32 (ZeRO, arXiv:1910.02054, section 3.1)",
    "adamw_8bit": "m and v in 8 bits (Dettmers et al. 2021, arXiv:2110.02861)",
    "adamw_bf16": "m and v in bf16 (DeepSeek-V3, arXiv:2412.19437, section 3.3.3)",
    "adafactor": "factored second moment, about 4 bytes (Hugging Face performance docs)",
    "lion": "one fp32 momentum (Chen et al. 2023, arXiv:2302.06675)",
    "sgd_momentum": "one fp32 momentum buffer",
    "sgd": "no state",
}

NAMES = "DeviceNames"  # defined name: Devices[Name], also the Budget's device list (the export adds
#                        it to a user's workbook with the Devices table, see export.mailcopy)
DOES_NOT_FIT = "#NUM! does not fit in device memory at this ZeRO stage"
GB = "1E9"  # a decimal gigabyte, for figures whose label says GB (calc.GB)
GIB = "2^30"  # a device's memory is a capacity in GiB (calc.GIB)

_SIMPLE = re.compile(r"""^(\$?[A-Za-z]{1,3}\$?\d+|[A-Za-z_][\w.]*|\d+(\.\d+)?([eE][+-]?\d+)?|"[^"]*")$""")


def column(field: str) -> str:
    """`Devices[Header]`: the data of a Device field's column."""
    return f"{TABLE}[{HEADERS[field]}]"


def lookup(device: str, field: str) -> str:
    """The `field` of the Devices row named `device` (an expression); a blank field is #N/A, as
    calc refuses a device row without the figure (no watts: no energy)."""
    found = f"INDEX({column(field)},MATCH({device},{NAMES},0))"
    if field == "tflops":  # a number as device means TFLOP/s, as in calc
        return f"IF(ISNUMBER({device}),{device},{found})"
    if field == "usd_per_device_hour":  # a price of 0 is a price
        return f'IF({found}="",NA(),{found})'
    return f"IF({found}>0,{found},NA())"  # memory and watts: blank (or 0) is no figure


def optimizer_bytes(optimizer: str) -> str:
    """Optimizer bytes per trainable parameter: the number itself for a written name, else a
    lookup in the workbook's Optimizers table."""
    node = fold.parse(optimizer)
    if isinstance(node, fold.Lit) and isinstance(node.value, str) and node.value.lower() in calc.OPTIMIZER_BYTES:
        return fold.literal(calc.OPTIMIZER_BYTES[node.value.lower()])
    key, value, _ = OPTIMIZER_HEADERS
    return f"INDEX({OPTIMIZER_TABLE}[{value}],MATCH({optimizer},{OPTIMIZER_TABLE}[{key}],0))"


def wrap(expr: str) -> str:
    """`expr` in parentheses unless it is one token (a reference, a name, a number, a string)."""
    return expr if _SIMPLE.match(expr.strip()) else f"({expr})"


def excel_literal(value: Any) -> str:
    """A Python value as an Excel literal: 1.5, 7E9, "adamw", TRUE."""
    return fold.literal(value)


def render(template: str, exprs: dict[str, str]) -> str:
    """The template with each argument replaced by its Excel expression, then folded (what is
    known when the formula is written is resolved then). `exprs` may hold ready expressions for
    lookups ("device:tflops") and derived figures ("_trainable"), e.g. helper cells' names."""
    filled = dict(exprs)
    if "_trainable" not in filled and {"method", "params", "trainable"} <= filled.keys():
        filled["_trainable"] = fold.fold(_render(TRAINABLE, filled))
    if "optimizer" in filled and "_optimizer_bytes" not in filled:
        filled["_optimizer_bytes"] = optimizer_bytes(filled["optimizer"])
    if "{_job_flops}" in template and "_job_flops" not in filled:  # inline: the FLOPs' own expression
        template = template.replace(JOB_FLOPS, JOB_FLOPS_EXPR)
    if "{_flops_per_param_token}" in template and "_flops_per_param_token" not in filled:
        filled["_flops_per_param_token"] = flops_per_param_token(filled.get("method"))
    if "{_devices_needed}" in template:
        filled["_devices_needed"] = _devices_needed(filled)
    return fold.fold(_render(template, filled))


FLOPS_PER_PARAM_TOKEN = "{_flops_per_param_token}"  # the registry's FLOPs and hours read this piece
# The job's FLOPs, the registry's hours, cost and energy numerator: FLOPs per parameter-token times
# active parameters times tokens (calc.physics.flops), inline unless a sheet names a row for it (the
# Budget's Job_FLOPs: its every-device rows then read one name, not the three factors).
JOB_FLOPS = "{_job_flops}"
JOB_FLOPS_EXPR = FLOPS_PER_PARAM_TOKEN + "*{active_params}*{tokens}"


def job_flops(exprs: dict[str, str]) -> str:
    """The job's FLOPs as an expression of `exprs` (the named inputs and helpers): a helper row's formula."""
    return render(JOB_FLOPS_EXPR, exprs)


def flops_per_param_token(method: str | None = None) -> str:
    """FLOPs per parameter per token of the method `method` names (an expression; None: a function
    without a method, a training step): calc.FLOPS_PER_PARAM_TOKEN, 6 for a full training
    step, 4 through frozen base weights (lora, qlora), 2 for inference's forward pass; one IF per
    factor other than 6, its methods in one OR. A sheet that knows its job's method gives this
    piece a named row (the Budget's FLOPs_per_token)."""
    train = fold.literal(calc.TRAIN_FLOPS_PER_PARAM_TOKEN)
    if method is None:
        return train
    by_factor: dict[float, list[str]] = {}
    for name, k in calc.FLOPS_PER_PARAM_TOKEN.items():
        if k != calc.TRAIN_FLOPS_PER_PARAM_TOKEN:
            by_factor.setdefault(k, []).append(f'{method}="{name}"')
    expr = train
    for k, tests in reversed(by_factor.items()):
        expr = f"IF({tests[0] if len(tests) == 1 else 'OR(' + ','.join(tests) + ')'},{fold.literal(k)},{expr})"
    return fold.fold(expr)


def _devices_needed(exprs: dict[str, str]) -> str:
    """Smallest device count that holds the job (calc.devices_needed): the sharded
    parts over the room the unsharded parts and activations leave in one device's usable memory
    (plan_native.USABLE_GIB: capacity less the larger of 3 GiB and 5%, calc/hardware/capacity.py).
    `exprs` may name ready figures: "_sharded_bytes" and "_fixed_bytes" (unsharded parts plus
    activations) and "_usable_gib", e.g. a sheet's helper rows."""
    fixed = exprs.get("_fixed_bytes") or fold.fold(
        _render("+".join([unsharded(p) for p in PARTS] + ["{activations}"]), exprs))
    whole = exprs.get("_sharded_bytes") or fold.fold(_render("+".join(sharded(p) for p in PARTS), exprs))
    memory = exprs.get("device:memory_gib") or (
        f"INDEX({column('memory_gib')},MATCH({exprs['device']},{NAMES},0))")
    if fixed == "0":
        return devices_needed(whole, None, exprs.get("_usable_gib") or usable_gib(memory))
    return devices_needed(whole, fixed, exprs.get("_usable_gib") or usable_gib(_render("{device:memory_gib}", exprs)))


def usable_gib(memory_gib: str) -> str:
    """GiB a job may use of a device of `memory_gib` GiB: plan_native.USABLE_GIB, the capacity less
    the larger of RESERVE_GIB and RESERVE_SHARE of it (calc.usable_bytes_of)."""
    return _render(USABLE_GIB, {"device:memory_gib": memory_gib})


def devices_needed(sharded_bytes: str, fixed_bytes: str | None, usable_gib: str) -> str:
    """Smallest device count: the sharded bytes over the room one device's usable memory
    (`usable_gib`, GiB: see usable_gib) leaves after the fixed bytes. A row's memory is the vendor's
    "80GB" of HBM, which is 80 GiB (2^30 bytes; see calc.hardware.catalog); the 1E-12 keeps an exact fit
    from rounding up."""
    if fixed_bytes is None:
        return f"MAX(1,ROUNDUP({wrap(sharded_bytes)}/({wrap(usable_gib)}*{GIB})*(1-1E-12),0))"
    room = f"({wrap(usable_gib)}*{GIB}-{wrap(fixed_bytes)})"
    return (f'IF({room}<=0,"{DOES_NOT_FIT}",'
            f"MAX(1,ROUNDUP({wrap(sharded_bytes)}/{room}*(1-1E-12),0)))")


def _render(template: str, exprs: dict[str, str]) -> str:
    out = []
    for literal_text, name, spec, _ in string.Formatter().parse(template):
        out.append(literal_text)
        if name is None:
            continue
        if spec and f"{name}:{spec}" in exprs:
            out.append(wrap(exprs[f"{name}:{spec}"]))
        else:
            out.append(lookup(exprs[name], spec) if spec else wrap(exprs[name]))
    return "".join(out)


# Memory pieces shared by TRAIN_BYTES, TRAIN_DEVICES_NEEDED and the Budget sheet's breakdown
# (see calc.physics.memory for the sources). Each part is bytes for all devices together;
# {_trainable} is the trainable parameter count (TRAINABLE), {_optimizer_bytes} the optimizer's
# bytes per trainable parameter.
TRAINABLE = ('IF({method}="full",{params},IF({method}="inference",0,'
             'IF({trainable}<=1,{trainable}*{params},{trainable})))')
WEIGHTS = (f'IF({{method}}="qlora",{fold.literal(calc.QLORA_BASE_BYTES)},'
           f'{fold.literal(calc.WEIGHT_BYTES)})*{{params}}'
           f'+IF(OR({{method}}="lora",{{method}}="qlora"),{fold.literal(calc.WEIGHT_BYTES)}*{{_trainable}},0)')
GRADIENTS = f"{fold.literal(calc.GRAD_BYTES)}*{{_trainable}}"
OPTIMIZER = "{_optimizer_bytes}*{_trainable}"
MASTER = f"{fold.literal(calc.MASTER_BYTES)}*{{_trainable}}"
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


def unsharded(part: str) -> str:
    """Template: the part's bytes when ZeRO {zero_stage} leaves it whole on every device, else 0."""
    expr, stage = PARTS[part]
    return f"IF({{zero_stage}}>={stage},0,{expr})"
