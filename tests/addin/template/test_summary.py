"""The Summary sheet (page 1, the page finance signs) and the one cost to budget, named the same way on
the Summary, the Budget and the command line. Its figures recalculated by LibreOffice and Gnumeric:
test_libreoffice (cached = recalculated, every sheet) and test_portable (the e-mail copy)."""

from __future__ import annotations

import re

import openpyxl
import pytest

from tests.conftest import run_cli
from trainbudget import calc
from trainbudget.addin.template import (
    budget_sheet,
    build as template,
    model_block,
    range_basis,
    ranges_block,
    step_block,
    summary_sheet,
)

V = {name: default for name, _, default, *_ in budget_sheet.INPUTS}


@pytest.fixture(scope="module")
def book(built):
    return openpyxl.load_workbook(built.path)


def _labels(built, sheet: str) -> dict[str, str]:
    """A formula cell's cached text -> its coordinate."""
    return {v: ref for ref, v in built.values[sheet].items() if isinstance(v, str)}


def test_summary_is_first_in_print_order_and_one_portrait_page(book):
    assert book.sheetnames[0] == "Summary" == template.SHEETS[0]
    ws = book["Summary"]
    assert ws.page_setup.orientation == "portrait" and int(ws.page_setup.scale) == 100
    assert not ws.sheet_properties.pageSetUpPr or not ws.sheet_properties.pageSetUpPr.fitToPage  # never shrunk
    assert ws.print_area.endswith(f"$D${ws.max_row}") and "&D" in ws.oddFooter.left.text
    assert book.active.title == "Budget"  # it opens where one types


def test_summary_reads_the_budget_by_name_only(book):
    """No cell address of another sheet: each figure is a defined name of the Budget (or a function of them)."""
    ws, names = book["Summary"], set(book.defined_names)
    seen = set()
    for row in ws.iter_rows():
        for c in row:
            if isinstance(c.value, str) and c.value.startswith("="):
                assert "!" not in c.value, c.coordinate
                seen |= {n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", c.value) if n in names}
    for wanted in ("Cost_expected", "Cost_low", "Cost_high", "Cost_typed", "Hours_expected", "Energy_high",
                   "Range_u_expected", "Range_goodput", "Range_is_step", "Step_seconds", "Price_used", "Price_date",
                   "Prior_basis"):
        assert wanted in seen, wanted


def test_one_cost_to_budget_equals_calc(built):
    ranged = range_basis.ranged(V, calc.catalog())
    typed = ranges_block.budget(V, calc.catalog())
    summary = built.values["Summary"]
    row = _labels(built, "Summary")[f"{ranges_block.COST_TO_BUDGET}, USD"][1:]
    low, expected, high = (float(x) for x in ranged.cost_usd.as_tuple())
    assert (summary[f"B{row}"], summary[f"C{row}"], summary[f"D{row}"]) == (expected, low, high)
    assert low < expected < high
    typed_row = _labels(built, "Summary")[f"{budget_sheet.TYPED_COST} ({V['utilization']:.0%}), USD"][1:]
    assert summary[f"B{typed_row}"] == float(typed.cost_usd) != expected
    budget = built.values["Budget"]
    assert f"{ranges_block.COST_TO_BUDGET} (USD)" in budget.values()  # the ranges' middle row
    assert f"{budget_sheet.TYPED_COST} (USD)" in budget.values()  # the Results' row
    labels = {v for ref, v in budget.items() if ref.startswith("A")}
    assert "Cost (USD)" not in labels and "Cost, expected (USD)" not in labels


def test_the_cost_to_budget_is_the_step_models():
    """The template budgets from the step model: its expected cost is calc.budget at utilization "step" of the
    same job (the preset, the model block's layout, the step block's batch), to the 0.003% between the
    architecture's counted parameters and the preset's published count; the published runs' prior says
    another figure, which Ranges_from can choose."""
    short = {"tensor_parallel": "tp", "pipeline_parallel": "pp", "expert_parallel": "ep"}
    layout = {short[field]: d for _, _, field, d, _ in model_block.LAYOUT_INPUTS}
    step = {n: d for n, _, d, _, _ in step_block.STEP_INPUTS}
    b = calc.budget(calc.job(model=model_block.PRESET, tokens=V["tokens"], device=V["device"], devices=V["devices"],
                             zero_stage=V["zero_stage"], utilization="step", price=V["usd_per_device_hour"],
                             seq_len=step["Step_seq_len"],
                             global_batch_tokens=step["Step_batch"] * step["Step_seq_len"],
                             micro_batch=step["Step_micro_batch"], vpp=step["Step_vpp"], cp=step["Step_cp"],
                             recompute=step["Step_recompute"], **layout))
    ranged = range_basis.ranged(V, calc.catalog())
    assert range_basis.step_applies(V)
    for got, want in zip(ranged.cost_usd.as_tuple(), b.cost_usd.as_tuple(), strict=True):
        assert float(got) == pytest.approx(float(want), rel=1e-4)
    prior = ranges_block.budget(V, calc.catalog(), utilization="prior")
    assert float(prior.cost_usd.expected) > 2 * float(ranged.cost_usd.expected)  # the runs' 9%, the step's 35%


def test_the_job_in_one_sentence():
    said = summary_sheet.sentence_text(V)
    assert said.startswith("Training of all weights of a model of 8.0B parameters on 1.0B tokens, 8 x H100 SXM")
    moe = summary_sheet.sentence_text({**V, "params": 47e9, "active_params": 13e9, "method": "lora"})
    assert moe.startswith("LoRA fine-tune of a model of 47.0B parameters (13.0B active per token)")
    assert [summary_sheet.count_text(n) for n in (1.5e13, 350e6, 12_000)] == ["15.0T", "350.0M", "12,000"]


def test_the_command_line_names_the_cost_to_budget():
    args = ("estimate", "--range", "--params", "70B", "--tokens", "2T", "--device", "H100 SXM, BF16 tensor core, dense",
            "--devices", "512", "--price", "2.5")
    out = run_cli(*args, check=True).stdout
    b = calc.budget(calc.job(params=70e9, tokens=2e12, device="H100 SXM, BF16 tensor core, dense", devices=512,
                             utilization="prior", price=2.5))
    low, expected, high = (f"{float(x):,.0f}" for x in b.cost_usd.as_tuple())
    assert f"cost to budget (expected): {expected} USD (low {low}, high {high})" in out
    typed = run_cli(*(a for a in args if a != "--range"), "--utilization", "0.4", check=True).stdout
    assert "cost USD at the given utilization: a what-if, not the cost to budget" in typed
