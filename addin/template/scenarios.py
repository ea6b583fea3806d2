"""The Scenarios sheet: up to ten plans side by side, each a column of inputs (parameters, tokens,
device, devices, utilization or "prior", price or provider:plan, PUE) and results (hours,
device-hours, cost in the Budget's currency, energy; low / expected / high where the plan says
"prior", the expected row alone at a given utilization), in native formulas equal to
calc.scenario_plan_row; and a scatter chart of cost against hours across them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.chart.data_source import NumData, NumVal, StrData, StrRef, StrVal
from openpyxl.chart.series import SeriesLabel
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import input_pieces, native, pieces, price_pieces, prior_native
from ..functions.registry import BY_NAME
from . import input_checks, prices_sheet, ranges_block, styles
from .cached_cells import CachedCells, landscape_fit_width, style, text, widths

COLUMNS = tuple("BCDEFGHIJK")  # ten plans
# Default plans (name, params, active params or None for dense, tokens, device, devices, utilization,
# price, PUE); the rest blank.
H100 = "H100 SXM, BF16 tensor core, dense"
# The MoE plan: Mixtral 8x7B's 46.7B total, 12.9B active parameters (Jiang et al. 2024, arXiv:2401.04088, section 2.1).
PLANS: tuple[tuple[Any, ...], ...] = (
    ("7B, rent on demand", 7e9, None, 1.4e11, H100, 64, "prior", "lambda:on_demand", 1.0),
    ("7B, at 40%", 7e9, None, 1.4e11, H100, 64, 0.4, 2.5, 1.0),
    ("13B, 1-year commit", 13e9, None, 2.6e11, H100, 128, "prior", "gcp:1yr", 1.2),
    ("13B on B200, spot", 13e9, None, 2.6e11, "B200, BF16 tensor core, dense", 64, "prior", "coreweave:spot", 1.2),
    ("70B on H200", 70e9, None, 1.4e12, "H200 SXM, BF16 tensor core, dense", 512, "prior", "aws", 1.2),
    ("7B, FP8 row", 7e9, None, 1.4e11, "H100 SXM, FP8 tensor core, dense", 64, "prior", "runpod", 1.0),
    ("70B on A100, 3-year", 70e9, None, 1.4e12, "A100 SXM 80GB, BF16 tensor core, dense", 1024, 0.35, "azure:3yr", 1.3),
    ("47B MoE, 13B active", 46.7e9, 12.9e9, 1e12, H100, 256, "prior", "lambda", 1.0),
)
INPUTS = (("name", "Plan", None), ("params", "Model parameters", styles.COUNT),
          ("active_params", "Active parameters (blank: all)", styles.COUNT),
          ("tokens", "Training tokens", styles.COUNT), ("device", "Device", None),
          ("devices", "Number of devices", styles.COUNT),
          ("utilization", 'Utilization (a share, or "prior")', styles.PERCENT),
          ("price", "Price: USD per device-hour, or provider:plan[:offering]", styles.USD_RATE),
          ("pue", "PUE", styles.RATIO))
FIRST = 5  # first input row
ROW = {name: FIRST + i for i, (name, *_) in enumerate(INPUTS)}
# The plan's method, below its other inputs (a PLANS tuple gives those nine): blank = full (a training
# step, 6 FLOPs per parameter-token); lora / qlora 4 (frozen weights); inference a forward pass, 2
# (calc.FLOPS_PER_PARAM_TOKEN, calc.scenario_plan_row).
METHOD = ("method", "Method (blank: full; inference: a forward pass)", None)
ROW[METHOD[0]] = ROW["pue"] + 1
HELPERS = ("active_used", "moe", "hardware", "kind", "precision", "prior_row", "row_used", "rate", "watts",
           "flops_per_token", "hours_100", "provider", "spec_rest", "plan", "offering", "plan_col", "price_date",
           "price_found", "price_used",
           "prior_hardware", "prior_pos_long",
           "prior_pos", "prior_effect", "util_expected", "util_low", "util_high")
HELPER_FIRST = ROW["method"] + 2
ROW.update({name: HELPER_FIRST + i for i, name in enumerate(HELPERS)})
RESULT_FIRST = ROW[HELPERS[-1]] + 2
FIGURES = (("hours", "Hours", styles.HOURS), ("device_hours", "Device-hours", styles.DEVICE_HOURS),
           ("usd", "Cost", ranges_block.CURRENCY_FORMAT), ("kwh", "Energy", styles.KWH))
CASES = ("low", "expected", "high")
for _k, (_fig, *_) in enumerate(FIGURES):
    for _j, _case in enumerate(CASES):
        ROW[f"{_fig}_{_case}"] = RESULT_FIRST + 2 + 3 * _k + _j
ROW["input_check"] = RESULT_FIRST + 1  # the plan's first refusal, whole (wrapped), above its figures
CHECK_FIRST = RESULT_FIRST + 3 * len(FIGURES) + 3  # the plans' input checks (heading), below the results
CHECK_HEIGHT = 48  # points: four lines of a refusal at the note size (the longest, about 100 characters)
LABEL_WIDTH = 46  # column A: the longest label ("Mixture of experts (1: fewer active than total parameters)") whole
EXCEL_EPOCH = dt.date(1899, 12, 30)  # serial day 0 of the 1900 date system
DATE_OR_NONE = '[=0]"none";yyyy-mm-dd'
UTIL = {"low": "util_high", "expected": "util_expected", "high": "util_low"}  # low hours at high utilization


def formulas(c: str) -> dict[str, str]:
    """Every helper and result formula of the plan in column `c`, by row name (pieces over the
    plan's cells; the prior's rows as calc.prior_device, prices as calc.lookup_price)."""
    def at(name: str) -> str:
        return f"{c}{ROW[name]}"
    dev, util, price = at("device"), at("utilization"), at("price")
    f = {"active_used": pieces.active_used(at("active_params"), at("params")),
         "moe": pieces.moe_flag(at("active_used"), at("params")),
         "hardware": ranges_block.field(dev, "hardware"), "kind": ranges_block.field(dev, "kind"),
         "precision": ranges_block.field(dev, "precision"),
         "prior_row": ranges_block.prior_row(at("hardware"), at("kind")),
         "row_used": pieces.row_used(util, dev, ranges_block.prior_name(dev, at("kind"), at("precision"),
                                                                        at("prior_row"))),
         "rate": native.lookup(at("row_used"), "tflops"),
         "watts": pieces.or_blank(native.lookup(at("row_used"), "watts")),
         "flops_per_token": native.flops_per_param_token(at("method")),  # blank: 6, a training step
         "hours_100": BY_NAME["TRAIN_HOURS"].native_formula(
             {"params": at("params"), "tokens": at("tokens"), "device": at("row_used"), "utilization": "1",
              "devices": at("devices"), "active_params": at("active_used")}, blank_means_default=False,
             helpers={"device:tflops": at("rate"), "_flops_per_param_token": at("flops_per_token")}),
         "provider": price_pieces.spec_provider(price), "spec_rest": price_pieces.spec_rest(price, at("provider")),
         "plan": price_pieces.spec_plan(at("spec_rest"), at("provider")),
         "offering": price_pieces.spec_offering(at("spec_rest")),
         "plan_col": pieces.blank_if(at("plan"), prices_sheet.plan_column(at("plan"))),
         "price_date": price_pieces.provider_date(at("provider"), at("hardware"), at("plan_col"), at("offering")),
         "price_found": price_pieces.provider_price(at("provider"), at("hardware"), at("plan_col"), at("price_date"),
                                                    at("offering")),
         "price_used": pieces.plan_price_used(price, at("price_found"), pieces.named_row_price(dev)),
         # the plan's own prior (calc.job_prior of its active parameters and MoE flag, as calc.budget's)
         "prior_hardware": prior_native.hardware_or_name(at("hardware"), dev),
         "prior_pos_long": prior_native.prefix_position_long(at("prior_hardware")),
         "prior_pos": prior_native.prefix_position(at("prior_hardware"), at("prior_pos_long")),
         "prior_effect": prior_native.family_effect(at("prior_pos")),
         "util_expected": prior_native.expected(at("prior_effect"), at("active_used"), at("devices"),
                                                at("tokens"), at("moe")),
         "util_low": prior_native.edge(at("util_expected"), at("prior_pos"), "low"),
         "util_high": prior_native.edge(at("util_expected"), at("prior_pos"), "high")}
    f = {k: pieces.blank_if(dev, v) for k, v in f.items()}
    before = None
    for k, (_, ok, refusal) in enumerate(input_checks.chain(rules(c))):  # the plan's checks, in calc's order
        own = input_pieces.first_refusal(before, ok, refusal(f"$A${ROW[f'check_{k}']}"))
        f[f"check_{k}"] = pieces.blank_if(dev, own)
        before = at(f"check_{k}")
    error = at(CHECK)
    f["input_check"] = error
    for case in CASES:
        f[f"hours_{case}"] = pieces.plan_hours(at("hours_100"), util, at(UTIL[case]), case != "expected", dev)
        hours = at(f"hours_{case}")
        f[f"device_hours_{case}"] = pieces.blank_if(hours, pieces.times(hours, at("devices")))
        dh = at(f"device_hours_{case}")
        f[f"usd_{case}"] = pieces.money(pieces.unless_blank([dh, at("price_used")],
                                                            pieces.product([dh, at("price_used"), "USD_rate"])))
        f[f"kwh_{case}"] = pieces.unless_blank([dh, at("watts")], pieces.energy_kwh(at("watts"), dh, at("pue")))
        for fig, *_ in FIGURES:  # a refused plan shows its first refusal instead of a figure
            f[f"{fig}_{case}"] = input_pieces.unless_error(f[f"{fig}_{case}"], error)
    return f


def rules(c: str) -> tuple[input_checks.Rule, ...]:
    """The plan in column `c`'s inputs under calc.budget's rules, in its order (input_checks' kinds):
    a share or "prior" for utilization, a Devices name, a price number >= 0 or a spec."""
    def at(name: str) -> str:
        return f"{c}{ROW[name]}"
    params, active, price = at("params"), at("active_params"), at("price")
    spec = input_checks.Spec(at("provider"), at("plan"), at("plan_col"), at("offering"), at("price_date"), price,
                             at("device"))
    return ((params, "params", "positive", None, False), (active, "active_params", "positive", None, True),
            (at("tokens"), "tokens", "positive", None, False), (at("devices"), "devices", "whole", 1, False),
            (at("utilization"), "utilization", "fraction", None, "prior"),
            (at("device"), "device", "device_name", None, False),
            (active, "active_params", "at_most", ("params", params), True),
            (at("method"), "method", "choice", calc.METHODS, True),  # blank: full
            (price, "usd_per_device_hour", "price_number", None, True), (price, "price", "spec", spec, True),
            (at("pue"), "pue", "at_least", 1.0, False))


CHECK_LABELS = tuple(label for label, *_ in input_checks.chain(rules(COLUMNS[0])))  # the same in every column
ROW.update({f"check_{k}": CHECK_FIRST + 1 + k for k in range(len(CHECK_LABELS))})
CHECK = f"check_{len(CHECK_LABELS) - 1}"  # a plan's first refusal ("" while it passes): its results show it
LAST = ROW[CHECK]


def expected(plan: tuple[Any, ...] | None, table: calc.DeviceTable, method: str | None = None) -> dict[str, Any]:
    """calc's figures for a plan column (cached values and the test's reference), by row name;
    `method` the plan's Method cell (None: blank, full)."""
    if plan is None:
        return {}
    _, params, active, tokens, device, devices, util, price, pue = plan
    method = method or "full"
    ranged = isinstance(util, str)
    used_params = params if active is None else active
    used = calc.prior_device(device, table) if ranged else device
    row = calc.scenario_plan_row(params, tokens, device, devices=devices, utilization=util, price=price, pue=pue,
                         table=table, active_params=active, method=method)
    d, u = table.get(device), table.get(used)
    parsed = calc.parse_price_spec(price) if isinstance(price, str) else None
    out: dict[str, Any] = {
        "active_used": used_params, "moe": int(used_params < params),
        "hardware": d.hardware, "kind": d.kind, "precision": d.precision,
        "prior_row": ranges_block.position(d, table), "row_used": used, "rate": u.tflops,
        "watts": u.watts if u.watts else "", "flops_per_token": calc.flops_per_param_token(method),
        "hours_100": float(calc.budget(calc.job(params=params, tokens=tokens, device=used, devices=devices,
                                                active_params=active, method=method, table=table)).hours),
        "provider": parsed[0] if parsed else "", "plan": parsed[1] if parsed else "",
        "spec_rest": price.partition(":")[2] if parsed else "",
        "offering": calc.price_offering(price) if parsed else "",
        "plan_col": prices_sheet.PLANS.index(parsed[1]) + 1 if parsed else "",
        "price_date": 0, "price_found": "", "price_used": row["usd_per_device_hour"]}
    if parsed:
        best, _ = calc.lookup_price(price, used, table)
        out["price_date"] = (dt.date.fromisoformat(best.as_of) - EXCEL_EPOCH).days
        out["price_found"] = row["usd_per_device_hour"]
    p = calc.job_prior(device, active_params=used_params, devices=devices, moe=used_params < params,
                             tokens=tokens, table=table)
    fam = calc.device_families(device, table)
    hardware = d.hardware or device
    long, pos = prior_native.positions(hardware)
    out.update({"prior_hardware": hardware, "prior_pos_long": long, "prior_pos": pos,
                "prior_effect": calc.prior_coefficients().effect(fam), "util_expected": p.expected, "util_low": p.low,
                "util_high": p.high})
    for fig, *_ in FIGURES:
        for case in CASES:
            key = f"{fig}_{case}" if ranged else fig
            out[f"{fig}_{case}"] = row.get(key) if (ranged or case == "expected") and row.get(key) is not None else ""
    return out


