"""`estimate`'s money and memory columns: memory per device, cost and energy for each device row.

Figures come from calc; a device row without a price or watts gives an empty figure with the
reason, never a guess.
"""

from __future__ import annotations

from typing import Any

import click

from ... import calc


class UtilizationType(click.ParamType):
    """A share of the device's rate: 0.4 or 40%; 40 is answered with "did you mean 0.40?"."""

    name = "fraction"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            self.fail(f"--utilization must be a fraction such as 0.4 or 40%, got {text!r}", param, ctx)
        if 1 < number <= 100 and not text.endswith("%"):
            self.fail(f"--utilization must be in (0, 1], got {text}; did you mean {number / 100:.2f}?",
                      param, ctx)
        if not 0 < number <= 1:
            self.fail(f"--utilization must be in (0, 1], got {text}", param, ctx)
        return number


def add_columns(report: dict[str, Any], table: calc.DeviceTable, *, price: float | None, pue: float,
                memory_options: dict[str, Any]) -> dict[str, Any]:
    """The report with memory per device (GB), price, cost (USD) and energy (kWh) on each row."""
    job = {"utilization": report["utilization"], "devices": report["devices"], "table": table}
    per_device = calc.train_memory(report["params"], devices=report["devices"], **memory_options)
    for row in report["rows"]:
        d = table.get(row["device"])
        row["memory_per_device_gb"] = per_device.total / calc.schedule.GB
        row["usd_per_device_hour"] = price if price is not None else d.usd_per_device_hour
        row["cost_usd"] = (None if row["usd_per_device_hour"] is None else calc.train_cost(
            report["params"], report["tokens"], d.name, usd_per_device_hour=row["usd_per_device_hour"], **job))
        row["energy_kwh"] = None if d.watts is None else calc.train_energy_kwh(
            report["params"], report["tokens"], d.name, pue=pue, **job)
    report.update(memory_options, pue=pue, memory_per_device_bytes=per_device.total)
    return report


def money_text(report: dict[str, Any]) -> str:
    """The memory, cost and energy block printed under the hours table."""
    o = report
    lines = [f"memory per device: {o['memory_per_device_bytes'] / calc.schedule.GB:,.1f} GB "
             f"({o['method']}, {o['optimizer']}, ZeRO stage {o['zero_stage']} over {o['devices']} device(s))",
             f"{'device':52} {'USD/device-h':>12} {'cost USD':>12} {'energy kWh':>11}"]
    for r in report["rows"]:
        price = "-" if r["usd_per_device_hour"] is None else f"{r['usd_per_device_hour']:,.2f}"
        cost = "no price" if r["cost_usd"] is None else f"{r['cost_usd']:,.0f}"
        energy = "no watts" if r["energy_kwh"] is None else f"{r['energy_kwh']:,.1f}"
        lines.append(f"{r['device']:52} {price:>12} {cost:>12} {energy:>11}")
    if any(r["cost_usd"] is None for r in report["rows"]):
        lines.append("no price: the device row has none; pass --price USD per device-hour or PROVIDER:PLAN "
                     "(see trainbudget prices)")
    if any(r["energy_kwh"] is None for r in report["rows"]):
        lines.append("no watts: the device row has no board power")
    lines.append(f"energy at PUE {o['pue']:g}")
    return "\n".join(lines) + "\n"
