"""Terminal rendering with rich (imported only when stdout is a terminal)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from . import render as rep


def print_estimate(report: dict[str, Any]) -> None:
    """The estimate as a formatted table."""
    console = Console()
    for line in rep.estimate_header(report):
        console.print(line)
    table = Table(title=f"hours{rep.where_text(report)}", title_justify="left")
    for col, justify in (("Device", "left"), ("TFLOP/s", "right"), ("Hours", "right"),
                         ("Days", "right"), ("Device-hours", "right"), ("Memory/device GB", "right"),
                         ("Cost USD", "right"), ("Energy kWh", "right"), ("Note", "left")):
        table.add_column(col, justify=justify)
    for r in report["rows"]:
        cost = "no price" if r.get("cost_usd") is None else f"{r['cost_usd']:,.0f}"
        energy = "no watts" if r.get("energy_kwh") is None else f"{r['energy_kwh']:,.1f}"
        table.add_row(r["device"], f"{r['tflops']:,.1f}", f"{r['hours']:,.1f}",
                      f"{r['days']:,.2f}", f"{r['device_hours']:,.1f}", f"{r.get('memory_per_device_gb', 0):,.1f}",
                      cost, energy, r["note"])
    console.print(table)
    console.print(rep.UTILIZATION_NOTE, style="dim")


def print_devices(rows: list[dict[str, Any]]) -> None:
    """The catalog as a formatted table."""
    table = Table()
    for col in ("Name", "Kind", "TFLOP/s", "Memory GiB", "Watts", "Source"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["kind"], f"{r['tflops']:,.1f}", f"{r['memory_gib'] or ''}",
                      f"{r['watts'] or ''}", r["source"])
    Console().print(table)
