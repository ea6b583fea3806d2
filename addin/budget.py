"""The budget as label/value rows: what TRAIN_BUDGET spills and the Budget sheet shows."""

from __future__ import annotations

from typing import Any

from trainbudget import calc

GB = calc.schedule.GB


def budget_rows(params: float, tokens: float, device: Any, utilization: float = 1.0,
                devices: int = 1, usd_per_device_hour: float | None = None, pue: float = 1.0,
                method: str = "full", optimizer: str = "adamw", zero_stage: int = 0,
                table: calc.DeviceTable | None = None) -> list[list[Any]]:
    """[label, value] rows: memory by part (GB, 1e9 bytes), FLOPs, hours, days, cost, energy.

    A figure that needs data the device row lacks (a price, watts) reads as a short text.
    """
    mem = calc.train_memory(params, method=method, optimizer=optimizer, zero_stage=zero_stage,
                            devices=devices)
    job = {"utilization": utilization, "devices": devices, "table": table}
    hours = calc.train_hours(params, tokens, device, **job)
    rows: list[list[Any]] = [[f"{part.capitalize()} (GB per device)", value / GB]
                             for part, value in mem.as_dict().items() if part != "activations"]
    rows += [["FLOPs", calc.train_flops(params, tokens)], ["Hours", hours], ["Days", hours / 24],
             ["Device-hours", hours * devices]]
    rows.append(["Cost (USD)", _or_text(calc.train_cost, params, tokens, device,
                                        usd_per_device_hour=usd_per_device_hour, **job)])
    rows.append(["Energy (kWh)", _or_text(calc.train_energy_kwh, params, tokens, device, pue=pue, **job)])
    return rows


def _or_text(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except calc.TrainingBudgetError as e:
        return f"n/a: {e}"