# Column A's words and number formats of the helper rows, by row name (ROW)
_HELPER_LABELS = {"active_used": "Active parameters used (blank: all)",
                  "moe": "Mixture of experts (1: fewer active than total parameters)",
                  "hardware": "Device hardware", "kind": "Device kind", "precision": "Device precision",
                  "prior_row": "Devices row number of its BF16/FP16 rate", "row_used": "Device row used",
                  "rate": "Rate (TFLOP/s)", "watts": "Power (W)",
                  "flops_per_token": "FLOPs per parameter-token (the method's)",
                  "hours_100": "Hours at 100% utilization",
                  "provider": "Provider", "spec_rest": "Price spec after the provider", "plan": "Plan",
                  "offering": "Offering (blank: any)", "plan_col": "Plan column in Prices",
                  "price_date": "Price as of", "price_found": "Provider's price (USD per device-hour)",
                  "price_used": "Price used (USD per device-hour)",
                  "prior_hardware": "Prior: hardware read", "prior_pos_long": "Prior: longest family prefix (0: none)",
                  "prior_pos": "Prior: family prefix (Budget's table; 0: none)",
                  "prior_effect": "Prior: family effect (log utilization)",
                  "util_expected": "Utilization, expected (the plan's own prior)", "util_low": "Utilization, low",
                  "util_high": "Utilization, high"}
