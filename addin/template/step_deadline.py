"""The step block's deadline: the fewest devices on which the block's layout (its TP, PP, CP, EP and
batch; data parallel the rest) runs the Budget's tokens within Deadline_days at the whole run's
expected hours, as calc.deadline_devices searches for it; and at its low and high hours (a table
each, which the Budget's deadline rows read when the ranges come from the step). Time only: the devices that hold the
model states are the Results' "Devices needed to fit".

Counts go in steps of r = TP x PP x CP x EP (k x r devices, data parallel k x EP). A table below
the hardware table times the step at each count it tries, as native formulas over the step block's
named rows: a rank's work (compute, TP, CP, EP) is its share of the batch, so it scales as 1 / k;
the bubble is fixed by the batch; exposed DP and the optimizer are worked out at the count's own
data parallel, on the step block's links. Its first rows raise a lower bound from k = 1
(calc.deadline_bound: no smaller count can meet the deadline), DEADLINE_BOUNDS times; the next
DEADLINE_COUNTS rows are the counts from that bound up, and the answer is the first that meets it.
"""

from __future__ import annotations

import math
from typing import Any

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from . import styles
from .cached_cells import CachedCells, text
from .row_formulas import evaluate

NONE = f"none of the {calc.DEADLINE_COUNTS} counts tried"
REFUSED = "none: calc's step model refuses this layout at any count"
COUNT_OK = "Step_count_ok"  # the step block's row: the layout is taken at some count (layout_pieces)
R = "Tensor_parallel*Pipeline_parallel*Step_cp*Expert_parallel"
Z3, Z1 = "ZeRO_stage>=3", "ZeRO_stage>=1"
# (column, header, formula over {column} placeholders for this row's cells and the step block's names)
COLUMNS = (
    ("A", "k (counts of TP x PP x CP x EP)", None),
    ("B", "Devices", f"{{A}}*{R}"),
    ("C", "Data parallel", "{A}*Expert_parallel"),
    ("D", "Ok", "IF(Step_batch>={C}*Step_micro_batch,1,0)"),
    ("E", "DP x CP ranks", "{C}*Step_cp"),
    ("F", "Of them in one domain", "MIN(Step_inside,{E})"),
    ("G", "Dense weights' DP traffic, one pass (s)", f"IF({{E}}>1,IF({Z3},3,2)*Step_dense*2*(({{F}}-1)/{{F}}/Step_up"
                                                     "+({E}/{F}-1)/({E}/{F})/({F}*Step_out)),0)"),
    # the experts' DP group: DP x CP / EP = k x CP ranks, EP apart
    ("H", "Experts' DP ranks in one domain", "MIN(MAX(INT(Step_inside/Expert_parallel),1),{A}*Step_cp)"),
    ("I", "Experts' DP traffic, one pass (s)", f"IF({Z3},3,2)*Step_expert*2*(({{H}}-1)/{{H}}/Step_up+({{A}}*Step_cp"
                                               "/{H}-1)/({A}*Step_cp/{H})/({H}*Step_out))"),
    ("J", "Micro-batches", "Step_batch/({C}*Step_micro_batch)"),
    ("K", "DP left exposed (s)", "MAX({G}+{I}-{overlap}*Step_compute_s/Step_micro,0)"),
    ("L", "Exposed DP (s)", f"IF({Z3},{{J}}*({{K}}+({{G}}+{{I}})/(3*MAX(Step_layers,1))),{{K}})"),
    ("M", "Optimizer (s)", f"(Step_dense/IF({Z1},{{E}},1)+Step_expert/IF({Z1},{{A}}*Step_cp,1))*32/Step_mem_Bps"),
    ("N", "Work per rank (s)", "Step_work*Step_dp/{C}"),
    ("O", "Step (s)", "{N}+Step_bubble+{L}+{M}"),
)
CASES = ("expected", "low", "high")  # a table each: the Budget's deadline rows read low and high (Range_is_step)
SECONDS_COLUMNS = "GIKLMNQ"


def _factor(case: str) -> str:
    """Run hours = steps x step seconds / 3600 x this, in calc.run_hours' `case` (calc.step_case_factor):
    the same at every count, the literals calc's."""
    g, (fast, slow) = calc.fit_goodput(), calc.STEP_RESIDUAL
    return {"expected": "/Step_goodput", "low": f"*{fast!r}/{g.high!r}", "high": f"*{slow!r}/{g.low!r}"}[case]


def run_columns(case: str) -> tuple[tuple[str, str, str], ...]:
    """Columns P and Q for `case`: the whole run's hours at each count, and calc.deadline_bound's room
    (the step seconds the deadline allows, less the part that does not shrink as k grows: the
    bubble, exposed DP but ZeRO-3's, the optimizer without ZeRO)."""
    fixed = f"(Step_bubble+IF({Z3},0,{{L}})+IF({Z1},0,{{M}}))"
    room = ("24*Deadline_days*3600*Step_goodput/Step_steps" if case == "expected"  # as calc's hours per step second
            else f"24*Deadline_days/(Step_steps/3600*{calc.step_case_factor(case)!r})")
    return (("P", f"Whole run, hours ({case})", f"Step_steps*{{O}}/3600{_factor(case)}"),
            ("Q", "Seconds left past the fixed part", f"{room}-{fixed}"))


LAST = "R"  # the next bound (bound rows) or the devices that meet the deadline (count rows)
MEETS = (LAST, "", 'IF({D}=1,IF({P}<=24*Deadline_days,{B},""),"")')
# calc.deadline_bound from a bound row's step: the fewest k >= its k that can meet the deadline
# (past the batch's ranks when no k can)
BOUND = (LAST, "", f"IF({{Q}}<=0,INT(Step_batch/(Expert_parallel*Step_micro_batch))+1,"
                   f"MAX({{A}},-INT(-{{A}}*({{N}}+IF({Z3},{{L}},0)+IF({Z1},{{M}},0))/{{Q}})))")
