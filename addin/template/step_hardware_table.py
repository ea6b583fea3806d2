"""The step block's hardware table: each hardware of the catalog (and of the workbook's Devices table)
once, with its topology and fitted matmul fraction (calc.step_hardware, calc.STEP_CONSTANTS), the
columns named for the step block's look-ups (A1 ranges: every engine reads them)."""

from __future__ import annotations

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from . import styles
from .cached_cells import text

TABLE_COLUMNS = (("Step_hw_names", "Hardware"), ("Step_hw_up", "Scale-up GB/s (both ways)"),
                 ("Step_hw_domain", "Scale-up domain (devices)"), ("Step_hw_out", "Scale-out Gb/s"),
                 ("Step_hw_fraction", "Matmul fraction (fitted)"), ("Step_hw_axis", "TP/CP GB/s, one torus axis"))


def rows(table: calc.DeviceTable) -> list[tuple[str, float, float, float, float, float]]:
    """Each hardware of the catalog's rows (and the table's) once: its topology and matmul fraction."""
    k, seen, out = calc.STEP_CONSTANTS, set(), []
    for d in table:
        if d.hardware and d.memory_tbps and d.hardware.lower() not in seen:
            seen.add(d.hardware.lower())
            h = calc.step_hardware(d, table)
            out.append((d.hardware, h.scale_up_GBps, h.scale_up_domain, h.scale_out_Gbps,
                         k.matmul_fraction[h.family], h.scale_up_axis_GBps))
    return out


def fallback() -> tuple[float, float, float, float]:
    """calc's stated topology for a row whose hardware has none (calc.step_hardware's FALLBACK)."""
    h = calc.step_hardware(calc.Device("no topology", 1.0, memory_tbps=1.0), calc.DeviceTable([]))
    return h.scale_up_GBps, h.scale_up_domain, h.scale_out_Gbps, h.scale_up_axis_GBps


def write(ws: Worksheet, top: int, table: calc.DeviceTable) -> int:
    """The catalog's hardware with its topology and fitted matmul fraction, one row each, the
    columns named for the step block's look-ups (A1 ranges: every engine reads them); its last row."""
    k = calc.STEP_CONSTANTS
    text(ws, f"A{top}", "Step model: each hardware's interconnect and fitted matmul fraction (calc.step_hardware, "
                        f"calc.STEP_CONSTANTS; fp8_gain {k.fp8_gain:g}, vector bytes {k.vector_bytes:g}, "
                        f"overlap {k.overlap:g}, attention ratio {k.attention_ratio:g}, attention tile "
                        f"{k.attention_tile:g})", styles.HEADING)
    cols = "ABCDEF"
    for c, (_, header) in zip(cols, TABLE_COLUMNS, strict=True):
        text(ws, f"{c}{top + 1}", header, styles.BOLD)
    found = rows(table)
    for r, row in enumerate(found, start=top + 2):
        for c, value in zip(cols, row, strict=True):
            ws[f"{c}{r}"].value = value
    for c, (name, _) in zip(cols, TABLE_COLUMNS, strict=True):
        ws.parent.defined_names[name] = DefinedName(
            name, attr_text=f"'{ws.title}'!${c}${top + 2}:${c}${top + 1 + len(found)}")
    return top + 1 + len(found)