_HELPER_FORMATS = {"active_used": styles.COUNT, "moe": "0", "flops_per_token": "0", "rate": styles.TFLOPS,
                   "watts": '#,##0 "W"',
                   "hours_100": styles.HOURS, "prior_row": "0",
                   "plan_col": "0", "price_date": DATE_OR_NONE, "price_found": styles.USD_RATE,
                   "price_used": styles.USD_RATE, "prior_effect": "0.0000", "prior_pos_long": "0", "prior_pos": "0",
                   "util_expected": "0.0%", "util_low": "0.0%", "util_high": "0.0%"}


def _labels(ws: Worksheet, cached: CachedCells) -> None:
    """Column A: the inputs', helper rows' and results' labels (the cost's names the currency)."""
    for name, label, _ in (*INPUTS, METHOD):
        text(ws, f"A{ROW[name]}", label, styles.BOLD)
    for name in HELPERS:
        text(ws, f"A{ROW[name]}", _HELPER_LABELS[name])
    for fig, label, _ in FIGURES:
        for case in CASES:
            if fig == "usd":
                cached.formula(ws, f"A{ROW[f'{fig}_{case}']}", pieces.with_currency(f"Cost, {case}"),
                               f"Cost, {case} (USD)", font=styles.BOLD, fill=None)
            else:
                text(ws, f"A{ROW[f'{fig}_{case}']}", f"{label}, {case}", styles.BOLD)


