"""Test helpers: the built template's inputs set by defined name (openpyxl), and many edited
copies recalculated in one LibreOffice run."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import openpyxl

from trainbudget.addin import libreoffice as engine


def name_ref(wb: openpyxl.Workbook, name: str) -> tuple[str, str]:
    """(sheet, cell) a single-cell defined name points at, e.g. ("Budget", "B8")."""
    sheet, cell = wb.defined_names[name].attr_text.split("!")
    return sheet.strip("'"), cell.replace("$", "")


def set_named(wb: openpyxl.Workbook, name: str, value: object) -> None:
    sheet, cell = name_ref(wb, name)
    wb[sheet][cell] = value


def named_value(wb: openpyxl.Workbook, name: str) -> object:
    sheet, cell = name_ref(wb, name)
    return wb[sheet][cell].value


def flag(value: object) -> bool:
    """A TRUE / FALSE cell as read back: a boolean, or 1 / 0 where LibreOffice saved a formula's boolean under
    a number format that words it (styles.BOOLEAN) as a number; anything else (an error, a text) fails."""
    assert type(value) in (bool, int, float) and value in (0, 1), value
    return bool(value)


def recalculated_copies(template: Path, tmp: Path, edits: Iterable[Callable[[openpyxl.Workbook], None]],
                        stem: str = "case") -> list[openpyxl.Workbook]:
    """A copy of `template` per edit (each applied to a freshly loaded workbook, macros kept), all
    recalculated in one LibreOffice run and read back as values, in the edits' order."""
    paths = []
    for k, edit in enumerate(edits):
        wb = openpyxl.load_workbook(template, keep_vba=True)
        edit(wb)
        paths.append(tmp / f"{stem}{k:02d}.xlsm")
        wb.save(paths[-1])
    return [openpyxl.load_workbook(p, data_only=True) for p in engine.convert(paths, "xlsx", tmp / "out")]
