"""Readable native formulas: short, folded (no literal compared with a literal), named inputs."""

from __future__ import annotations

import ast
import re
import statistics
from pathlib import Path

import openpyxl
import pytest

from trainbudget.addin import template
from trainbudget.addin.functions import fold, input_pieces, native, pieces, rewrite
from trainbudget.addin.functions.registry import FUNCTIONS
from trainbudget.addin.template import budget_sheet, input_checks
from trainbudget.addin.verify import check as verify

LIMIT = 200


def _formulas(path, sheet):
    ws = openpyxl.load_workbook(path)[sheet]
    return {c.coordinate: c.value[1:] for row in ws.iter_rows() for c in row if verify.is_formula(c)}


def _figure(formula: str) -> str:
    """A result's own formula: inside the one guard (input_pieces.unless_error) that shows a refused
    input's message instead of the figure."""
    return input_pieces.unguarded(formula, (input_pieces.INPUT_ERROR, input_checks.DEADLINE_ERROR))


@pytest.mark.parametrize("sheet", ["Budget", "Functions", "Runs"])
def test_formulas_short_and_folded(built, sheet):
    formulas = _formulas(built.path, sheet)
    assert formulas
    too_long = {ref: len(f) for ref, f in formulas.items() if len(_figure(f)) > LIMIT}
    assert not too_long
    assert not {ref: found for ref, f in formulas.items() if (found := fold.literal_comparisons(f))}


def test_budget_reads_like_arithmetic(built):
    formulas = _formulas(built.path, "Budget")
    assert statistics.median(len(f) for f in formulas.values()) < 80  # (the rows read Job_FLOPs by name)
    labels = {c.value: c.row for c in openpyxl.load_workbook(built.path)["Budget"]["A"] if c.value}
    flops = formulas[f"B{labels['Training compute (FLOPs)']}"]
    assert _figure(flops) == "FLOPs_per_token*Active_used*Tokens"  # MoE: active; else Params; 6 or 2 (inference)
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


# The sheet builders: every formula they write comes from the registry (addin/functions/registry.py),
# its native pieces (native.py) or the sheets' pieces (pieces.py); none is typed in a builder.
BUILDERS = ("budget_sheet", "scenarios", "ranges_block", "model_block", "prices_sheet", "sheets")
_CALL = re.compile(r"\b(IF|IFERROR|INDEX|MATCH|SUMPRODUCT|MIN|MAX|SUM|ROUNDUP|TEXT|ISNUMBER|OR|AND|MOD|ABS|"
                   r"LEFT|MID|FIND|LEN|NA|ROWS|ROW)\(")
_OPERAND_L, _OPERATOR, _OPERAND_R = r"""[\w)\]"}]""", "[*/^<>=&+]", r"""[\w($"{]"""
# operands joined by an operator, no spaces (an f-string's piece may hold one operand only)
_ARITHMETIC = re.compile(f"{_OPERAND_L}{_OPERATOR}{_OPERAND_R}|^{_OPERATOR}{_OPERAND_R}|{_OPERAND_L}{_OPERATOR}$")


def formula_text(source: str) -> list[tuple[int, str]]:
    """String literals of `source` (docstrings aside) that look like formula text: an Excel function
    call or an operator between operands, outside quoted text; prose (with spaces) and units pass."""
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            bare = re.sub(r'"[^"]*"', '""', n.value).replace("TFLOP/s", "").replace("TB/s", "")
            if " " not in bare and (_CALL.search(bare) or _ARITHMETIC.search(bare)):
                found.append((n.lineno, n.value))
    return sorted(found)


@pytest.mark.parametrize("module", BUILDERS)
def test_builders_type_no_formula(module):
    path = Path(template.__file__).parent / f"{module}.py"
    assert formula_text(path.read_text("utf-8")) == []


def test_formula_scan_finds_typed_formulas():
    typed = 'x = "IF(ZeRO_stage>=3,Weights_GB,0)"\ny = f"B{row}*Devices_count"\nz = "Memory_GiB*2^30-Whole_GB"\n'
    prose = 'a = "device-hours x price, in GB (1e9 bytes)"\nb = \'#,##0.0 "TFLOP/s"\'\n'
    assert [line for line, _ in formula_text(typed)] == [1, 2, 3] and formula_text(prose) == []


def test_devices_needed_is_the_registry_formula(built):
    """The Budget's "Devices needed to fit" is TRAIN_DEVICES_NEEDED's native form over its named rows."""
    ws = openpyxl.load_workbook(built.path)["Budget"]
    row = next(c.row for c in ws["A"] if c.value == "Devices needed to fit")
    formula = _figure(ws[f"B{row}"].value[1:])
    assert ws[f"B{row}"].value[1:] == input_pieces.unless_error(formula)
    assert formula == fold.fold(native.devices_needed(pieces.gb_to_bytes("Sharded_GB"),
                                                      pieces.gb_to_bytes("Fixed_GB"), "Usable_GiB"))
    assert "Usable_GiB*2^30-" in formula  # usable GiB (capacity less the reserve) in bytes, not GiB minus GB
    usable = next(c.row for c in ws["B"] if c.value == "=" + fold.fold(native.usable_gib("Memory_GiB")))
    assert "Usable_GiB" in ws.parent.defined_names and ws[f"A{usable}"].value.startswith("Usable memory (GiB)")
