"""Writing cells that carry their cached value: a formula goes to openpyxl, its value (computed
by calc) is kept here, and the package step writes it into the saved file."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from openpyxl.cell import Cell
from openpyxl.styles import Font, PatternFill
from openpyxl.worksheet.worksheet import Worksheet

from . import styles


class CachedCells:
    """Formula cells and their cached values, by sheet title."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, Any]] = defaultdict(dict)

    def formula(self, ws: Worksheet, ref: str, formula: str, value: Any, number_format: str | None = None,
                font: Font = styles.BODY, fill: PatternFill | None = styles.RESULT_FILL) -> Cell:
        """Write `=formula` into `ref` and remember `value` as its cached value."""
        cell = ws[ref]
        cell.value = "=" + formula
        self.values[ws.title][cell.coordinate] = value
        return style(cell, number_format, font, fill)


def style(cell: Cell, number_format: str | None = None, font: Font = styles.BODY,
          fill: PatternFill | None = None) -> Cell:
    """Named font, optional format and fill; returns the cell."""
    cell.font = font
    if number_format:
        cell.number_format = number_format
    if fill is not None:
        cell.fill = fill
    return cell


def text(ws: Worksheet, ref: str, value: str, font: Font = styles.BODY) -> Cell:
    """A text cell that stays text even when it starts with '=' (never a formula)."""
    cell = ws[ref]
    cell.value = value
    cell.data_type = "s"
    cell.font = font
    return cell


def widths(ws: Worksheet, **columns: float) -> None:
    """Column widths by letter: widths(ws, A=30, B=18)."""
    for letter, width in columns.items():
        ws.column_dimensions[letter].width = width


def landscape_fit_width(ws: Worksheet) -> None:
    """Print landscape, one page wide, as many pages tall as needed."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth, ws.page_setup.fitToHeight = 1, 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True


def fit_rows(ws: Worksheet, line_height: float = 15.0) -> None:
    """Row heights tall enough for every wrapped text cell (spreadsheets do not grow rows they
    did not compute themselves, so wrapped lines would print on top of each other)."""
    for row in ws.iter_rows():
        lines = 1
        for c in row:
            if c.alignment is not None and c.alignment.wrap_text and isinstance(c.value, str) and (
                    c.data_type == "s"):
                width = ws.column_dimensions[c.column_letter].width or 8.43
                per_line = max(1, int(width * 1.1))
                lines = max(lines, sum(-(-max(1, len(part)) // per_line) for part in c.value.split("\n")))
        if lines > 1:
            ws.row_dimensions[row[0].row].height = line_height * lines + 2


NOTE_CHARS = 66  # a note in the Budget's column C (40 wide, 9-point italic) wraps past this many characters


def note_cell(ws: Worksheet, ref: str, note: str, chars: int = NOTE_CHARS) -> Cell:
    """A note, wrapped (in a row tall enough) when it would run under the next column."""
    cell = text(ws, ref, note, styles.NOTE)
    if len(note) > chars:
        cell.alignment = styles.WRAP
        row = ws.row_dimensions[cell.row]
        row.height = max(row.height or 15, 12 * -(-len(note) // chars) + 3)
    return cell
