"""The template's supporting sheets: Devices, Runs, Functions, About and xlwings.conf."""

from __future__ import annotations

from typing import Any

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.table import Table, TableStyleInfo
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import native, pieces
from ..functions.registry import BY_NAME, FUNCTIONS
from . import styles
from .cached_cells import CachedCells, fit_rows, landscape_fit_width, style, text, widths

UDF_MODULE = "trainbudget.addin.udf.udfs"
DEVICE_FORMATS = {"tflops": styles.TFLOPS, "memory_gib": '#,##0 "GiB"', "memory_tbps": '0.00 "TB/s"',
                  "watts": '#,##0 "W"', "usd_per_device_hour": styles.USD_RATE}
NEEDS_ADDIN = "needs the add-in"
# Number format of a Functions-sheet result, by the registry's unit ("table" shows the Hours row):
# plain numbers, as the Unit column beside them names the unit (no "kWh kWh").
UNIT_FORMATS = {"FLOPs": styles.FLOPS, "bytes": styles.FLOPS, "tokens": styles.FLOPS, "hours": "#,##0.0",
                "table": "#,##0.0", "device-hours": "#,##0", "USD": "#,##0", "kWh": "#,##0",
                "devices": styles.COUNT, "TFLOP/s": "#,##0.0",
                "USD per device-hour": styles.USD_RATE, "parameters": styles.FLOPS, "seconds": "#,##0.00",
                "fraction, 0-1": "0.0%"}


def _table(ws: Worksheet, name: str, ref: str) -> None:
    table = Table(displayName=name, ref=ref)
    table.tableStyleInfo = TableStyleInfo(name="TableStyleMedium2", showRowStripes=True)
    ws.add_table(table)


def write_devices(ws: Worksheet, table: calc.DeviceTable) -> None:
    """The Devices table: one row per rate; users add their measured rows at the bottom."""
    fields = list(native.HEADERS)
    for col, field in enumerate(fields, start=1):
        style(ws.cell(1, col, native.HEADERS[field]), font=styles.BOLD)
    for row, device in enumerate(table, start=2):
        for col, field in enumerate(fields, start=1):
            cell = ws.cell(row, col)
            cell.value = getattr(device, field)
            if isinstance(cell.value, str):
                cell.data_type = "s"  # a name starting with '=' stays text
            style(cell, DEVICE_FORMATS.get(field))
            cell.alignment = styles.WRAP  # every cell top-aligned, long texts wrapped
    last = ws.cell(len(table) + 1, len(fields)).coordinate
    _table(ws, native.TABLE, f"A1:{last}")
    widths(ws, A=34, B=14, C=9, D=13, E=15, F=11, G=12, H=9, I=12, J=44, K=10, L=36)
    for col in range(1, len(fields) + 1):
        ws.cell(1, col).alignment = styles.WRAP
    ws.freeze_panes = "B2"
    ws.print_title_rows = "1:1"
    fit_rows(ws)
    landscape_fit_width(ws)


RUN_COLUMNS = (("Run", 14, None), ("Params", 9, styles.BILLIONS), ("Active params", 9, styles.BILLIONS),
               ("Tokens", 9, styles.TRILLIONS), ("Device", 24, None),
               ("Device-hours (reported)", 17, styles.DEVICE_HOURS), ("FLOPs (reported)", 12, styles.FLOPS),
               ("MFU (reported)", 9, styles.PERCENT), ("Hours scope", 11, None),
               ("Implied utilization", 11, styles.PERCENT),
               ("Device-hours at reported MFU", 17, styles.DEVICE_HOURS), ("Source", 44, None))


def write_runs(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable | None = None) -> None:
    """Published runs with the utilization they imply, in native formulas over the Devices table."""
    gpu_hours = BY_NAME["TRAIN_GPU_HOURS"]
    for col, (header, width, _) in enumerate(RUN_COLUMNS, start=1):
        style(ws.cell(1, col, header), font=styles.BOLD).alignment = styles.WRAP
        ws.column_dimensions[ws.cell(1, col).column_letter].width = width
    for r, run in enumerate(calc.load_runs(), start=2):
        raw = (run.run, run.params, run.active_params, run.tokens, run.device, run.device_hours,
               run.reported_flops, run.reported_mfu, run.hours_scope)
        for col, value in enumerate(raw, start=1):
            style(ws.cell(r, col, value), RUN_COLUMNS[col - 1][2]).alignment = styles.WRAP
        text(ws, f"L{r}", run.source).alignment = styles.WRAP
        for col in "JK":
            ws[f"{col}{r}"].alignment = styles.WRAP
        exprs = {"params": pieces.first_given(f"C{r}", f"B{r}"), "tokens": f"D{r}", "device": f"E{r}", "devices": "1"}
        at_peak = gpu_hours.native_formula({**exprs, "utilization": "1"})
        at_mfu = gpu_hours.native_formula({**exprs, "utilization": f"H{r}"})
        cached.formula(ws, f"J{r}", pieces.blank_if(f"F{r}", pieces.ratio(at_peak, f"F{r}")),
                       _blank(calc.implied_utilization(run, table)), styles.PERCENT)
        cached.formula(ws, f"K{r}", pieces.blank_if(f"H{r}", at_mfu),
                       _blank(calc.predicted_device_hours(run, table)), styles.DEVICE_HOURS)
    _table(ws, "Runs", f"A1:L{len(calc.load_runs()) + 1}")
    ws.freeze_panes = "B2"
    fit_rows(ws)
    landscape_fit_width(ws)
    ws.protection.sheet = True


