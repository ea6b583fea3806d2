"""The Budget sheet refuses a bad input as calc does (input_checks): each input's data validation
is stop style in calc's words, and, for a value pasted or written past it, LibreOffice's
recalculation shows the Input check's message (calc's own error text) where the results, the
every-device comparison and the deadline block would show a number.

All copies are recalculated in ONE LibreOffice run."""

from __future__ import annotations

from collections.abc import Callable

import openpyxl
import pytest

from tests.sheet_cases import named_value, recalculated_copies, set_named
from trainbudget import calc
from trainbudget.addin.functions import input_pieces
from trainbudget.addin.template import budget_sheet, deadline_block, input_checks, ranges_block
from trainbudget.calc.physics import memory as calc_memory
from trainbudget.calc.planning import inverse

DEFAULTS = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
# (input, bad value, extra changes): the reviewer's six and one of every other rule
BAD = (
    ("utilization", 40, {}), ("params", -7e9, {}), ("tokens", 0, {}), ("pue", 0, {}), ("zero_stage", 5, {}),
    ("devices", 0, {}), ("devices", 2.5, {}), ("active_params", -1, {}), ("active_params", 9e9, {}),
    ("usd_per_device_hour", -1, {}), ("trainable", -0.1, {"method": "lora"}), ("method", "sft", {}),
    ("optimizer", "adam", {}), ("params", "abc", {}),
)
# where the sheet words it its own way: a blank is "blank" (calc: None or "a job needs params"), and the
# Budget's utilization is a number (calc also takes the text 'prior')
WORDED = (("params", None, "#VALUE! params must be a number (got blank)"),
          ("utilization", "forty", "#VALUE! utilization must be a number (got 'forty')"),
          ("pue", None, "#VALUE! pue must be a number (got blank)"),
          ("device", "H10", "#VALUE! device must be a Name of the Devices sheet (got 'H10')"))
DEADLINE_BAD = (("Deadline_days", 0), ("Budget_USD", -5))


def _calc_error(changes: dict) -> str:
    """calc's refusal of the Budget's job with `changes`, as the sheet shows it."""
    v = {**DEFAULTS, **changes}
    with pytest.raises(calc.TrainingBudgetError) as e:
        ranges_block.budget(v, calc.catalog())
    return "#VALUE! " + str(e.value)


def _labels(ws) -> dict[str, int]:
    return {c.value: c.row for c in ws["A"] if isinstance(c.value, str)}


