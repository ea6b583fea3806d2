"""The Budget sheet: inputs, results in native formulas from the registry, a comparison of every
device for the same job, and a bar chart of its hours. Cached values come from calc."""

from __future__ import annotations

import math
from typing import Any

from openpyxl.chart import BarChart, Reference, Series
from openpyxl.chart.data_source import AxDataSource, NumData, NumVal, StrData, StrRef, StrVal
from openpyxl.chart.text import RichText
from openpyxl.drawing.text import CharacterProperties, Paragraph, ParagraphProperties, RichTextProperties
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import input_pieces, native, pieces
from ..functions.registry import BY_NAME
from . import (
    deadline_block,
    input_checks,
    model_block,
    prior_tables,
    range_basis,
    ranges_block,
    sheets,
    step_block,
    styles,
)
from .cached_cells import CachedCells, note_cell, style, text, widths

GB = calc.GB
# The default model is the architecture block's preset (model_block.PRESET), so the two agree.
DEFAULT_PARAMS = float(calc.model_preset(model_block.PRESET).params().total)
# name, label, default, number format, note. Row = position + FIRST_INPUT.
INPUTS: tuple[tuple[str, str, Any, str | None, str], ...] = (
    ("params", "Model parameters", DEFAULT_PARAMS, styles.COUNT, "the architecture below: Llama 3.1 8B"),
    ("active_params", "Active parameters (MoE)", None, styles.COUNT,
     "blank = all (dense); MoE: a token's, input embedding in (FLOPs, hours, prior); memory: all"),
    ("tokens", "Training tokens", 1e9, styles.COUNT, "compute-optimal is about 20 per parameter"),
    ("device", "Device", "H100 SXM, BF16 tensor core, dense", None,
     "a row of the Devices sheet; add your measured rates there"),
    ("utilization", "Utilization", 0.4, styles.PERCENT, ""),  # note: the Runs range, a formula
    ("devices", "Number of devices", 8, styles.COUNT, "devices training together"),
    ("usd_per_device_hour", "Price per device-hour (USD)", 2.5, styles.USD_RATE,
     "placeholder: your contract price; blank: the device row's price; a provider below wins"),
    ("pue", "PUE", 1.0, styles.RATIO, "data-centre overhead on device power; 1.0 if unknown"),
    ("method", "Fine-tuning method", "full", None, " | ".join(calc.METHODS)),
    ("optimizer", "Optimizer", "adamw", None, " | ".join(calc.OPTIMIZERS)),
    ("zero_stage", "ZeRO stage", 3, "0", "0-3: 3 shards weights, gradients and optimizer over the devices"),
    ("trainable", "LoRA trainable share", 0.01, "0.0%", "adapter parameters (lora/qlora only)"),
    ("activations", "Activations (GB per device)", 0.0, styles.GB, "0 = model states only"),
)
FIRST_INPUT = 5
REF = {name: f"$B${FIRST_INPUT + i}" for i, (name, *_) in enumerate(INPUTS)}
# Defined names of the inputs, so a result reads =6*Params*Tokens.
NAMES = {"params": "Params", "active_params": "Active_params", "tokens": "Tokens", "device": "Device",
         "utilization": "Utilization",
         "devices": "Devices_count", "usd_per_device_hour": "Price_per_hour", "pue": "PUE_ratio",
         "method": "Method", "optimizer": "Optimizer", "zero_stage": "ZeRO_stage", "trainable": "LoRA_share",
         "activations": "Activations_GB"}
