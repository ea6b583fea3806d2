"""The Summary sheet: page 1 of the printed budget, the page a finance reader signs.

It reads the Budget's defined names only (the ranges' Cost_expected / Cost_low / Cost_high, Hours_*,
Fleet_hours_* (device-hours), Energy_*, the typed utilization's Cost_typed, Util_*, Goodput, Price_used,
Price_date, Prior_basis): one sentence for the job, ONE cost to budget (the expected cost, with the published runs'
low-high band), what it would be at the typed utilization, hours, days, devices, energy, what it assumes
and a signature block. Portrait, 100% scale, narrow enough for one A4 or Letter page (fonts 9 pt and up).
Every formula is native and carries calc's value (ranges_block.budget, the Budget's own composer).
"""

from __future__ import annotations

from typing import Any

from openpyxl.styles import Border, Font, Side
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import input_pieces, native, pieces
from . import budget_sheet, prices_sheet, range_basis, ranges_block, styles
from .cached_cells import CachedCells, style, text, widths

TITLE = "Training budget: summary for sign-off"
FIGURE = Font(name=styles.FONT, size=12, bold=True)  # the cost to budget
SMALL = Font(name=styles.FONT, size=9)  # the basis lines under a figure (>= 8 pt printed: a note)
# A job's method in the summary's sentence (the CLI's words, emit.METHOD_WORDS, capitalised)
METHOD_WORDS = {"full": "Training of all weights", "lora": "LoRA fine-tune", "qlora": "QLoRA fine-tune",
                "inference": "Inference"}
# (name prefix, label, number format) of the table's rows: expected, low, high across
TABLE = (("Hours", "Wall-clock hours", styles.HOURS), ("Days", "Days", '#,##0.0 "days"'),
         ("Fleet_hours", "Device-hours", styles.DEVICE_HOURS), ("Energy", "Energy (kWh)", styles.KWH))
BAND_NOTE = ("Budget the expected cost. Low and high: the fast and slow edges of what published runs like "
             "this job reached (the runs' utilization band, below); hours and cost scale with 1 / utilization.")
STEP_BAND_NOTE = ("Budget the expected cost. Low and high: the step time's band (p10-p90 of the step model's errors "
                  "on measured layouts) and goodput's spread over published whole runs (below).")
TYPED_NOTE = "the Budget's Results at the utilization typed there: a what-if, not the cost to budget"
# calc.GOODPUT_BASIS in two lines (the Budget's Goodput row carries it whole)
GOODPUT_NOTE = "published runs' whole-run against steady-state hours (the Budget sheet's Ranges)"
SPACER = 8  # points: the gap before a heading
SIGN = ("Approved by (name, role)", "Signature", "Date")
WIDTHS = {"A": 38, "B": 15, "C": 15, "D": 15}


def count_words(ref: str) -> str:
    """A count as the sentence writes it: 8.0B, 1.0T, 350.0M, 12,000 (the TEXT codes the sheet uses)."""
    r = native.wrap(ref)
    return (f'IF({r}>=1E12,TEXT({r}/1E12,"#,##0.0")&"T",IF({r}>=1E9,TEXT({r}/1E9,"#,##0.0")&"B",'
            f'IF({r}>=1E6,TEXT({r}/1E6,"#,##0.0")&"M",TEXT({r},"#,##0"))))')