def _blank(value: float | None) -> Any:
    return "" if value is None else value


def implied_range() -> tuple[float, float]:
    """The lowest and highest implied whole-run utilization of the published runs."""
    found = [u for run in calc.load_runs() if (u := calc.implied_utilization(run)) is not None]
    return min(found), max(found)


def write_functions(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable) -> None:
    """One example per Excel function: the add-in call and its native equivalent, side by side."""
    headers = ("Function", "What it returns", "Example (add-in formula)", "With the add-in",
               "Native equivalent (no add-in)", "Unit")
    for col, header in enumerate(headers, start=1):
        style(ws.cell(1, col, header), font=styles.BOLD, fill=styles.HEADER_FILL).alignment = styles.WRAP
    for r, spec in enumerate(FUNCTIONS, start=2):
        call = f"{spec.name}({','.join(spec.example)})"
        result = spec.call(spec.example_values, table)
        text(ws, f"A{r}", spec.name, styles.BOLD)
        text(ws, f"B{r}", spec.summary).alignment = styles.WRAP
        text(ws, f"C{r}", "=" + call).alignment = styles.WRAP
        unit = spec.unit
        if isinstance(result, list):  # a spilling table: show its Hours row (the step's: its first, the seconds)
            labels = [label for label, _ in result]
            label = "Hours" if "Hours" in labels else labels[0]
            row = labels.index(label) + 1
            first, shown = result[row - 1][1], pieces.cell_of_table(call, row, 2)
            unit = f"{'hours' if label == 'Hours' else label} (row {row} of the {spec.unit})"
        else:
            first, shown = result, call
        fmt = UNIT_FORMATS[spec.unit]
        cached.formula(ws, f"D{r}", pieces.or_text(shown, NEEDS_ADDIN), first, fmt).alignment = styles.WRAP
        if spec.native is None:
            text(ws, f"E{r}", "no native equivalent: the e-mail export freezes it to its values").alignment = (
                styles.WRAP)
        else:
            cached.formula(ws, f"E{r}", spec.native_formula(spec.example_exprs), first, fmt).alignment = (
                styles.WRAP)
        text(ws, f"F{r}", unit).alignment = styles.WRAP
        ws[f"A{r}"].alignment = styles.WRAP
        text(ws, f"G{r}", "=" + spec.native_formula(spec.example_exprs) if spec.native else "").alignment = (
            styles.WRAP)
    text(ws, "G1", "Native formula, as text", styles.BOLD).fill = styles.HEADER_FILL
    names = max(len(spec.name) for spec in FUNCTIONS) + 3  # the longest name on one line, in bold
    widths(ws, A=max(24, names), B=36, C=36, D=16, E=16, F=12, G=60)
    fit_rows(ws)
    landscape_fit_width(ws)
    ws.protection.sheet = True


