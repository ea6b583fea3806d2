"""A formula whose rewrite would pass Excel's 8,192-character limit is frozen at its value with a note."""

from __future__ import annotations

import openpyxl
import pytest

from trainbudget import calc
from trainbudget.addin.export import mailcopy
from trainbudget.addin.functions import rewrite
from trainbudget.addin.ooxml import package

H100 = "H100 SXM, BF16 tensor core, dense"


def test_over_long_rewrite_is_frozen_with_a_note(soffice, tmp_path):
    call = f'TRAIN_HOURS(A1,B1,"{H100}",0.4,8)'
    n = 8000 // (len(call) + 1)  # as many calls as Excel's 8,192-character limit allows
    formula = "=" + "+".join([call] * n)
    assert len(formula) < 8192
    with pytest.raises(rewrite.TooLongError):
        rewrite.rewrite(formula)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Plan"
    ws["A1"], ws["B1"], ws["C1"] = 7e9, 1e12, formula
    wb.save(tmp_path / "long.xlsx")
    value = n * calc.train_hours(7e9, 1e12, H100, utilization=0.4, devices=8)
    package.fill_cached_values(tmp_path / "long.xlsx", tmp_path / "long.xlsx", {"Plan": {"C1": value}})
    done = mailcopy.export(tmp_path / "long.xlsx", tmp_path / "out.xlsx")
    assert done.frozen == ["Plan!C1"]
    cell = openpyxl.load_workbook(done.out)["Plan"]["C1"]
    assert cell.value == pytest.approx(value) and "8,192" in cell.comment.text