# FLOPs, hours and the prior read the active parameters used (a helper row: blank input = Params).
EXPRS = {**NAMES, "activations": pieces.gb_to_bytes("Activations_GB"), "active_params": "Active_used"}
# calc/hardware/capacity.py's rule, for the usable-memory row and the devices-needed note
USABLE_WORDS = f"capacity less max({calc.RESERVE_GIB:g} GiB, {calc.RESERVE_SHARE:.0%})"
DEVICES_NEEDED_NOTE = f"counted against usable memory: {USABLE_WORDS}"
# Figures used by several results, each in a visible row with a name:
# (name, label, formula, number format).
HELPERS = (
    ("Active_used", "Active parameters used (blank: all)", pieces.active_used("Active_params", "Params"),
     styles.COUNT),
    ("Rate_TFLOPS", "Device rate (TFLOP/s)", native.lookup("Device", "tflops"), styles.TFLOPS),
    ("Memory_GiB", "Device memory (GiB)", native.lookup("Device", "memory_gib"), styles.GIB),
    ("Usable_GiB", "Usable memory (GiB), less reserve", native.fold.fold(native.usable_gib("Memory_GiB")),
     styles.GIB),
    ("Board_watts", "Device power (W)", pieces.or_text(native.lookup("Device", "watts"), pieces.NO_WATTS),
     '#,##0 "W"'),
    ("Trainable_params", "Trainable parameters", native.fold.fold(native.render(native.TRAINABLE, EXPRS)),
     styles.COUNT),
    # FLOPs, hours, cost and energy read it: 6 a full training step, 4 LoRA / QLoRA over frozen weights,
    # 2 inference's forward pass (calc.FLOPS_PER_PARAM_TOKEN)
    ("FLOPs_per_token", "FLOPs per parameter-token (the method's)", native.flops_per_param_token("Method"), "0"),
    # the every-device rows' numerator: one name, not the three factors (native.JOB_FLOPS)
    ("Job_FLOPs", "Job FLOPs (the three above times tokens)",
     native.job_flops({"active_params": "Active_used", "tokens": "Tokens",
                       "_flops_per_param_token": "FLOPs_per_token"}),
     styles.COUNT),
    ("Optimizer_bytes", "Optimizer bytes per trainable parameter", native.optimizer_bytes("Optimizer"),
     '0.0 "B"'),
)
HELPER_EXPRS = {"device:tflops": "Rate_TFLOPS", "device:memory_gib": "Memory_GiB", "_usable_gib": "Usable_GiB",
                "device:watts": "Board_watts", "_trainable": "Trainable_params",
                "_optimizer_bytes": "Optimizer_bytes", **ranges_block.FLOPS_HELPERS}
PART_NAMES = {part: f"{part.capitalize()}_GB" for part in native.PARTS}
COMPARE_SPARE = 10  # empty comparison rows for devices the user adds


ASSUMPTIONS = ("Assumptions: 6 FLOPs per active parameter-token (LoRA 4, inference 2); hours at the utilization"
               " above (dense peak); job memory in GB (1e9 B), device memory in GiB;"
               " cost = device-hours x price; energy = watts x device-hours x PUE. Sources: Devices, About.")
# The Results' cost: at the utilization typed above, not the cost to budget (the ranges' expected cost)
TYPED_COST = "Cost at typed utilization"
# The device chart: 25 cm tall at least, taller where its bars need it: each bar's 7-pt name in a box 1.2 times
# its size, the plot about 0.8 of the chart (title and hours axis the rest); rows of 15 pt below the comparison
CHART_CM, LABEL_PT, PLOT_SHARE, ROW_CM = 25.0, 7, 0.8, 15 * 2.54 / 72


def chart_cm(bars: int) -> float:
    """The chart's height in cm for `bars` devices (spare rows included)."""
    return max(CHART_CM, bars * LABEL_PT * 1.2 * 2.54 / 72 / PLOT_SHARE)


