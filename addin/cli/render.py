"""Text and CSV renderings of the reports in trainbudget.calc.report.

Each report is a dict of plain Python values (for --json); this module only formats them.
The text rendering of `estimate` with no options is the project's starting table, line for line
(tests/data/seed_table.txt).
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

UTILIZATION_NOTE = ("utilization is never 100%: published large runs report model-FLOPs "
                    "utilization well below peak, and a laptop GPU through PyTorch far below that.")

# C0 controls but tab and newline, DEL and C1 controls: a terminal acts on them (ESC starts a
# sequence that can recolour, move the cursor or retitle the window), so user text never carries them out.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: str) -> str:
    """`text` with every control character but tab and newline written as an escape (ESC as \\x1b):
    names from a scenarios file, a catalog or a config are printed, never obeyed by the terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def echo(text: str = "", **kwargs: Any) -> None:
    """click.echo of safe(text)."""
    import click

    click.echo(safe(text), **kwargs)


_COUNT_SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))
_FLOP_UNITS = ((1e24, "YFLOP"), (1e21, "ZFLOP"), (1e18, "EFLOP"), (1e15, "PFLOP"),
               (1e12, "TFLOP"), (1.0, "FLOP"))


def format_count(value: float) -> str:
    """7e9 -> '7B', 1.5e12 -> '1.5T', 3.5e8 -> '350M' (three significant digits at most)."""
    for scale, suffix in _COUNT_SUFFIXES:
        if value >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def format_flops(value: float) -> str:
    """4.2e19 -> '42 EFLOP' (the starting table's unit), with the largest unit that keeps the figure >= 1."""
    for scale, unit in _FLOP_UNITS:
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} FLOP"


def table(headers: tuple[str, ...] | list[str], rows: list[list[str]], right: Any = ()) -> str:
    """The one text table: columns two spaces apart, `right` (indexes) right-aligned, a header line."""
    cells = [list(headers), *rows]
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(headers))]
    aligned = set(right)

    def line(r: list[str]) -> str:
        return "  ".join(str(c).rjust(w) if i in aligned else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
    return "\n".join(line(r) for r in cells) + "\n"


# Text cells starting with these are read as formulas by spreadsheets: CSV injection
# (OWASP, "CSV Injection", owasp.org/www-community/attacks/CSV_Injection). OWASP's remedy:
# prefix such a cell with a single quote so it reads as text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A cell safe to open in a spreadsheet: text that a spreadsheet would run as a formula gets
    a leading single quote (OWASP); numbers, including negative ones, are left as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def to_csv(rows: list[dict[str, Any]]) -> str:
    """Rows of dicts as CSV text with a header line, every text cell escaped by `csv_cell`.

    Lines end in CRLF (RFC 4180), so a cell holding a carriage return is quoted like one holding
    a line feed (Python's writer quotes only the line terminator's characters).
    """
    buf = io.StringIO()
    fields = list(rows[0]) if rows else []
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow([csv_cell(f) for f in fields])
    writer.writerows([csv_cell(row.get(f, "")) for f in fields] for row in rows)
    return buf.getvalue()


def runs_text(rows: list[dict[str, Any]]) -> str:
    """The runs as a table: size, tokens, reported device-hours, implied utilization, MFU."""
    def pct(v: float | None) -> str:
        return "" if v is None else f"{v:.1%}"

    def hours(v: float | None) -> str:
        return "" if v is None else f"{v:,.0f}"

    body = [[r["run"], format_count(r["params"]), format_count(r["tokens"]), hours(r["device_hours"]),
             pct(r["implied_utilization"]), pct(r["reported_mfu"]), hours(r["predicted_device_hours"]), r["device"]]
            for r in rows]
    return (table(("run", "params", "tokens", "device-hours", "implied", "MFU", "device-h at MFU", "device"), body,
                  right=range(1, 7))
            + "implied = whole-run utilization: train_flops / (device-hours x 3600 x dense peak); "
              "MFU = steady-state, as reported.\n")


def devices_text(rows: list[dict[str, Any]]) -> str:
    """The catalog as a table: name, rate, kind, memory (GiB), watts, source."""
    body = [[r["name"], f"{r['tflops']:,.1f}", r["kind"], "" if r["memory_gib"] is None else f"{r['memory_gib']:g}",
             "" if r["watts"] is None else f"{r['watts']:g}", r["source"]] for r in rows]
    return table(("device", "TFLOP/s", "kind", "memory GiB", "watts", "source"), body, right=(1, 3, 4))


def prices_text(rows: list[dict[str, Any]]) -> str:
    """Prices as a table: plans in USD per device-hour, the date read and the age."""
    def cell(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    body = [[r["provider"], r["offering"][:28], r["device"][:16],
             *(cell(r[f"usd_per_device_hour_{p}"]) for p in ("on_demand", "1yr", "3yr", "spot")),
             f"{r['as_of']} ({r['age_days']} days old)"] for r in rows]
    return (table(("provider", "offering", "device", "on_dem", "1yr", "3yr", "spot", "as_of"), body,
                  right=(3, 4, 5, 6))
            + "USD per device-hour; each row's source: --json or --csv\n")
