"""Test helpers: edit one cell of a saved workbook as text (everything else untouched)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from trainbudget.addin.ooxml import package, xmlcells


def edit_cell(path: Path, sheet: str, ref: str, change: Callable[[str], str]) -> None:
    """Replace the XML of `sheet`!`ref` by `change(cell XML)`, in place."""
    parts = package.read_parts(path)
    part = package.sheet_parts(parts)[sheet]
    xml = parts[part].decode("utf-8")
    (cell,) = [c for c in xmlcells.CELL.findall(xml) if xmlcells.ref_of(c) == ref]
    package.write_parts(path, path, {part: xml.replace(cell, change(cell), 1).encode("utf-8")})


def set_text(value: str) -> Callable[[str], str]:
    """A change that makes the cell hold the inline text `value` (its style kept)."""
    return lambda cell: xmlcells.text_cell(xmlcells.ref_of(cell), value, xmlcells.style_of(cell))


def set_formula(formula: str) -> Callable[[str], str]:
    return lambda cell: xmlcells.replace_formula(cell, formula)