def write(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable) -> None:
    """Inputs, results, comparison and chart; the print area (the e-mail PDF) holds all of them,
    landscape, one page wide, with the date it was printed in the footer."""
    values = {name: default for name, _, default, *_ in INPUTS}
    text(ws, "A1", "Training budget", styles.TITLE)
    text(ws, "A2", "Type in the yellow cells. Results are native Excel formulas over the Devices "
                   "sheet: no add-in or macros needed.", styles.NOTE)
    text(ws, "A3", ASSUMPTIONS, styles.NOTE).alignment = styles.WRAP
    ws.merge_cells("A3:C3")  # printed within the detail's columns
    ws.row_dimensions[3].height = 27
    _inputs(ws, cached)
    for name, _label, *_ in INPUTS:
        ws.parent.defined_names[NAMES[name]] = DefinedName(NAMES[name], attr_text=f"'{ws.title}'!{REF[name]}")
    helpers_end = _helpers(ws, cached, table, values, FIRST_INPUT + len(INPUTS) + 1)
    _input_check(ws, table, values, helpers_end + 1, cached)
    last = ranges_block.write(ws, cached, table, values, _results(ws, cached, table, values, helpers_end + 2))
    detail_end = last = deadline_block.write(ws, cached, table, values, last)
    last = input_checks.write(ws, cached, last)  # the chain the Input check rows read
    compare_end = _compare(ws, cached, table, values, FIRST_INPUT - 1, max(last, 0))
    widths(ws, A=36, B=30, C=40, D=2, E=40, F=15, G=13, H=13, I=14, J=13, K=20)
    ws.print_area = f"A1:K{compare_end}"  # the blocks below start past the chart (model_block.first_free_row)
    model_block.write(ws, cached, table, values, REF["params"])  # architecture and layout, below all else
    step_block.write(ws, cached, table, values)  # the step on that layout, with its hardware table
    _prior_appendix(ws)
    _detail_pages(ws, detail_end)
    ws.oddFooter.left.text = "Training budget, printed &D"
    ws.oddFooter.right.text = "page &P of &N"
    ws.protection.sheet = True


DETAIL_PAGES = 2  # the Budget's printed detail, after the Summary's page


def _detail_pages(ws: Worksheet, last: int) -> None:
    """The printed detail: inputs, results, price, the prior's utilization, ranges and deadline (columns
    A-C down to the deadline), portrait, on DETAIL_PAGES pages. The input checks, the every-device
    comparison and its chart, the architecture and the prior's tables stay on the sheet, unprinted:
    the same landscape print, one page wide, as 11 columns made it shrink to about 5.5 pt."""
    ws.print_area = f"A1:C{last}"
    ws.page_setup.orientation = "portrait"
    ws.page_setup.fitToWidth, ws.page_setup.fitToHeight = 1, DETAIL_PAGES
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_margins.left = ws.page_margins.right = 0.5


def _prior_appendix(ws: Worksheet) -> None:
    """The prior's constants and tables after the architecture, outside the printed detail."""
    top = model_block.first_free_row(ws)
    ws.row_breaks.append(Break(id=top - 1))
    prior_tables.write(ws, top)


def _inputs(ws: Worksheet, cached: CachedCells) -> None:
    text(ws, f"A{FIRST_INPUT - 1}", "Inputs", styles.HEADING)
    for i, (_, label, default, fmt, note) in enumerate(INPUTS):
        r = FIRST_INPUT + i
        text(ws, f"A{r}", label)
        cell = style(ws[f"B{r}"], fmt, styles.INPUT_FONT, styles.INPUT_FILL)
        cell.value, cell.protection, cell.border = default, styles.UNLOCKED, styles.BOX
        note_cell(ws, f"C{r}", note)
    lo, hi = sheets.implied_range()
    cached.formula(ws, REF["utilization"].replace("$B$", "C"),
                   pieces.implied_note("Runs[[#Data],[Implied utilization]]"),
                   f"published runs imply {lo:.0%}-{hi:.0%} (Runs sheet)", font=styles.NOTE, fill=None)
    device = DataValidation(type="list", formula1="DeviceNames", allow_blank=False)
    ws.add_data_validation(device)
    device.add(REF["device"])
    input_checks.validate(ws, {NAMES[k]: REF[k] for k in NAMES}, input_checks.BUDGET_RULES)  # stop style


