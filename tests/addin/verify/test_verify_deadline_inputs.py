"""verify names the Budget's "Deadline and budget" inputs (days and USD) when they are not
positive numbers, by cell, as it names every other input; cells found by the template's defined names."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.xlsx_edit import edit_cell
from trainbudget.addin.template import deadline_block
from trainbudget.addin.verify import check as verify

LABELS = {name: label for name, label, *_ in deadline_block.INPUTS}


def _constant(value):
    return lambda s, cell: s.set_constant(cell, value, cell.get("s"))


@pytest.mark.parametrize(("name", "value", "words"), [
    ("Deadline_days", 0.0, "must be > 0 (got 0)"), ("Deadline_days", -30.0, "must be > 0 (got -30)"),
    ("Budget_USD", -1.0, "must be > 0 (got -1)"), ("Budget_USD", "lots", "must be a number (got 'lots')"),
    ("Budget_USD", None, "is blank"),
])
def test_a_bad_deadline_or_budget_is_one_error_at_its_cell(copy, name, value, words):
    sheet, ref = verify.template_names()[name].split("!")
    path = copy()
    edit_cell(path, sheet, ref, _constant(value))
    problems = verify.errors(verify.verify(path, recalc=False))
    assert [p.where for p in problems] == [f"{sheet}!{ref}"], problems
    assert LABELS[name] in problems[0].message and words in problems[0].message, problems[0].message
    proc = run_cli("verify", str(path), "--no-recalc")
    assert proc.returncode == 1 and f"{sheet}!{ref}: " in proc.stdout, proc.stdout + proc.stderr