def count_text(n: float) -> str:
    """count_words' text for `n`, computed here for the cached value."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if n >= scale:
            return f"{n / scale:,.1f}{suffix}"
    return f"{n:,.0f}"


def sentence() -> str:
    """The job in one sentence, from the Budget's inputs; an input's refusal instead while one is refused."""
    method = 'IF(Method="lora","{lora}",IF(Method="qlora","{qlora}",IF(Method="inference","{inference}",' \
             '"{full}")))'.format(**METHOD_WORDS)
    moe = f'IF(Active_used<Params," ("&{count_words("Active_used")}&" active per token)","")'
    body = (f'{method}&" of a model of "&{count_words("Params")}&" parameters"&{moe}&" on "&{count_words("Tokens")}'
            f'&" tokens, "&Devices_count&" x "&Device&", ZeRO stage "&ZeRO_stage&", "&Optimizer&"."')
    return input_pieces.unless_error(body)


def sentence_text(v: dict[str, Any]) -> str:
    """sentence()'s text for the Budget's inputs `v`."""
    active = v["params"] if v["active_params"] is None else v["active_params"]
    moe = f" ({count_text(active)} active per token)" if active < v["params"] else ""
    return (f"{METHOD_WORDS[v['method']]} of a model of {count_text(v['params'])} parameters{moe} on "
            f"{count_text(v['tokens'])} tokens, {v['devices']:g} x {v['device']}, ZeRO stage {v['zero_stage']}, "
            f"{v['optimizer']}.")


def iso(ref: str) -> str:
    """A date cell as yyyy-mm-dd in any locale (TEXT's date codes are the locale's: yyyy is JJJJ in German)."""
    return f'YEAR({ref})&"-"&TEXT(MONTH({ref}),"00")&"-"&TEXT(DAY({ref}),"00")'


def price_words() -> str:
    """Whose price the costs use, with its date: the provider's newest row, else the Budget's date of prices
    (a typed price), else the Devices row's As of."""
    row_date = f'IFERROR({pieces.field("Device", "as_of")},"")'
    return (f'Price_source&IF(Provider<>"",IF(Price_date>0,", as of "&{iso("Price_date")},""),'
            f'IF(ISNUMBER(Price_per_hour),", as of "&{iso("Rate_date")},IF({row_date}="","",", as of "&{row_date})))')


def price_text(v: dict[str, Any], table: calc.DeviceTable) -> str:
    """price_words() for the template's inputs (no provider)."""
    _, source = ranges_block.price(v, table)
    if isinstance(v.get("usd_per_device_hour"), (int, float)):
        return f"{source}, as of {prices_sheet.budget_date().isoformat()}"
    as_of = table.get(v["device"]).as_of
    return f"{source}, as of {as_of}" if as_of else source


def _money(ws: Worksheet, cached: CachedCells, ref: str, name: str, value: Any, font: Font) -> None:
    cell = cached.formula(ws, ref, name, value, ranges_block.CURRENCY_FORMAT, font)
    cell.border, cell.alignment = styles.BOX, styles.RIGHT


def _note(ws: Worksheet, row: int, value: str, cached: CachedCells | None = None, formula: str | None = None,
          lines: int = 1, cols: str = "A:D") -> None:
    """A wrapped 9-point line over `cols` (a text, or a formula with its cached text)."""
    first, last = cols.split(":")
    if formula is None:
        cell = text(ws, f"{first}{row}", value, styles.NOTE)
    else:
        cell = cached.formula(ws, f"{first}{row}", formula, value, font=styles.NOTE, fill=None)
    cell.alignment = styles.WRAP
    ws.merge_cells(f"{first}{row}:{last}{row}")
    ws.row_dimensions[row].height = 12 * lines + 3


def write(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable) -> None:
    """The summary from the Budget's defaults (cached values from calc), one portrait page."""
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    ranged = range_basis.ranged(v, table)
    typed = ranges_block.budget(v, table)
    widths(ws, **WIDTHS)
    text(ws, "A1", TITLE, styles.TITLE)
    cell = cached.formula(ws, "A2", sentence(), sentence_text(v), font=styles.BOLD, fill=None)
    cell.alignment = styles.WRAP
    ws.merge_cells("A2:D2")
    ws.row_dimensions[2].height = 33
    r = _figures(ws, cached, ranged, typed, v, 4)
    r = _job(ws, cached, typed, v, r + 1)
    r = _assumptions(ws, cached, ranged, v, table, r + 2)
    _signature(ws, r + 1)
    for row in range(3, ws.max_row):  # the empty rows before each heading: a small gap
        if all(c.value is None for c in ws[row]):  # a merged range's first cell holds its text
            ws.row_dimensions[row].height = SPACER
    _page(ws)