def _helpers(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable, v: dict[str, Any],
             first: int) -> int:
    """Named rows for figures several results use; returns the last row written."""
    text(ws, f"A{first}", "Figures used below", styles.HEADING)
    method_trainable = calc.train_memory(v["params"], method=v["method"], trainable=v["trainable"],
                                                optimizer="sgd", master=False)
    trainable = method_trainable.gradients / calc.GRAD_BYTES
    memory_gib = table.value(v["device"], "memory_gib")
    values = {"Active_used": v["params"] if v["active_params"] is None else v["active_params"],
              "Rate_TFLOPS": table.value(v["device"]), "Memory_GiB": memory_gib,
              "Usable_GiB": calc.usable_bytes_of(memory_gib) / calc.GIB,
              "Board_watts": pieces.NO_WATTS if table.get(v["device"]).watts is None else table.value(
                  v["device"], "watts"), "Trainable_params": trainable,
              "Optimizer_bytes": calc.OPTIMIZER_BYTES[v["optimizer"]],
              "FLOPs_per_token": calc.flops_per_param_token(v["method"]),
              "Job_FLOPs": ranges_block.budget(v, table).flops}  # the Budget's own FLOPs
    rows = [(name, label, formula, values[name], fmt) for name, label, formula, fmt in HELPERS]
    parts = ranges_block.budget(v, table, devices=1, zero_stage=0, activations=0.0).memory  # the whole job
    for part, (expr, _) in native.PARTS.items():
        rows.append((PART_NAMES[part], f"{part.capitalize()}, whole job (GB)",
                     pieces.in_gb(native.render(expr, {**EXPRS, **HELPER_EXPRS})), getattr(parts, part) / GB,
                     styles.GB))
    stage = v["zero_stage"]
    rows += [
        ("Sharded_GB", "Sharded over the devices (GB)", pieces.by_stage(PART_NAMES, "ZeRO_stage", sharded=True),
         sum(getattr(parts, p) for p, (_, s) in native.PARTS.items() if stage >= s) / GB, styles.GB),
        ("Whole_GB", "Held whole on every device (GB)", pieces.by_stage(PART_NAMES, "ZeRO_stage", sharded=False),
         sum(getattr(parts, p) for p, (_, s) in native.PARTS.items() if stage < s) / GB, styles.GB),
        ("Fixed_GB", "Held whole, with activations (GB)", pieces.total(["Whole_GB", "Activations_GB"]),
         sum(getattr(parts, p) for p, (_, s) in native.PARTS.items() if stage < s) / GB + v["activations"],
         styles.GB),
    ]
    for i, (name, label, formula, value, fmt) in enumerate(rows, start=first + 1):
        text(ws, f"A{i}", label)
        cached.formula(ws, f"B{i}", formula, value, fmt)
        ws.parent.defined_names[name] = DefinedName(name, attr_text=f"'{ws.title}'!$B${i}")
    return first + len(rows)


def _input_check(ws: Worksheet, table: calc.DeviceTable, v: dict[str, Any], row: int, cached: CachedCells) -> None:
    """The Input check row above the Results: Input_error, the first refusal of the Input checks
    (input_checks); cached "" as calc takes the template's inputs."""
    ranges_block.budget(v, table)  # calc takes the template's inputs (else it raises here)
    input_checks.check_row(ws, cached, row, "Input check (blank: all pass)", input_pieces.INPUT_ERROR)


