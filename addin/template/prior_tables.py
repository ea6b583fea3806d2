"""The Budget's appendix: the utilization prior's constants as named cells (its fitted
coefficients and spans, the family-prefix table, the decades' words and the runs it was fitted
on), read by name by the prior's rows of the ranges block (ranges_block). From calc's prior."""

from __future__ import annotations

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import prior_native
from . import styles
from .cached_cells import note_cell, style, text

BASIS_CHARS_PER_LINE = 75  # about what columns B and C (widths 30 + 40) hold at the body font


SPAN_FORMATS = {"params": styles.COUNT, "devices": "#,##0.0", "tokens": "#,##0.00"}  # the spans' own units


def _span_format(name: str) -> str | None:
    """A span row's number format: parameters whole, devices to a tenth, tokens per parameter to a
    hundredth (the tail, a text: none)."""
    return next((fmt for key, fmt in SPAN_FORMATS.items() if name.startswith(f"Prior_span_{key}_")), None)


def wrap_over_b_c(ws: Worksheet, row: int, value: str) -> None:
    """A long text in B over B and C, wrapped, the row as tall as it needs."""
    ws[f"B{row}"].alignment = ws[f"A{row}"].alignment = styles.WRAP
    ws.merge_cells(f"B{row}:C{row}")
    ws.row_dimensions[row].height = 13 * (1 + len(value) // BASIS_CHARS_PER_LINE)


def _decades(ws: Worksheet, top: int) -> int:
    """The basis line's decade texts, one row per decade exponent, as calc.prior.utilization writes them; returns
    the last row."""
    text(ws, f"A{top}", "Decade (10^k, k)", styles.BOLD)
    text(ws, f"B{top}", "In parameters", styles.BOLD)
    text(ws, f"C{top}", "In thousands (devices, tokens per parameter); calc.prior.utilization's text", styles.BOLD)
    rows = prior_native.decade_rows()
    for k, (power, params_text, counts_text) in enumerate(rows, start=top + 1):
        style(ws[f"A{k}"], "0").value = power
        ws[f"A{k}"].alignment = styles.LEFT
        text(ws, f"B{k}", params_text)
        text(ws, f"C{k}", counts_text)
    for col, name in (("B", prior_native.DECADES_PARAMS), ("C", prior_native.DECADES_COUNTS)):
        ws.parent.defined_names[name] = DefinedName(
            name, attr_text=f"'{ws.title}'!${col}${top + 1}:${col}${top + len(rows)}")
    return top + len(rows)


def write(ws: Worksheet, top: int) -> int:
    """The prior's constants, read by name by the prior's rows above (Prior_*, Prior_fx_*, the
    family prefixes, the decades' words): its fitted coefficients and spans, the family table, the
    decades table and the runs it was fitted on, from row `top`, under a heading of their own (the
    Budget's last printed page: the reader's pages hold the answer, the appendix how it is made).
    Returns the last row written."""
    c = calc.prior_coefficients()
    runs = [run.run for run in calc.load_runs() if calc.run_utilization(run) is not None]
    text(ws, f"A{top}", "How the prior is made: its coefficients, spans and tables (the rows above read them by name)",
         styles.HEADING)
    i = top
    for i, (name, value, note) in enumerate(prior_native.coefficient_rows() + prior_native.span_rows(),
                                            start=top + 1):
        text(ws, f"A{i}", name.replace("_", " "))
        style(ws[f"B{i}"], _span_format(name) if name.startswith("Prior_span_") else "0.0000").value = value
        note_cell(ws, f"C{i}", note)
        _name(ws, name, f"B{i}")
        if isinstance(value, str):  # the basis line's tail
            wrap_over_b_c(ws, i, value)
    t = i + 2
    text(ws, f"A{t}", "Device family prefix (Hardware starts with)", styles.BOLD)
    text(ws, f"B{t}", "Family effect", styles.BOLD)
    text(ws, f"C{t}", "Family (calc.FAMILIES; no runs: the nearest generation)", styles.BOLD)
    pfx = prior_native.prefix_rows()
    for k, (pre, effect, name) in enumerate(pfx, start=t + 1):
        text(ws, f"A{k}", pre)
        style(ws[f"B{k}"], "0.0000").value = effect
        text(ws, f"C{k}", name)
    for col, name in (("A", prior_native.PREFIXES), ("B", prior_native.PREFIX_EFFECTS),
                      ("C", prior_native.PREFIX_FAMILIES)):
        ws.parent.defined_names[name] = DefinedName(
            name, attr_text=f"'{ws.title}'!${col}${t + 1}:${col}${t + len(pfx)}")
    note = _decades(ws, t + len(pfx) + 2) + 1
    cell = text(ws, f"A{note}", f"Prior: {calc.PRIOR_JOB_METHOD}, over {c.n_runs} published runs (Runs sheet; hours "
                                "over goodput where whole-run hours are reported): " + ", ".join(runs) + ".",
                styles.NOTE)
    cell.alignment = styles.WRAP
    ws.merge_cells(f"A{note}:C{note}")
    ws.row_dimensions[note].height = 12 * (1 + len(cell.value) // 170)
    return note


def _name(ws: Worksheet, name: str, ref: str) -> None:
    ws.parent.defined_names[name] = DefinedName(name, attr_text=f"'{ws.title}'!${ref[0]}${ref[1:]}")