ABOUT = [
    ("TrainingBudget", styles.TITLE),
    ("Training budgets are bytes and FLOPs: can we train this, on what, for how long, at what cost?", None),
    ("", None),
    ("Assumptions and units", styles.HEADING),
    ("Compute: 6 FLOPs per parameter per token for a full training step (Kaplan et al. 2020,"
     " arXiv:2001.08361, §2.1); 4 for LoRA and QLoRA, whose frozen weights get no weight gradients"
     " (Hu et al. 2021, arXiv:2106.09685, §4.2); 2 for inference, a forward pass alone.", None),
    ("Memory: 16 bytes per parameter for bf16 weights and gradients with fp32 Adam states and master"
     " copy (ZeRO, arXiv:1910.02054, §3.1); ZeRO stages 1-3 shard them over the devices (§5).", None),
    ("Hours = FLOPs / (TFLOP/s x 1e12 x utilization x devices) / 3600. Vendor rates are dense peaks"
     " (sparsity figures halved); the published runs imply {implied} of them (Runs sheet), and the"
     " Budget sheet's prior predicts each job's own share from those runs.", None),
    ("Device memory is a capacity in GiB (2^30 bytes): a vendor's \"80GB\" of HBM is 80 GiB. GB means"
     " 1e9 bytes and appears only where a label says GB (memory the job needs). Cost = device-hours x"
     " the price (Price from says whose). Energy = watts x device-hours x PUE / 1000.", None),
    ("Every device row carries its source and the date it was read (Devices sheet).", None),
    ("", None),
    ("How to use it", styles.HEADING),
    ("Everywhere (Windows, Mac, the web, LibreOffice; macros blocked is fine): type in the yellow cells"
     " of the Budget sheet. Its formulas are native Excel (INDEX/MATCH over the Devices table).", None),
    ("Windows with Python, so that =TRAIN_HOURS(...) and the other functions (Functions sheet) work in"
     " any cell: 1. in a command prompt, pip install trainbudget (from a checkout: pip install -e .) into"
     " the Python that Excel should use; 2. run: xlwings addin install; 3. in Excel: File > Options >"
     " Trust Center > Trust Center Settings > Macro Settings, tick 'Trust access to the VBA project"
     " object model'; 4. open TrainingBudget.xlsm (not the e-mail copy), xlwings tab > Import Functions;"
     " 5. press Ctrl+Alt+F9 to recalculate every cell.", None),
    ("Measured rates: run `trainbudget measure --into TrainingBudget.xlsm` on the machine, or add a"
     " row to the Devices table by hand (kind 'measured', with a source). Every formula and the"
     " device list pick it up.", None),
    ("Before e-mailing: `trainbudget export TrainingBudget.xlsm --out budget.xlsx --pdf budget.pdf`"
     " makes a macro-free copy whose numbers show in Protected View, previews and on phones.", None),
    ("", None),
    ("Workbook flavour", styles.HEADING),
    ("TrainingBudget.xlsm is the add-in flavour: its VBA project is xlwings' quickstart.xlsm project, which"
     " refers to the xlwings add-in, without xlwings' sample macro (Module1): it holds no code of its own,"
     " only the sheet modules, until Import Functions adds xlwings_udfs. The standalone"
     " flavour would embed xlwings' VBA modules instead (no add-in install) but ties the file to one"
     " exact xlwings version. The e-mail copy (`trainbudget export`, an .xlsx) has no VBA project and no"
     " macros at all: every figure in it is a native formula or a value.", None),
]


ABOUT_WIDTH = 100


def write_about(ws: Worksheet) -> None:
    """Assumptions, units, sources, and how to use the workbook on each platform."""
    lo, hi = implied_range()
    for r, (template, font) in enumerate(ABOUT, start=1):
        line = template.replace("{implied}", f"{lo:.0%}-{hi:.0%}")
        cell = text(ws, f"A{r}", line, font or styles.BODY)
        cell.alignment = styles.WRAP
        ws.row_dimensions[r].height = _height(line, ABOUT_WIDTH, 22 if font is styles.TITLE else 15)
    top = len(ABOUT) + 2
    text(ws, f"A{top}", "Optimizer state per trainable parameter (the Optimizers table; Budget reads it)",
         styles.HEADING)
    for col, header in enumerate(native.OPTIMIZER_HEADERS, start=1):
        style(ws.cell(top + 1, col, header), font=styles.BOLD)
    for r, (name, nbytes) in enumerate(calc.OPTIMIZER_BYTES.items(), start=top + 2):
        text(ws, f"A{r}", name)
        style(ws.cell(r, 2, nbytes), '0.0 "B"')
        text(ws, f"C{r}", native.OPTIMIZER_SOURCES[name])
    _table(ws, native.OPTIMIZER_TABLE, f"A{top + 1}:C{top + 1 + len(calc.OPTIMIZER_BYTES)}")
    widths(ws, A=ABOUT_WIDTH, B=20, C=60)
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth, ws.page_setup.fitToHeight = 1, 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.protection.sheet = True


def _height(line: str, width: float, line_height: float) -> float:
    """Row height (points) that shows `line` wrapped in a column `width` characters wide."""
    per_line = width * 1.05  # Calibri 11 fits about one character per width unit
    return line_height * max(1, -(-len(line) // int(per_line))) + 3


def write_conf(ws: Worksheet) -> None:
    """xlwings' settings sheet, enabled (no leading underscore), hidden, with the one row the add-in
    needs: a present row overrides the user's own add-in settings (interpreter, conda, PYTHONPATH),
    so the quickstart's rows with empty or placeholder values are removed."""
    ws.title = "xlwings.conf"
    ws.delete_rows(1, ws.max_row)
    ws.cell(1, 1, "UDF Modules")
    ws.cell(1, 2, UDF_MODULE)
    ws.sheet_state = "hidden"


def add_names(wb: Workbook) -> None:
    """DeviceNames: the Devices table's names, the Budget dropdown's list source."""
    wb.defined_names["DeviceNames"] = DefinedName("DeviceNames", attr_text=f"{native.TABLE}[Name]")