def write(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable) -> None:
    """Inputs, helper rows, results and the chart; landscape, one page wide."""
    text(ws, "A1", "Scenarios: plans side by side", styles.TITLE)
    text(ws, "A2", 'Each column is a plan. Utilization "prior" gives low / expected / high from the published '
                   "runs like the plan (its own prior: the Budget sheet's Prior_ coefficients, Goodput) on the "
                   "device's 16-bit row; a "
                   "share gives one figure. Price: a number (USD per device-hour) or provider:plan[:offering] "
                   f"(plans: {', '.join(prices_sheet.PLANS)}; an offering of the Prices sheet, any case), "
                   "as --price on the command line.", styles.NOTE)
    text(ws, "A3", "Money in the Budget's currency (Currency, USD_rate). The chart draws the plans of columns "
                   f"B-{COLUMNS[len(PLANS) - 1]}, each named by its Plan cell.", styles.NOTE)
    text(ws, f"A{FIRST - 1}", "Inputs", styles.HEADING)
    text(ws, f"A{HELPER_FIRST - 1}", "Figures used below", styles.HEADING)
    text(ws, f"A{RESULT_FIRST}", "Results", styles.HEADING)
    text(ws, f"A{ROW['input_check']}", "Input check (the first refused input; blank: passes)", styles.BOLD)
    ws.row_dimensions[ROW["input_check"]].height = CHECK_HEIGHT
    text(ws, f"A{CHECK_FIRST}", "Input checks (calc's rules, in calc.budget's order)", styles.HEADING)
    for k, label in enumerate(CHECK_LABELS):
        text(ws, f"A{ROW[f'check_{k}']}", label).alignment = styles.WRAP
        if len(label) > LABEL_WIDTH:  # two lines
            ws.row_dimensions[ROW[f"check_{k}"]].height = 30
    _labels(ws, cached)
    for k, c in enumerate(COLUMNS):
        plan = PLANS[k] if k < len(PLANS) else None
        _column(ws, cached, c, plan, table)
    fmts = {**_HELPER_FORMATS, **{f"{fig}_{case}": fmt for fig, _, fmt in FIGURES for case in CASES}}
    for name, fmt in fmts.items():
        for c in COLUMNS:
            ws[f"{c}{ROW[name]}"].number_format = fmt
    _validation(ws)
    widths(ws, A=LABEL_WIDTH, **{c: 21 for c in COLUMNS})
    ws.row_dimensions[ROW["device"]].height = ws.row_dimensions[ROW["row_used"]].height = 30
    _chart(ws, cached)
    ws.row_breaks.append(Break(id=LAST + 1))  # the chart prints whole, on a page of its own
    ws.print_area = f"A1:K{LAST + 32}"
    landscape_fit_width(ws)
    ws.freeze_panes = f"B{FIRST}"
    ws.oddFooter.left.text = "Training budget scenarios, printed &D"


