"""verify's recalculation of large workbooks (issue 19): a plain sheet nothing reads is given to
LibreOffice empty, as export does, so verify of a 1.1M-row workbook takes seconds (it took 72 s
and 2.2 GB, then refused LibreOffice's own 381 MiB output as a zip bomb); a sheet something reads,
or one with a table, is still recalculated; and an output too large to read falls back to the
cached results with a warning instead of an error exit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trainbudget.addin import libreoffice as engine
from trainbudget.addin.ooxml import package, partedit, sheetrefs
from trainbudget.addin.verify import check

SHEET = ('<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>{}'
         "</sheetData>{}</worksheet>")
ROWS = "".join(f'<row r="{r}"><c r="A{r}"><v>{r}</v></c><c r="B{r}"><f>A{r}*2</f><v>{2 * r}</v></c></row>'
               for r in range(1, 2001))
ERROR_ROW = '<row r="1"><c r="A1"><v>0</v></c><c r="B1"><f>1/A1</f><v>5</v></c></row>'  # stale: really #DIV/0!


def _book(built, tmp_path: Path, sheet: bytes, read_by: str | None = None, name: str = "Extra") -> Path:
    """The template with one extra sheet `sheet`; `read_by`: a defined name that reads it."""
    src = Path(shutil.copyfile(built.path, tmp_path / "big.xlsm"))
    parts = partedit.add_table_sheet(package.read_parts(src), name, f"T{name}", [["x"], [1]])
    parts[package.sheet_parts(parts)[name]] = sheet
    if read_by:
        partedit.ensure_defined_name(parts, read_by, f"'{name}'!$A$1")
    package.write_package(parts, src)
    return src


def _spy(monkeypatch) -> dict[str, bytes]:
    given: dict[str, bytes] = {}
    real = engine.recalculate

    def spy(path, outdir):
        given.update(package.read_parts(path))
        return real(path, outdir)
    monkeypatch.setattr(engine, "recalculate", spy)
    return given


def test_a_plain_sheet_nothing_reads_is_not_recalculated(built, soffice, tmp_path, monkeypatch):
    src = _book(built, tmp_path, SHEET.format(ROWS, "").encode())
    given = _spy(monkeypatch)
    assert check.verify(src, recalc=True) == []
    assert given[package.sheet_parts(given)["Extra"]] == sheetrefs.EMPTY_SHEET


@pytest.mark.parametrize(("read_by", "tail"), [
    ("Extra_first", ""),                                               # a defined name reads it
    (None, '<tableParts count="1"><tablePart r:id="rId1" xmlns:r="http://schemas.openxmlformats.org/'
           'officeDocument/2006/relationships"/></tableParts>'),      # a table: read by its name
])
def test_a_sheet_something_may_read_is_recalculated(built, soffice, tmp_path, monkeypatch, read_by, tail):
    sheet = SHEET.format(ROWS, tail).encode()
    src = _book(built, tmp_path, sheet, read_by)
    given = _spy(monkeypatch)
    check.verify(src, recalc=True)
    assert given[package.sheet_parts(given)["Extra"]] != sheetrefs.EMPTY_SHEET


def test_a_recalculated_error_in_a_sheet_that_is_not_plain_is_still_found(built, soffice, tmp_path):
    """A stale cached 5 over a #DIV/0!: the sheet is plain to the byte search (its cache is no
    error) and nothing reads it, so it is judged on its cache; the same row read by a defined name
    is recalculated, and its error found."""
    assert check.verify(_book(built, tmp_path, SHEET.format(ERROR_ROW, "").encode()), recalc=True) == []
    found = check.verify(_book(built, tmp_path, SHEET.format(ERROR_ROW, "").encode(), "Extra_first"), recalc=True)
    assert [p.where for p in found] == ["Extra!B1"] and "#DIV/0!" in found[0].message


def test_an_unreadable_recalculation_falls_back_to_the_cached_results(built, soffice, tmp_path, monkeypatch):
    src = _book(built, tmp_path, SHEET.format('<row r="1"><c r="B1" t="e"><f>1/0</f><v>#DIV/0!</v></c></row>',
                                              "").encode())
    real = package.read_parts

    def refuse(path, *args, **kwargs):
        if "tb-verify-" in str(path):
            raise package.BadWorkbookError(f"{path}: part inflates to 381 MiB, over the 256 MiB limit")
        return real(path, *args, **kwargs)
    monkeypatch.setattr(package, "read_parts", refuse)
    found = check.verify(src, recalc=True)
    assert [(p.where, p.severity) for p in found] == [("Extra!B1", "error"), ("workbook", "warning")]
    assert "cached results checked instead" in found[1].message