def _figures(ws: Worksheet, cached: CachedCells, b: calc.Budget, typed: calc.Budget, v: dict[str, Any],
             r: int) -> int:
    """Cost to budget, the band, hours, days, device-hours, energy; the typed utilization's cost."""
    text(ws, f"A{r}", "What to budget", styles.HEADING)
    for col, head in zip("BCD", ("Expected", "Low", "High"), strict=True):
        style(ws[f"{col}{r + 1}"], font=styles.BOLD, fill=styles.HEADER_FILL).value = head
        ws[f"{col}{r + 1}"].alignment = styles.RIGHT
    cost = r + 2
    cached.formula(ws, f"A{cost}", f'"{ranges_block.COST_TO_BUDGET}, "&Currency',
                   f"{ranges_block.COST_TO_BUDGET}, USD", font=FIGURE, fill=None)
    spans = {"Hours": b.hours, "Days": b.days, "Fleet_hours": b.device_hours, "Energy": b.energy_kwh}
    for col, case, j in (("B", "expected", 1), ("C", "low", 0), ("D", "high", 2)):
        _money(ws, cached, f"{col}{cost}", ranges_block.range_name("usd", case),
               ranges_block.money(None if b.cost_usd is None else b.cost_usd.as_tuple()[j]),
               FIGURE if case == "expected" else styles.BOLD)
        for k, (name, _, fmt) in enumerate(TABLE, start=cost + 1):
            span = spans[name]
            value = (pieces.NO_WATTS if span is None else float(span.as_tuple()[j]))
            formula = (f'IF(ISNUMBER(Hours_{case}),Hours_{case}/24,Hours_{case})' if name == "Days"
                       else f"{name}_{case}")
            cached.formula(ws, f"{col}{k}", formula, value, fmt, fill=None).alignment = styles.RIGHT
    for k, (_, label, _) in enumerate(TABLE, start=cost + 1):
        text(ws, f"A{k}", label)
    r = cost + len(TABLE) + 1
    step = range_basis.step_applies(v)
    _note(ws, r, STEP_BAND_NOTE if step else BAND_NOTE, cached,
          pieces.either(range_basis.STEP_CHOSEN, *map(native.fold.literal, (STEP_BAND_NOTE, BAND_NOTE))), lines=2)
    typed_label = f'"{budget_sheet.TYPED_COST} ("&TEXT(Utilization,"0%")&"), "&Currency'
    cached.formula(ws, f"A{r + 2}", typed_label, f"{budget_sheet.TYPED_COST} ({v['utilization']:.0%}), USD",
                   fill=None).alignment = styles.TOP
    _money(ws, cached, f"B{r + 2}", "Cost_typed", ranges_block.money(typed.cost_usd), styles.BODY)
    ws[f"B{r + 2}"].alignment = styles.TOP_RIGHT
    _note(ws, r + 2, TYPED_NOTE, lines=2, cols="C:D")
    return r + 3


def _job(ws: Worksheet, cached: CachedCells, b: calc.Budget, v: dict[str, Any], r: int) -> int:
    """Devices, the model, the tokens and the devices needed to hold the model states."""
    text(ws, f"A{r}", "The job", styles.HEADING)
    rows = (("Devices training together", "Devices_count", v["devices"], styles.COUNT, "Device", v["device"]),
            ("Model parameters", "Params", v["params"], styles.COUNT, None, None),
            ("Training tokens", "Tokens", v["tokens"], styles.COUNT, None, None),
            ("Devices needed to hold the model states", input_pieces.DEVICES_NEEDED,
             calc.devices_needed(v["params"], v["device"], zero_stage=v["zero_stage"],
                                 activations=v["activations"] * calc.GB, table=b.job.cluster.table, method=v["method"],
                                 optimizer=v["optimizer"], trainable=v["trainable"]), styles.COUNT, None, None))
    for i, (label, name, value, fmt, beside, said) in enumerate(rows, start=r + 1):
        text(ws, f"A{i}", label)
        cached.formula(ws, f"B{i}", name, value, fmt, fill=None).alignment = styles.RIGHT
        if beside:
            cell = cached.formula(ws, f"C{i}", beside, said, fill=None)
            cell.alignment = styles.SHRINK
            ws.merge_cells(f"C{i}:D{i}")
    return r + len(rows) + 1