def _column(ws: Worksheet, cached: CachedCells, c: str, plan: tuple[Any, ...] | None,
            table: calc.DeviceTable) -> None:
    for (name, _, fmt), value in zip(INPUTS, plan or (None,) * len(INPUTS), strict=True):
        cell = style(ws[f"{c}{ROW[name]}"], fmt, styles.INPUT_FONT, styles.INPUT_FILL)
        cell.value, cell.protection, cell.border = value, styles.UNLOCKED, styles.BOX
        if isinstance(value, str):
            cell.data_type = "s"
        if name == "device":
            cell.alignment = styles.WRAP
    cell = style(ws[f"{c}{ROW['method']}"], None, styles.INPUT_FONT, styles.INPUT_FILL)  # blank: full
    cell.protection, cell.border = styles.UNLOCKED, styles.BOX
    want = expected(plan, table)
    for name, formula in formulas(c).items():
        bold = name.startswith(tuple(f for f, *_ in FIGURES)) and name not in HELPERS
        cell = cached.formula(ws, f"{c}{ROW[name]}", formula, want.get(name, ""), None,
                              styles.BOLD if bold else styles.BODY, styles.RESULT_FILL if bold else None)
        if name == "row_used":
            cell.alignment = styles.WRAP
        if name == "input_check":
            cell.font, cell.alignment = styles.ERROR_NOTE, styles.WRAP


