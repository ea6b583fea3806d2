"""Test helpers: edit one cell of a saved workbook with lxml (everything else untouched)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from trainbudget.addin.ooxml import package, xmlcells


def edit_cell(path: Path, sheet: str, ref: str, change: Callable[[xmlcells.Sheet, object], None]) -> None:
    """Apply `change(sheet, cell element)` to `sheet`!`ref`, in place."""
    parts = package.read_parts(path)
    part = package.sheet_parts(parts)[sheet]

    def apply(root: object) -> None:
        s = xmlcells.Sheet(root)
        change(s, s.cell(ref, create=False))
    package.write_parts(path, path, {part: package.edit(part, parts[part], apply)})


def set_text(value: str) -> Callable[[xmlcells.Sheet, object], None]:
    """A change that makes the cell hold the inline text `value` (its style kept)."""
    return lambda s, cell: s.set_constant(cell, value, cell.get("s"))


def set_formula(formula: str) -> Callable[[xmlcells.Sheet, object], None]:
    def change(s: xmlcells.Sheet, cell: object) -> None:
        s.formula(cell).text = formula
    return change
