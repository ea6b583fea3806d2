"""The e-mail copy as a finance reader gets it: exported again from a copy, made from a workbook
whose inputs a program that does not calculate (openpyxl) last saved, and opened in a program
that does not recalculate on open (Gnumeric's ssconvert without --recalc) or that does
(ssconvert --recalc): every formula cell shows, and computes, its cached value."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest

from tests.workbook.test_portable import read_cells, same
from trainbudget.addin.export import mailcopy, order
from trainbudget.addin.ooxml import comments, package


def _openpyxl_changed(template: Path, tmp: Path) -> Path:
    """The template with a 70B model on 2T tokens typed in, saved by openpyxl (no cached values)."""
    wb = openpyxl.load_workbook(template, keep_vba=True)
    for name, value in (("Params", 70e9), ("Tokens", 2e12)):
        sheet, ref = next(wb.defined_names[name].destinations)
        wb[sheet][ref.replace("$", "")] = value
    out = tmp / "changed.xlsm"
    wb.save(out)
    return out


@pytest.fixture(scope="module")
def mail(built, soffice, tmp_path_factory):
    assert shutil.which("ssconvert"), "Gnumeric is not installed: run the README's test command (tests/run-all.sh)"
    tmp = tmp_path_factory.mktemp("mail")
    template = mailcopy.export(built.path, tmp / "template.xlsx").out
    changed = mailcopy.export(_openpyxl_changed(built.path, tmp), tmp / "changed.xlsx").out
    again = mailcopy.export(template, tmp / "again.xlsx").out  # an e-mail copy exported once more
    return {"template": template, "changed": changed, "again": again}


def _gnumeric(path: Path, tmp: Path, recalc: bool) -> dict:
    out = tmp / f"{path.stem}-{'recalc' if recalc else 'opened'}.xlsx"
    proc = subprocess.run(["ssconvert", *(["--recalc"] if recalc else []), str(path), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert out.exists(), proc.stderr[-500:]
    return read_cells(out)[0]


@pytest.mark.parametrize("recalc", [False, True], ids=["as opened", "recalculated"])
@pytest.mark.parametrize("tag", ["template", "changed", "again"])
def test_gnumeric_shows_the_cached_values(mail, tag, recalc, tmp_path):
    cached, formula_cells = read_cells(mail[tag])
    got = _gnumeric(mail[tag], tmp_path, recalc)
    wrong = [(k, cached[k], got.get(k)) for k in sorted(formula_cells) if not same(cached[k], got.get(k))]
    assert len(formula_cells) > 1000
    assert not wrong, f"{len(wrong)} of {len(formula_cells)} differ, first: {wrong[:4]}"


def test_every_formula_carries_a_cached_value(mail):
    """openpyxl saves each formula with an empty <v></v>: the copy must fill every one (the Prices
    sheet's 38 were left empty when the export took that sheet for one it only copies)."""
    parts = package.read_parts(mail["changed"])
    for sheet, part in package.sheet_parts(parts).items():
        text = parts[part].decode("utf-8")
        for cell in re.findall(r"<c\b[^>]*>(?:(?!</c>).)*<f\b(?:(?!</c>).)*</c>", text):
            typed_text = re.search(r'\bt="(str|inlineStr)"', cell.split(">", 1)[0])
            assert typed_text or re.search(r"<v>[^<]+</v>", cell), (sheet, cell[:160])


def test_the_copy_opens_on_budget_after_the_sheets_it_reads(mail):
    wb = openpyxl.load_workbook(mail["template"])
    names = wb.sheetnames
    assert names.index("Devices") < names.index("Budget") and names.index("Prices") < names.index("Budget")
    assert wb.active.title == "Budget"
    area = wb["Budget"].print_area  # a print area local to Budget still names Budget
    assert area and "Budget" in str(area)
    parts = package.read_parts(mail["template"])
    late = [s for s, p in package.sheet_parts(parts).items() if order.computed_on_load(parts[p])]
    assert late == names[-len(late):] and "Budget" in late


def test_exporting_a_copy_again_keeps_its_figures(mail):
    first, formula_cells = read_cells(mail["template"])
    again, _ = read_cells(mail["again"])
    assert not [k for k in formula_cells if not same(first[k], again.get(k))]


def test_devices_sheet_says_its_references_are_fixed(mail):
    """A row a reader adds under the copy's Devices table is not counted (its formulas read fixed
    A1 ranges, the price of computing the same in every program): the sheet says so, and why."""
    parts = package.read_parts(mail["template"])
    text = " ".join(comments.notes_on(parts, "Devices").values())
    assert "fixed range" in text and "not counted" in text and "export" in text