def _results(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable, v: dict[str, Any],
             first: int) -> int:
    """Result rows: the registry's native formulas and the sheets' pieces over the named inputs and
    figures; returns the last row."""
    text(ws, f"A{first}", "Results", styles.HEADING)
    b = ranges_block.budget(v, table)  # the one composer: every cached figure below is b's
    mem_opts = {"method": v["method"], "optimizer": v["optimizer"], "trainable": v["trainable"]}
    per_device, hours = b.memory, float(b.hours)
    rows: list[tuple[str, str, Any, str]] = [
        ("Training compute (FLOPs)", _native("TRAIN_FLOPS"), float(b.flops), styles.FLOPS),
        ("Model states, whole job", pieces.total(list(PART_NAMES.values())),
         ranges_block.budget(v, table, devices=1, zero_stage=0, activations=0.0).memory.total / GB, styles.GB),
    ]
    for part in native.PARTS:
        rows.append((f"{part.capitalize()} per device",
                     pieces.per_device(PART_NAMES[part], part, "ZeRO_stage", "Devices_count"),
                     getattr(per_device, part) / GB, styles.GB))
    per_part = first + 3
    needed = {"_sharded_bytes": pieces.gb_to_bytes("Sharded_GB"),
              "_fixed_bytes": pieces.gb_to_bytes("Fixed_GB")}
    rows += [
        ("Activations per device", "Activations_GB", v["activations"], styles.GB),
        ("Total per device", pieces.total([f"B{r}" for r in range(per_part, per_part + len(native.PARTS) + 1)]),
         per_device.total / GB, styles.GB),
        ("Devices needed to fit", _native("TRAIN_DEVICES_NEEDED", helpers=needed),
         calc.devices_needed(v["params"], v["device"], zero_stage=v["zero_stage"],
                             activations=v["activations"] * GB, table=table, **mem_opts), styles.COUNT),
        ("Wall-clock hours", _native("TRAIN_HOURS"), hours, styles.HOURS),
    ]
    hours_row = first + len(rows)
    rows += [
        ("Days", pieces.days(f"B{hours_row}"), float(b.days), styles.DAYS),
        ("Device-hours", _native("TRAIN_GPU_HOURS"), float(b.device_hours), styles.DEVICE_HOURS),
        (TYPED_COST + " (USD)", pieces.money(pieces.cost(f"B{hours_row + 2}", "Price_used")),
         ranges_block.money(b.cost_usd),
         ranges_block.CURRENCY_FORMAT),
        ("Energy (kWh)", pieces.with_watts("Board_watts", _native("TRAIN_ENERGY_KWH")),
         pieces.NO_WATTS if b.energy_kwh is None else float(b.energy_kwh), styles.KWH),
    ]
    for i, (label, formula, value, fmt) in enumerate(rows, start=first + 1):
        if label == "Devices needed to fit":  # the reserve, said where the count is; the deadline reads it
            note_cell(ws, f"C{i}", DEVICES_NEEDED_NOTE)
            ws.parent.defined_names[input_pieces.DEVICES_NEEDED] = DefinedName(
                input_pieces.DEVICES_NEEDED, attr_text=f"'{ws.title}'!$B${i}")
        if label == "Wall-clock hours":  # what the headline leaves out, and a utilization the runs do not show
            note_cell(ws, f"C{i}", pieces.GOODPUT_NOTE)
            u, p = v["utilization"], range_basis.ranged(v, table).prior
            cached.formula(ws, f"C{i + 1}", pieces.band_note("Utilization", "Range_u_low", "Range_u_high"),
                           f"{u:.0%} is outside the ranges' {p.low:.0%}-{p.high:.0%} (below)"
                           if not p.low <= u <= p.high else "", font=styles.NOTE, fill=None)
        if label == TYPED_COST + " (USD)":  # money in the chosen currency (Currency, USD_rate: ranges_block)
            cached.formula(ws, f"A{i}", pieces.with_currency(TYPED_COST), label, font=styles.BOLD, fill=None)
            ws.parent.defined_names["Cost_typed"] = DefinedName("Cost_typed", attr_text=f"'{ws.title}'!$B${i}")
            cached.formula(ws, f"C{i}", pieces.price_note("Price_source"), "price: " + ranges_block.price(v, table)[1],
                           font=styles.NOTE, fill=None)
        else:
            text(ws, f"A{i}", label, styles.BOLD)
        cached.formula(ws, f"B{i}", input_pieces.unless_error(formula), value, fmt, styles.BOLD).border = styles.BOX
    return first + len(rows)


