"""Reports as plain data: the budget rows TRAIN_BUDGET spills, and the tables behind the
`estimate`, `devices` and `runs` commands. Plain Python values (dicts, lists, floats), so the
command line can print them as text, JSON or CSV and the UDFs can spill them; nothing here
formats or prints.
"""

from __future__ import annotations

from typing import Any

from . import devices as _devices
from . import runs as _runs
from .checks import TrainingBudgetError
from .devices import DeviceTable, catalog
from .flops import train_flops
from .memory import train_memory
from .schedule import GB, train_cost, train_energy_kwh, train_hours

# The starting document's scenario and its four rates, in its order: a 7B full fine-tune on
# 1B tokens, on two matmul rates measured on an Apple M3 Ultra and on the H100 SXM's dense peaks.
SEED_PARAMS = 7e9
SEED_TOKENS = 1e9
SEED_DEVICES = (
    "M3 Ultra, MLX fp32 matmul (measured)",
    "M3 Ultra, PyTorch MPS bf16 matmul (measured)",
    "H100 SXM, BF16 tensor core, dense",
    "H100 SXM, FP8 tensor core, dense",
)


def budget_rows(params: float, tokens: float, device: Any, utilization: float = 1.0,
                devices: int = 1, usd_per_device_hour: float | None = None, pue: float = 1.0,
                method: str = "full", optimizer: str = "adamw", zero_stage: int = 0,
                table: DeviceTable | None = None) -> list[list[Any]]:
    """[label, value] rows: memory by part (GB, 1e9 bytes), FLOPs, hours, days, cost, energy.

    A figure that needs data the device row lacks (a price, watts) reads as a short text.
    """
    mem = train_memory(params, method=method, optimizer=optimizer, zero_stage=zero_stage,
                            devices=devices)
    job = {"utilization": utilization, "devices": devices, "table": table}
    hours = train_hours(params, tokens, device, **job)
    rows: list[list[Any]] = [[f"{part.capitalize()} (GB per device)", value / GB]
                             for part, value in mem.as_dict().items() if part != "activations"]
    rows += [["FLOPs", train_flops(params, tokens)], ["Hours", hours], ["Days", hours / 24],
             ["Device-hours", hours * devices]]
    rows.append(["Cost (USD)", _or_text(train_cost, params, tokens, device,
                                        usd_per_device_hour=usd_per_device_hour, **job)])
    rows.append(["Energy (kWh)", _or_text(train_energy_kwh, params, tokens, device, pue=pue, **job)])
    return rows


def _or_text(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except TrainingBudgetError as e:
        return f"n/a: {e}"


def estimate(params: float = SEED_PARAMS, tokens: float = SEED_TOKENS,
             devices: tuple[str, ...] | list[str] = SEED_DEVICES, utilization: float = 1.0,
             n_devices: int = 1, table: DeviceTable | None = None) -> dict[str, Any]:
    """The seed's table for any job: memory, FLOPs, and hours on each device (hours are wall-clock)."""
    table = catalog() if table is None else table
    memory = train_memory(params)
    rows = []
    for name in devices:
        d = table.get(name)
        hours = train_hours(params, tokens, d.tflops, utilization=utilization,
                                 devices=n_devices)
        rows.append({"device": d.name, "tflops": d.tflops, "kind": d.kind, "hours": hours,
                     "days": hours / 24, "device_hours": hours * n_devices, "note": d.note})
    return {"params": params, "tokens": tokens, "utilization": utilization,
            "devices": n_devices, "flops": train_flops(params, tokens),
            "memory_bytes": memory.as_dict(), "rows": rows}


def device_rows(table: DeviceTable | None = None) -> list[dict[str, Any]]:
    """The device table as plain rows, in the catalog's column order."""
    table = catalog() if table is None else table
    return [{c: getattr(d, c) for c in _devices.COLUMNS} for d in table]


def runs_rows(table: DeviceTable | None = None) -> list[dict[str, Any]]:
    """Published runs with their implied utilization and, where an MFU is reported, predicted hours."""
    return [{"run": r.run, "params": r.params, "active_params": r.active_params, "tokens": r.tokens,
             "device": r.device, "device_hours": r.device_hours, "hours_scope": r.hours_scope,
             "implied_utilization": _runs.implied_utilization(r, table), "reported_mfu": r.reported_mfu,
             "predicted_device_hours": _runs.predicted_device_hours(r, table), "source": r.source}
            for r in _runs.load_runs()]
