"""Readable native formulas: short, folded (no literal compared with a literal), named inputs."""

from __future__ import annotations

import statistics

import openpyxl
import pytest

from trainbudget.addin.functions import fold, rewrite
from trainbudget.addin.functions.registry import FUNCTIONS
from trainbudget.addin.template import budget_sheet
from trainbudget.addin.verify import check as verify

LIMIT = 200


def _formulas(path, sheet):
    ws = openpyxl.load_workbook(path)[sheet]
    return {c.coordinate: c.value[1:] for row in ws.iter_rows() for c in row if verify.is_formula(c)}


@pytest.mark.parametrize("sheet", ["Budget", "Functions", "Runs"])
def test_formulas_short_and_folded(built, sheet):
    formulas = _formulas(built.path, sheet)
    assert formulas
    too_long = {ref: len(f) for ref, f in formulas.items() if len(f) > LIMIT}
    assert not too_long
    assert not {ref: found for ref, f in formulas.items() if (found := fold.literal_comparisons(f))}


def test_budget_reads_like_arithmetic(built):
    formulas = _formulas(built.path, "Budget")
    assert statistics.median(len(f) for f in formulas.values()) < 80
    labels = {c.value: c.row for c in openpyxl.load_workbook(built.path)["Budget"]["A"] if c.value}
    assert formulas[f"B{labels['Training compute (FLOPs)']}"] == "6*Params*Tokens"
    assert "Params" in openpyxl.load_workbook(built.path).defined_names


def test_export_of_user_calls_is_short():
    assert len(rewrite.rewrite("=TRAIN_BYTES(A1)")) <= 120
    assert rewrite.rewrite("=TRAIN_FLOPS(A1,B1)") == "=(6*A1*B1)"
    for call in ("=TRAIN_BYTES(A1)", "=TRAIN_DEVICES_NEEDED(A1,B1)", "=TRAIN_ENERGY_KWH(A1,B1,C1)"):
        assert not fold.literal_comparisons(rewrite.rewrite(call))


def test_every_registry_native_form_folded():
    for spec in FUNCTIONS:
        if spec.native:
            formula = spec.native_formula(spec.example_exprs)
            assert len(formula) <= LIMIT and not fold.literal_comparisons(formula), spec.name
            assert "{" not in formula  # no inline arrays: optimizer bytes come from the Optimizers table


@pytest.mark.parametrize(("formula", "want"), [
    ('IF("none"="full",8,6)*A1', "6*A1"), ("A1/IF(0>=3,B1,1)", "A1"), ("(A1*B1)*C1", "A1*B1*C1"),
    ("A1-(B1-C1)", "A1-(B1-C1)"), ('IF(OR("full"="lora","FULL"="full"),A1,0)', "A1"), ("12*0*A1+B1", "B1"),
    ('INDEX({8,2},MATCH("Adamw_8bit",{"adamw","adamw_8bit"},0))*A1', "2*A1"),
])
def test_fold(formula, want):
    assert fold.fold(formula) == want


def test_optimizer_read_from_table_when_a_cell():
    assert "Optimizers[" in budget_sheet.HELPERS[-1][2]