def _validation(ws: Worksheet) -> None:
    device = DataValidation(type="list", formula1=native.NAMES, allow_blank=True)
    ws.add_data_validation(device)
    device.add(f"B{ROW['device']}:K{ROW['device']}")


COLOURS = ("1F3864", "C00000", "70AD47", "ED7D31", "7030A0", "00B0F0", "FFC000", "808080", "A5A5A5", "264478")
MARKERS = ("circle", "square", "triangle", "diamond", "x", "star", "circle", "square", "triangle", "diamond")


def _chart(ws: Worksheet, cached: CachedCells) -> None:
    """Cost against hours, one series per plan, named by its Plan cell (the legend says which plan is
    which): its low, expected and high points joined where the plan says "prior", one point else."""
    chart = ScatterChart()
    chart.title = "Cost against wall-clock hours, by plan (low - expected - high)"
    chart.style, chart.scatterStyle = 13, "lineMarker"
    chart.x_axis.title = "wall-clock hours (log scale)"
    chart.y_axis.title = "cost, Budget currency (log scale)"
    chart.x_axis.scaling.logBase = chart.y_axis.scaling.logBase = 10
    values = cached.values[ws.title]
    for k, c in enumerate(COLUMNS[:len(PLANS)]):  # the plans given (an empty column would be "Column I")
        col = 2 + k
        xs = Reference(ws, min_col=col, min_row=ROW["hours_low"], max_row=ROW["hours_high"])
        ys = Reference(ws, min_col=col, min_row=ROW["usd_low"], max_row=ROW["usd_high"])
        s = Series(ys, xs)
        s.tx = SeriesLabel(strRef=StrRef(f"'{ws.title}'!${c}${ROW['name']}",
                                         strCache=StrData(ptCount=1, pt=[StrVal(idx=0, v=PLANS[k][0])])))
        s.marker.symbol, s.marker.size = MARKERS[k], 8
        s.marker.graphicalProperties = GraphicalProperties(solidFill=COLOURS[k])
        s.graphicalProperties.line.solidFill = COLOURS[k]
        for ref, data in ((s.xVal.numRef, "hours"), (s.yVal.numRef, "usd")):
            pts = [values[f"{c}{ROW[f'{data}_{case}']}"] for case in CASES]
            ref.numCache = NumData(pt=[NumVal(idx=i, v=p) for i, p in enumerate(pts) if isinstance(p, (int, float))],
                                   ptCount=len(pts), formatCode="General")
        chart.series.append(s)
    chart.legend.position = "r"
    # openpyxl omits <c:delete val="0"/> unless told; Excel reads a missing one as a deleted axis.
    chart.x_axis.delete = chart.y_axis.delete = False
    chart.width, chart.height = 34, 16
    ws.add_chart(chart, f"A{LAST + 2}")


def write_sheets(wb: Workbook, cached: CachedCells, table: calc.DeviceTable) -> None:
    """The Prices and Scenarios sheets and the Prices names (the Budget must be written already)."""
    prices_sheet.write(wb.create_sheet("Prices"), cached)
    write(wb.create_sheet("Scenarios"), cached, table)
    prices_sheet.add_names(wb)
