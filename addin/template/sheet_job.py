"""The Budget sheet's inputs as one calc.Job and its Budget (calc.budget, the one composer every cached
figure comes from), and the small cell writers its blocks share (an input, a defined name, a list)."""

from __future__ import annotations

import dataclasses
from typing import Any

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from . import styles
from .cached_cells import style


def job(v: dict[str, Any], table: calc.DeviceTable, **changes: Any) -> calc.Job:
    """The Budget sheet's inputs `v` as a calc.Job (a provider given as v["provider"], v["plan"] and
    v["offering"] is the price "provider:plan[:offering]"; else the typed price; blank: the device row's own)."""
    if v.get("provider"):
        named = f":{v['offering']}" if v.get("offering") else ""
        spec: Any = f"{v['provider']}:{v.get('plan') or 'on_demand'}{named}"
    else:
        spec = v.get("usd_per_device_hour") if isinstance(v.get("usd_per_device_hour"), (int, float)) else None
    return calc.job(params=v["params"], active_params=v.get("active_params"), tokens=v["tokens"],
                    device=v["device"], devices=v["devices"],
                    method=v["method"], optimizer=v["optimizer"], zero_stage=v["zero_stage"],
                    trainable=v["trainable"], activations=v["activations"] * calc.GB,
                    utilization=v["utilization"], price=spec, pue=v["pue"], table=table).with_(**changes)


def budget(v: dict[str, Any], table: calc.DeviceTable, **changes: Any) -> calc.Budget:
    """calc.budget of the sheet's job; a provider with no price for the hardware: no cost, the other
    figures as they are (cached values only: the sheet's results show calc's refusal, input_checks)."""
    j = job(v, table, **changes)
    try:
        return calc.budget(j)
    except calc.TrainingBudgetError:
        if not isinstance(j.pricing.price, str):
            raise
        return dataclasses.replace(calc.budget(j.with_(price=0.0)), cost_usd=None, usd_per_device_hour=None)


def device_row(device: str, table: calc.DeviceTable) -> calc.Device:
    return table.get(calc.prior_device(device, table))


def input_cell(ws: Worksheet, ref: str, value: Any, fmt: str | None = None) -> None:
    cell = style(ws[ref], fmt, styles.INPUT_FONT, styles.INPUT_FILL)
    cell.value, cell.protection, cell.border = value, styles.UNLOCKED, styles.BOX
    if isinstance(value, str):
        cell.data_type = "s"


def name_cell(ws: Worksheet, name: str, ref: str) -> None:
    ws.parent.defined_names[name] = DefinedName(name, attr_text=f"'{ws.title}'!${ref[0]}${ref[1:]}")


def list_cell(ws: Worksheet, ref: str, options: tuple[str, ...] | list[str], strict: bool = False) -> None:
    """A drop-down of `options` on `ref`; `strict`: Excel refuses any other text typed there."""
    dv = DataValidation(type="list", formula1='"' + ",".join(options) + '"', allow_blank=True,
                        showErrorMessage=strict, error=f"one of: {', '.join(options)}" if strict else None)
    ws.add_data_validation(dv)
    dv.add(ref)
