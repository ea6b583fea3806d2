"""Test helpers: edit one cell of a saved workbook at the XML level (everything else untouched)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from trainbudget.addin import package

M = f"{{{package.MAIN}}}"


def edit_cell(path: Path, sheet: str, ref: str, change: Callable[[ET.Element], None]) -> None:
    """Apply `change` to the <c> element of `sheet`!`ref` in place."""
    parts = package.read_parts(path)
    part = package.sheet_parts(parts)[sheet]
    root = ET.fromstring(parts[part])
    (cell,) = [c for c in root.iter(f"{M}c") if c.get("r") == ref]
    change(cell)
    package.write_parts(path, path, {part: package.serialize(root, parts[part])})


def set_text(value: str) -> Callable[[ET.Element], None]:
    """A change that makes the cell hold an inline text `value`."""
    def change(cell: ET.Element) -> None:
        for child in list(cell):
            cell.remove(child)
        cell.set("t", "inlineStr")
        ET.SubElement(ET.SubElement(cell, f"{M}is"), f"{M}t").text = value
    return change


def set_formula(formula: str) -> Callable[[ET.Element], None]:
    def change(cell: ET.Element) -> None:
        cell.find(f"{M}f").text = formula
    return change