def _assumptions(ws: Worksheet, cached: CachedCells, b: calc.Budget, v: dict[str, Any], table: calc.DeviceTable,
                 r: int) -> int:
    """Utilization (expected, low, high) and its basis, goodput, the typed utilization, price, PUE."""
    p = b.prior
    text(ws, f"A{r}", "What it assumes", styles.HEADING)
    words = ("Utilization from the step model, each case", "Utilization from published runs, each case")
    step = range_basis.step_applies(v)
    label = pieces.either(range_basis.STEP_CHOSEN, *map(native.fold.literal, words))
    cached.formula(ws, f"A{r + 1}", label, words[not step], fill=None)
    # the low cost is the fast case (the band's high utilization), the high cost the slow one
    for col, case in (("B", "expected"), ("C", "high"), ("D", "low")):
        cell = cached.formula(ws, f"{col}{r + 1}", f"Range_u_{case}", getattr(p, case), "0.0%", fill=None)
        cell.alignment = styles.RIGHT
    prior_words = ranges_block.budget(v, table, utilization="prior").prior.basis + _caveat(v)
    _note(ws, r + 2, range_basis.range_basis_text(v, table, prior_words), cached, range_basis.range_basis(),
          lines=3)
    rows = (("Goodput (share of wall-clock time training)", "Range_goodput", float(b.goodput), "0%", GOODPUT_NOTE),
            ("Utilization typed on the Budget (what-if)", "Utilization", v["utilization"], "0%",
             "for the what-if cost above; the cost to budget uses the ranges' (Budget: Ranges from)"),
            ('Price per device-hour (USD)', "Price_used", ranges_block.price(v, table)[0], styles.USD_RATE, None),
            ("PUE (energy)", "PUE_ratio", v["pue"], styles.RATIO, "data-centre overhead on device power"))
    k = r + 3
    for label, name, value, fmt, note in rows:
        text(ws, f"A{k}", label).alignment = styles.TOP
        cached.formula(ws, f"B{k}", name, value, fmt, fill=None).alignment = styles.TOP_RIGHT
        if name == "Price_used":
            _note(ws, k, price_text(v, table), cached, price_words(), lines=2, cols="C:D")
        else:
            _note(ws, k, note, lines=2, cols="C:D")
        k += 1
    return k


def _caveat(v: dict[str, Any]) -> str:
    """The method's words on the prior (the Budget's Prior_caveat row, which its basis line ends with)."""
    return calc.PRIOR_CAVEATS.get(calc.flops_per_param_token(v["method"]), "")


def _signature(ws: Worksheet, r: int) -> None:
    text(ws, f"A{r}", "Sign-off", styles.HEADING)
    line = Border(bottom=Side(style="thin", color="000000"))
    for i, label in enumerate(SIGN, start=r + 1):
        text(ws, f"A{i}", label)
        ws.row_dimensions[i].height = 24
        ws[f"A{i}"].alignment = styles.BOTTOM
        for col in "BCD":
            ws[f"{col}{i}"].border = line
    _note(ws, r + len(SIGN) + 1, "Every figure is a native formula over the Budget sheet, whose pages follow "
                                 "(inputs, results, price, the ranges' utilization, ranges, deadline).",
          lines=2)
    ws.print_area = f"A1:D{r + len(SIGN) + 1}"


def _page(ws: Worksheet) -> None:
    """Portrait, 100%, one page: the columns (83 characters) fit A4's and Letter's width at the margins below."""
    ws.page_setup.orientation = "portrait"
    ws.page_setup.scale = 100
    ws.page_margins.left = ws.page_margins.right = 0.6
    ws.page_margins.top = ws.page_margins.bottom = 0.7
    ws.print_options.horizontalCentered = True
    ws.oddFooter.left.text = "Training budget, printed &D"
    ws.oddFooter.right.text = "page &P of &N"
    ws.sheet_view.showGridLines = False
    ws.protection.sheet = True