HEADER_LAST = "Next bound on k (first rows); devices that meet the deadline"


def counts_name(case: str) -> str:
    """The defined name of a case's counts column (Step_deadline_counts: the expected case's)."""
    return "Step_deadline_counts" + ("" if case == "expected" else f"_{case}")


def result(case: str) -> str:
    """The fewest devices of `case`'s table that meet Deadline_days, or the words where none does."""
    counts = counts_name(case)
    return f'IF(COUNT({counts})=0,"{NONE}",MIN({counts}))'


def taken(formula: str) -> str:
    """`formula`, or the words REFUSED where calc's step model refuses the block's layout at every count (it
    does not split the architecture, its CP is not taken, it has VPP without a pipeline, or the batch is short
    of a micro-batch per replica at the fewest devices: COUNT_OK)."""
    return f'IF({COUNT_OK},{formula},"{REFUSED}")'


def at_least(case: str, floor: str) -> str:
    """result(case), raised to `floor` devices (those that hold the model states) where it is a count."""
    counts = counts_name(case)
    return f'IF(COUNT({counts})=0,"{NONE}",MAX(MIN({counts}),{floor}))'


def write(ws: Worksheet, cached: CachedCells, values: dict[str, Any], result_row: int, top: int,
          wants: dict[str, float]) -> None:
    """The result row at `result_row` of the step block (the expected case) and a table of counts per
    case from row `top`; `values` the step block's rows (and inputs) by name, `wants` calc.deadline_devices'
    answer per case, which each table's own figures must give."""
    for case in CASES:
        found = [v for v in _table(ws, cached, values, top, case) if v != ""]
        got = min(found) if found else math.inf
        if got != wants[case]:
            raise AssertionError(f"step deadline ({case}): the table gives {got!r} devices, "
                                 f"calc.deadline_devices {wants[case]!r}")
        top += 3 + calc.DEADLINE_BOUNDS + calc.DEADLINE_COUNTS
    want = wants["expected"]
    text(ws, f"A{result_row}", "Devices for the deadline at this layout (time only)", styles.BOLD)
    cached.formula(ws, f"B{result_row}", taken(result("expected")), NONE if math.isinf(want) else want,
                   styles.COUNT, styles.BOLD)
    ws.parent.defined_names["Step_deadline_devices"] = DefinedName(
        "Step_deadline_devices", attr_text=f"'{ws.title}'!$B${result_row}")
    text(ws, f"C{result_row}", "the first count tried (table below) whose expected hours meet Deadline_days "
         "(calc.deadline_devices); to hold the model states: Devices needed to fit", styles.NOTE)


def _table(ws: Worksheet, cached: CachedCells, values: dict[str, Any], top: int, case: str) -> list[Any]:
    """`case`'s counts tried, from row `top` (a heading, the headers, the bound rows, the counts), each
    cell's formula with its value worked out by the block's own evaluator; the counts' column R."""
    text(ws, f"A{top}", f"Step deadline, {case} hours: the counts tried (calc.deadline_devices), the step timed at "
         "each (k = 1 and the lower bounds, then the counts from the last bound; Ok 1: the batch gives each "
         "data-parallel rank a micro-batch)", styles.HEADING)
    columns = (*COLUMNS, *run_columns(case))
    for col, header, _ in (*columns, (LAST, HEADER_LAST, None)):
        text(ws, f"{col}{top + 1}", header, styles.BOLD).alignment = styles.WRAP
    ws.row_dimensions[top + 1].height = 66  # the wrapped headers of the narrow columns, in full
    first = top + 2
    k_formula, k = "1", 1.0
    for j in range(calc.DEADLINE_BOUNDS):  # the bound rows
        cells = _row(ws, cached, values, first + j, (k_formula, k), (*columns[1:], BOUND))
        k_formula, k = f"{LAST}{first + j}", cells[LAST]
    start = first + calc.DEADLINE_BOUNDS
    counts = []
    for i in range(calc.DEADLINE_COUNTS):
        cells = _row(ws, cached, values, start + i, (f"${LAST}${start - 1}+{i}", k + i), (*columns[1:], MEETS))
        counts.append(cells[LAST])
    name = counts_name(case)
    ws.parent.defined_names[name] = DefinedName(
        name, attr_text=f"'{ws.title}'!${LAST}${start}:${LAST}${start + calc.DEADLINE_COUNTS - 1}")
    return counts


def _row(ws: Worksheet, cached: CachedCells, values: dict[str, Any], r: int, k: tuple[str, float],
         columns: tuple[tuple[str, str, str], ...]) -> dict[str, Any]:
    """Row `r`: k (its formula and value) in A, then `columns` in B to R (the step at k, then the next
    bound or the count where it meets the deadline); their values by column."""
    cached.formula(ws, f"A{r}", k[0], k[1], "#,##0")
    got: dict[str, Any] = {"A": k[1]}
    cols = "ABCDEFGHIJKLMNOPQ"
    for col, _, formula in columns:
        template = formula.replace("{overlap}", repr(calc.STEP_CONSTANTS.overlap))
        in_sheet = template.format(**{c: f"{c}{r}" for c in cols})
        value = evaluate(template.format(**{c: f"_col_{c}" for c in cols}),
                         {**values, **{f"_col_{c}": v for c, v in got.items()}})
        got[col] = value
        cached.formula(ws, f"{col}{r}", in_sheet, value, "0.000" if col in SECONDS_COLUMNS else "#,##0.##")
    return got