def _native(name: str, helpers: dict[str, str] | None = None, **fixed: str) -> str:
    """The registry's native formula for `name` over the named inputs and figures."""
    spec = BY_NAME[name]
    exprs = {**EXPRS, **fixed}
    return spec.native_formula({a.name: exprs[a.name] for a in spec.args if a.name in exprs},
                               blank_means_default=False, helpers={**HELPER_EXPRS, **(helpers or {})})


# device, TFLOP/s, hours, days, cost, price, whose price: beside the inputs
COMPARE_COLS = ("E", "F", "G", "H", "I", "J", "K")
COMPARE_HEADING = "Every device, the same job, at the typed utilization"  # its costs are what-ifs too
COMPARE_HEADERS = ("Device", "TFLOP/s", "Hours", "Days", "Cost (USD)", "Price (USD/h)", "Price from")


def _compare(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable, v: dict[str, Any],
             top: int, results_end: int) -> int:
    """Every Devices row on the same job: TFLOP/s, hours, days, cost at one price rule (the chosen
    device's row at the results' price, every other row at its own, else "no price"); a bar chart."""
    name_col, rate_col, hours_col, days_col, cost_col, price_col, whose_col = COMPARE_COLS
    text(ws, f"{name_col}{top}", COMPARE_HEADING, styles.HEADING)
    for col, header in zip(COMPARE_COLS, COMPARE_HEADERS, strict=True):
        style(ws[f"{col}{top + 1}"], font=styles.BOLD, fill=styles.HEADER_FILL).value = header
        ws[f"{col}{top + 1}"].alignment = styles.WRAP
    cached.formula(ws, f"{cost_col}{top + 1}", pieces.with_currency("Cost"), "Cost (USD)",
                   font=styles.BOLD, fill=styles.HEADER_FILL)
    devices = list(table)
    _, chosen_source = ranges_block.price(v, table)
    spec = BY_NAME["TRAIN_HOURS"]
    for k in range(1, len(devices) + COMPARE_SPARE + 1):
        r = top + 1 + k
        d = devices[k - 1] if k <= len(devices) else None
        name_ref = f"${name_col}{r}"
        # blank while an input or the currency rate is refused (Input_error, Rate_error): the row's
        # figures, which read the name, stay blank
        named = input_pieces.name_unless_error(pieces.nth_name(k), input_pieces.ANY_ERROR)
        cached.formula(ws, f"{name_col}{r}", named, d.name if d else "",
                       fill=None).alignment = styles.SHRINK  # a long device name shows whole, smaller
        exprs = {**EXPRS, "device": name_ref}
        chosen = d is not None and d.name.lower() == str(v["device"]).lower()
        # the chosen device's row: the results' own Budget; any other: at the row's own price
        row = (ranges_block.budget(v, table) if chosen else ranges_block.budget(
            v, table, device=d.name, price=None)) if d else None
        hours = float(row.hours) if row else ""
        own = pieces.own_price(name_ref)
        usd = row.usd_per_device_hour if row else None
        cells = (
            (rate_col, native.lookup(name_ref, "tflops"), table.value(d.name) if d else "", styles.TFLOPS),
            (hours_col, spec.native_formula({a.name: exprs[a.name] for a in spec.args}, blank_means_default=False,
                                            helpers={"device:tflops": f"{rate_col}{r}",
                                                     **ranges_block.FLOPS_HELPERS}), hours, styles.HOURS),
            (days_col, pieces.days(f"{hours_col}{r}"), float(row.days) if row else "", styles.DAYS),
            (price_col, pieces.compare_price(name_ref, "Device", "Price_used", own),
             (pieces.NO_PRICE if usd is None else usd) if d else "", styles.USD_RATE),
            (cost_col, pieces.cost(pieces.times(f"{hours_col}{r}", "Devices_count"), f"{price_col}{r}"),
             ranges_block.money(row.cost_usd) if row else "", ranges_block.CURRENCY_FORMAT),
            (whose_col, pieces.compare_source(name_ref, "Device", "Price_source", own),
             (chosen_source if chosen else pieces.ROW_PRICE if usd is not None else pieces.NO_PRICE) if d else "",
             None),
        )
        for col, formula, value, fmt in cells:
            cell = cached.formula(ws, f"{col}{r}", pieces.blank_if(name_ref, formula), value, fmt, fill=None)
            if col != name_col:  # figures right-aligned, "Price from" indented: each apart from its neighbour
                cell.alignment = styles.LEFT if col == whose_col else styles.RIGHT
    last = top + 1 + len(devices) + COMPARE_SPARE
    text(ws, f"{name_col}{last + 1}",
         "Cost at one price rule: the chosen device's row at the price the results use (Price from says "
         "whose); every other row at its own Devices price, else no price.", styles.NOTE)
    chart_top = max(last, results_end) + 3
    ws.row_breaks.append(Break(id=chart_top - 1))  # the chart prints whole, on a page of its own
    _chart(ws, cached, top + 2, last, f"A{chart_top}")
    return chart_top + math.ceil(chart_cm(last - top - 1) / ROW_CM) + 3  # the rows it covers, three to spare