@pytest.fixture(scope="module")
def books(soffice, built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    cases = [{}] + [{name: value, **extra} for name, value, extra in BAD]
    cases += [{"deadline": (name, value)} for name, value in DEADLINE_BAD]
    cases += [{name: value} for name, value, _ in WORDED]
    def edit(case: dict) -> Callable:
        def apply(wb) -> None:
            for name, value in case.items():
                if name == "deadline":
                    set_named(wb, *value)
                else:
                    set_named(wb, budget_sheet.NAMES[name], value)
        return apply
    return cases, recalculated_copies(built.path, tmp, map(edit, cases)), openpyxl.load_workbook(built.path)


def _figures(wb) -> dict[str, list]:
    """The results' and the ranges' figures (column B), the deadline rows, and the comparison's."""
    ws = wb["Budget"]
    rows = _labels(ws)
    results = range(rows["Training compute (FLOPs)"], rows["Energy (kWh)"] + 1)
    ranged = range(rows["Hours, low"], rows["Energy, high"] + 1)
    deadline = range(rows[deadline_block.DEADLINE_CHECK] + 1, rows["Tokens for the budget, high"] + 1)
    top = budget_sheet.FIRST_INPUT - 1 + 2
    compare = [ws[f"{col}{r}"].value for r in range(top, top + len(calc.catalog()))
               for col in budget_sheet.COMPARE_COLS[2:]]
    return {"results": [ws[f"B{r}"].value for r in [*results, *ranged]],
            "deadline": [ws[f"B{r}"].value for r in deadline], "compare": compare}


def test_good_inputs_pass_and_show_figures(books):
    _, got, _ = books
    assert named_value(got[0], input_pieces.INPUT_ERROR) in (None, "")
    assert named_value(got[0], input_checks.DEADLINE_ERROR) in (None, "")
    figures = _figures(got[0])
    assert all(isinstance(x, (int, float)) for x in figures["results"] + figures["deadline"])
    assert len(figures["deadline"]) >= 12 and sum(isinstance(x, (int, float)) for x in figures["compare"]) > 60


def test_each_bad_input_shows_calcs_message_and_no_number(books):
    cases, got, _ = books
    for case, wb in zip(cases[1:1 + len(BAD)], got[1:1 + len(BAD)], strict=True):
        want = _calc_error(case)
        assert named_value(wb, input_pieces.INPUT_ERROR) == want, case
        assert named_value(wb, input_checks.DEADLINE_ERROR) == want, case
        ws = wb["Budget"]
        assert ws[f"B{_labels(ws)['Input check (blank: all pass)']}"].value == want, case  # above the Results
        figures = _figures(wb)
        assert set(figures["results"]) == set(figures["deadline"]) == {want}, case  # the message, no number
        assert set(figures["compare"]) <= {None, ""}, case  # the comparison blank


def test_reviewers_utilization_40_reads_as_calc_words_it(books):
    _, got, _ = books
    assert named_value(got[1], input_pieces.INPUT_ERROR) == "#VALUE! utilization must be in (0, 1] (got 40)"


def test_a_bad_deadline_stops_only_the_deadline_rows(books):
    _, got, _ = books
    for (name, value), wb in zip(DEADLINE_BAD, got[1 + len(BAD):1 + len(BAD) + len(DEADLINE_BAD)], strict=True):
        arg = dict((r[0], r[1]) for r in input_checks.DEADLINE_RULES)[name]
        want = f"#VALUE! {arg} must be > 0 (got {value})"
        assert named_value(wb, input_checks.DEADLINE_ERROR) == want
        assert named_value(wb, input_pieces.INPUT_ERROR) in (None, "")
        figures = _figures(wb)
        assert set(figures["deadline"]) == {want}
        assert all(isinstance(x, (int, float)) for x in figures["results"])


def test_blank_and_text_inputs_are_refused_in_the_sheets_words(books):
    _, got, _ = books
    for (_, _, want), wb in zip(WORDED, got[-len(WORDED):], strict=True):
        assert named_value(wb, input_pieces.INPUT_ERROR) == want
        assert set(_figures(wb)["results"]) == {want}


def test_plan_rules_word_as_calc_plan():
    table = calc.catalog()
    for call, name in ((lambda: inverse.devices_for_days(8e9, 1e9, "H100 SXM, BF16 tensor core, dense", 0.0,
                                                          utilization=0.4, table=table), "days"),
                       (lambda: inverse.tokens_for_budget(8e9, "H100 SXM, BF16 tensor core, dense", 0.0,
                                                           usd_per_device_hour=2.5, utilization=0.4,
                                                           table=table), "usd")):
        with pytest.raises(calc.TrainingBudgetError, match=rf"^{name} must be > 0 \(got 0\)$"):
            call()


def test_every_numeric_input_has_stop_validation_in_calcs_words(books):
    *_, template = books
    ws = template["Budget"]
    by_cell = {str(dv.sqref): dv for dv in ws.data_validations.dataValidation}
    for ref, name, kind, arg, _ in input_checks.BUDGET_RULES + input_checks.DEADLINE_RULES:
        if kind == "spec":  # the price spec's parts: the Provider and Plan drop-downs (test_sheet_prices)
            continue
        cell = template.defined_names[ref].attr_text.split("!")[1].replace("$", "")
        dv = by_cell[cell]
        if kind == "device":  # the Devices sheet's names as a drop-down; the Input check words a bad one
            assert dv.type == "list" and dv.formula1 == "DeviceNames"
            continue
        assert dv.errorStyle == "stop" and dv.showErrorMessage, ref
        assert f"{name} {input_checks.words(kind, arg)}" in dv.error, ref
    assert by_cell["B9"].type == "custom" and "Utilization" not in by_cell["B9"].formula1  # the cell itself


def test_words_are_calcs():
    assert input_checks.words("fraction") == "must be in (0, 1]"
    assert input_checks.words("at_least", 1.0) == "must be >= 1"
    assert input_checks.words("whole", 1) == "must be a whole number >= 1"
    assert input_checks.words("whole_in", calc_memory.ZERO_STAGES) == "must be 0, 1, 2 or 3"
    assert input_checks.words("at_most") == "must be <= params"
