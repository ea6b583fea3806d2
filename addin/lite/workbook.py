"""`trainbudget lite`: the template's sheets, macro-free, plus the parts xlwings Lite reads.

The template is built (template.build, every formula with its cached value, so a reader without Lite
sees numbers), its macro carriers and the desktop add-in's xlwings.conf sheet taken out
(ooxml.macrofree), and the webextension parts added (webext.py) with main.py generated from this
package (bundle.py). `--from WORKBOOK` builds the template with that workbook's Devices rows (its
measured ones too), read through the package layer, so they travel into the Lite edition. Only the
Functions sheet calls our functions (column "With xlwings Lite", each cell with its cached value):
Excel saves a JavaScript custom function's name with a prefix whose spelling is not confirmed
(`_xldudf_`, OfficeDev/Excel-Custom-Functions#108), so no other cell relies on one; the sheet says
so. Every other formula is native Excel.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ... import calc
from ..functions import rewrite
from ..functions.registry import FUNCTIONS
from ..ooxml import macrofree, package, partedit, xmlcells
from ..template import build as template, devices_table
from . import bundle, webext

CONF_SHEET = "xlwings.conf"
FUNCTIONS_SHEET = "Functions"
RESULT_HEADER = "With xlwings Lite"
FUNCTIONS_NOTE = (
    "The cells under 'With xlwings Lite' call the Lite functions; they hold the values computed when the "
    "file was built, and with the xlwings Lite add-in running they recalculate. Type =TRAIN_HOURS(...) and "
    "the others in any cell once Lite has started. Every other formula in this workbook is native Excel "
    "and needs no add-in.")
ABOUT_LITE = (
    "Mac, Windows and Excel on the web (this file, the xlwings Lite edition): install the free xlwings "
    "Lite add-in (Home > Add-ins, search 'xlwings Lite'), open this workbook, click Trust in the Lite "
    "pane once, then save once so that Lite starts with the file. =TRAIN_HOURS(...) and the other "
    "functions (Functions sheet) then work in any cell; pass Devices[#All] as the last argument so "
    "your measured rows count.")
ABOUT_DESKTOP_PREFIX = "Windows with Python"


@dataclass(frozen=True)
class Written:
    """What `write` wrote: the path, the size of main.py in bytes, and the number of Devices rows
    taken from the `--from` workbook (None: the packaged catalog's)."""

    path: Path
    main_py_bytes: int
    devices_from_source: int | None = None


def check_out(out: Path, force: bool) -> None:
    """Refuse an output that is not .xlsx, a folder, or (unless `force`) an existing file."""
    out = Path(out)
    if out.suffix.lower() != ".xlsx":
        raise calc.TrainingBudgetError(f"--out must end in .xlsx: the Lite edition is macro-free (got {out.name!r})")
    if out.is_dir():
        raise calc.TrainingBudgetError(f"--out {out} is a folder")
    if not out.parent.is_dir():
        raise calc.TrainingBudgetError(f"--out {out}: folder {out.parent} does not exist")
    if os.path.lexists(out) and not force:
        raise calc.TrainingBudgetError(f"--out {out} exists; nothing was written. Use --force to replace it "
                                       "(the old file is kept as .bak)")


def _label_functions(parts: dict[str, bytes]) -> None:
    """The Functions sheet's result column named for Lite, and the note under the table."""
    part = package.sheet_parts(parts)[FUNCTIONS_SHEET]

    def fn(root: object) -> None:
        s = xmlcells.Sheet(root)
        s.set_constant(s.cell("D1"), RESULT_HEADER)
        s.set_constant(s.cell(f"A{len(FUNCTIONS) + 3}"), FUNCTIONS_NOTE)
    partedit.change(parts, part, fn)


def _about_lite(parts: dict[str, bytes]) -> None:
    """About's desktop set-up line (xlwings add-in, VBA trust) replaced by Lite's."""
    part = package.sheet_parts(parts)["About"]
    strings = xmlcells.shared_strings(parts.get("xl/sharedStrings.xml"))

    def fn(root: object) -> None:
        s = xmlcells.Sheet(root)
        for cell in list(s.cells()):
            value = xmlcells.cached_value(cell, strings)
            if isinstance(value, str) and value.startswith(ABOUT_DESKTOP_PREFIX):
                s.set_constant(cell, ABOUT_LITE)
    partedit.change(parts, part, fn)


def lite_parts(template_path: Path, main_py: str) -> dict[str, bytes]:
    """The Lite edition's parts from a built template at `template_path`."""
    parts = package.read_parts(template_path)
    parts = partedit.drop_sheet(macrofree.strip_macros(parts, str(template_path)), CONF_SHEET)
    _label_functions(parts)
    _about_lite(parts)
    outside = calls_outside_functions(parts)
    if outside:
        raise calc.TrainingBudgetError(f"cells outside {FUNCTIONS_SHEET} call the add-in: {', '.join(outside)}")
    parts = webext.add_parts(parts, main_py, webext.requirements_txt())
    macrofree.check(parts, str(template_path))
    return parts


def calls_outside_functions(parts: dict[str, bytes]) -> list[str]:
    """'Sheet!A1' of every formula outside the Functions sheet that calls one of our functions."""
    found = []
    for sheet, part in package.sheet_parts(parts).items():
        if sheet == FUNCTIONS_SHEET:
            continue
        s = xmlcells.Sheet(package.parse(part, parts[part]))
        found += [f"{sheet}!{ref}" for ref, formula, _ in s.formula_cells() if rewrite.calls_ours(formula)]
    return found


def source_table(source: Path) -> calc.DeviceTable:
    """The Devices table of the workbook `source` (`--from`), read through the package layer
    (bounded opening, safe parsing); a refusal names the option and the file."""
    try:
        return devices_table.table_from_workbook(Path(source))
    except calc.TrainingBudgetError as e:
        text = str(e)
        raise calc.TrainingBudgetError(text if text.startswith("--from") else f"--from: {text}") from None


def write(out: Path, force: bool = False, source: Path | None = None) -> Written:
    """Write the Lite edition to `out` atomically: the template built with the Devices rows of the
    workbook `source` (default: the packaged catalog). An existing file, with `force`, is kept as
    .bak; a symlink at `out` is replaced, never followed (its target stays as it was)."""
    check_out(out, force)
    out = Path(out)
    table = None if source is None else source_table(source)
    main_py = bundle.main_py()
    with tempfile.TemporaryDirectory(prefix="tb-lite-") as tmp:
        try:
            built = template.build(Path(tmp) / "template.xlsm", table=table)
        except calc.UnknownDeviceError as e:
            if source is None:
                raise
            raise calc.TrainingBudgetError(f"--from {source}: {e}. The template's sheets use that device: add its "
                                           "row back to the Devices table") from None
        parts = lite_parts(built.path, main_py)
    with package.locked(out):
        package.keep_backup(out)
        package.write_package(parts, out)
    return Written(out, len(main_py.encode("utf-8")), None if table is None else len(table))