def _chart(ws: Worksheet, cached: CachedCells, first: int, last: int, anchor: str) -> None:
    """Horizontal bars of hours by device (log scale) over the whole comparison, spare rows included
    (blank there: no bar on the log axis), so a Devices row added later is drawn; cached data for viewers that don't
    compute."""
    name_col, _, hours_col, *_ = COMPARE_COLS
    values = cached.values[ws.title]
    names = [values[f"{name_col}{r}"] for r in range(first, last + 1)]
    hours = [values[f"{hours_col}{r}"] for r in range(first, last + 1)]
    col = ws[f"{hours_col}1"].column
    series = Series(Reference(ws, min_col=col, min_row=first, max_row=last), title="Hours")
    series.val.numRef.numCache = NumData(pt=[NumVal(idx=i, v=h) for i, h in enumerate(hours)
                                             if isinstance(h, (int, float))],
                                         ptCount=len(hours), formatCode="General")
    series.cat = AxDataSource(strRef=StrRef(
        f=f"'{ws.title}'!${name_col}${first}:${name_col}${last}",
        strCache=StrData(ptCount=len(names), pt=[StrVal(idx=i, v=n) for i, n in enumerate(names) if n])))
    chart = BarChart()
    chart.type, chart.style, chart.legend = "bar", 10, None
    chart.title = "Wall-clock hours for this job, by device (log scale)"
    chart.y_axis.scaling.logBase = 10
    chart.y_axis.title = "hours"
    chart.x_axis.scaling.orientation = "maxMin"  # first device at the top
    # openpyxl omits <c:delete val="0"/> unless told, and Excel reads a missing one as a deleted
    # axis (no device names, no hours scale); LibreOffice draws them either way.
    chart.x_axis.delete = chart.y_axis.delete = False
    # every device's name, at 7 pt so one fits each bar: Excel and LibreOffice otherwise skip labels that overlap
    chart.x_axis.tickLblSkip = 1
    chart.x_axis.txPr = RichText(bodyPr=RichTextProperties(), p=[Paragraph(
        pPr=ParagraphProperties(defRPr=CharacterProperties(sz=LABEL_PT * 100)), r=[],
        endParaRPr=CharacterProperties(sz=LABEL_PT * 100))])
    chart.y_axis.crosses = "max"  # the hours scale at the bottom, below the last (reversed) category
    chart.y_axis.axPos = "b"  # as Excel writes a horizontal bar chart: values along the bottom
    chart.series.append(series)
    chart.width, chart.height = 34, chart_cm(last - first + 1)
    ws.add_chart(chart, anchor)
