"""The one emitter of `estimate`: `Budget`s as text, JSON or CSV. Formatting only: every figure is
read off a calc.Budget (calc.budget_row gives the one row schema, keys with units).

JSON numbers are exact and always valid RFC 8259 (no NaN or Infinity); text is rounded for
reading. Every output says whether the job fits, the utilization and goodput used, and days.
Every output names the device asked for; a range worked out on its 16-bit row (an FP8 peak's:
calc.prior_device) says so (text: a line; JSON and CSV: `prior_device`).
Scenario rows are written as they are computed (a million-row file streams; estimate holds the
output until every row is made, cli/estimate.py).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ... import calc
from ...calc import Budget, Span, asked_device, budget_row, budget_row_keys as row_keys, prior_row
from . import render as rep

GIB = calc.GIB
Write = Callable[[str], None]


def _clean(value: Any) -> Any:
    """JSON-safe: a non-finite float (never expected: calc refuses them) becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _json_row(row: dict[str, Any]) -> str:
    return json.dumps({k: _clean(v) for k, v in row.items()}, allow_nan=False)


def emit_json(budgets: Iterable[Budget], write: Write,
              tail: Callable[[], dict[str, Any]] | None = None) -> None:
    """{"rows": [...], "prior": {...} or null}, one row at a time; `tail()`'s fields (asked for
    after the last row) follow "prior"."""
    write('{"rows": [')
    prior = None
    for i, b in enumerate(budgets):
        write(("\n  " if i == 0 else ",\n  ") + _json_row(budget_row(b)))
        prior = prior or (b.prior.as_dict() if b.prior is not None else None)
    extra = "".join(f", {json.dumps(k)}: {json.dumps(v, allow_nan=False)}" for k, v in (tail() if tail else {}).items())
    write("\n], \"prior\": " + json.dumps(prior, allow_nan=False) + extra + "}\n")


def emit_csv(budgets: Iterable[Budget], write: Write, *, both: bool) -> None:
    """A header and one CSV line per Budget (RFC 4180 CRLF lines, text cells escaped against
    formula injection by render.csv_cell). `both`: point and range columns (scenarios may mix)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    keys: list[str] | None = None
    for b in budgets:
        row = budget_row(b)
        if keys is None:
            keys = row_keys(None if both else b.ranged)
            writer.writerow(keys)
        writer.writerow([rep.csv_cell("" if row.get(k) is None else row[k]) for k in keys])
        write(buf.getvalue())
        buf.seek(0)
        buf.truncate()


# --- text ------------------------------------------------------------------------------------------

def _num(v: Any, digits: int = 1) -> str:
    if v is None:
        return "n/a"
    v = float(v)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.{digits}f}" if abs(v) >= 1 else f"{v:.3g}"


def figure(v: Any, digits: int = 1) -> str:
    """A point as text, or a Span as 'low / expected / high'."""
    if isinstance(v, Span):
        return " / ".join(_num(x, digits) for x in v.as_tuple())
    return _num(v, digits)


def fit_text(b: Budget) -> str:
    """'fits (12.3 GiB free)' once activations are counted, 'fits before activations (12.3 GiB
    free)' while they are not (no layout's activations given: the memory is model states alone, and
    a long sequence's activations can exceed the rest), 'does NOT fit (28.3 GiB over)' or 'unknown'."""
    if b.fits is None:
        return "unknown (no memory)"
    head = float(b.headroom_bytes) / GIB
    if not b.fits:
        return f"does NOT fit ({-head:,.1f} GiB over)"
    counted = float(np.max(b.memory.activations)) > 0
    return f"fits ({head:,.1f} GiB free)" if counted else f"fits before activations ({head:,.1f} GiB free)"


# What each method is: "full" trains every weight, which is a pretraining as much as a fine-tune
# (the tool cannot tell which), so it says only that; LoRA and QLoRA adapt a trained model: fine-tunes.
METHOD_WORDS = {"full": "training of all weights", "lora": "LoRA fine-tune", "qlora": "QLoRA fine-tune",
                "inference": "inference"}


def _method(job: calc.Job) -> str:
    return METHOD_WORDS[job.training.method]


def gb_words(n_bytes: float) -> str:
    """Bytes as decimal GB with GiB beside, as the starting document wrote them: '112 GB (104.3 GiB)'."""
    gb = float(n_bytes) / calc.GB
    shown = f"{gb:,.0f}" if gb >= 100 else f"{gb:,.1f}" if gb >= 1 else f"{gb:.2g}"
    return f"{shown} GB ({float(n_bytes) / GIB:,.1f} GiB)"


def layout_words(b: Budget) -> str:
    """'TP 2 x PP 4 x DP 8': the product is the device count; expert parallel sits within data
    parallel, so it is named after DP: 'TP 2 x DP 32 (EP 8 within DP)'."""
    lay = b.layout
    parts = [f"{k.upper()} {int(lay[key])}" for k, key in (("tp", "tp"), ("pp", "pp"),
                                                          ("cp", "cp"))
             if lay[key] != 1]
    ep = int(lay["ep"])
    return " x ".join([*parts, f"DP {int(lay['dp'])}"]) + (f" (EP {ep} within DP)" if ep != 1 else "")


def _uneven_words(b: Budget) -> str:
    """"; uneven stages 26/27/27 layers: memory of the largest" where the stages differ (calc/physics/stages.py)."""
    shape = b.job.model.preset.shape if b.job.model.preset is not None else None
    p = b.layout["pp"]
    if not shape or np.ndim(p) or not calc.uneven_stages(shape["n_layers"], p):
        return ""
    layers = "/".join(map(str, calc.stage_layers(shape["n_layers"], int(p))))
    return f"; uneven stages {layers} layers: memory of the largest"


def header(b: Budget) -> list[str]:
    """The two opening lines: memory per device on the layout, and compute."""
    job = b.job
    name = f"{job.model.preset.name}, " if job.model.preset is not None else ""
    active = (f", {rep.format_count(b.active_params)} active" if float(b.active_params) != float(b.params) else "")
    n = int(job.cluster.devices)
    forward = job.training.method == "inference"  # weights only (calc.physics.memory); 2 FLOPs, not 6
    tokens = "tokens, forward only" if forward else "training tokens"
    held = "weights" if forward else "weights, gradients and optimizer state"
    if float(b.memory.activations) > 0:  # counted (given, or the step's in-flight micro-batches)
        held = "weights and activations" if forward else "weights, gradients, optimizer state and activations"
    zero = f"ZeRO {int(job.layout.zero_stage)}"
    setup = zero if forward else f"{job.training.optimizer}, {zero}"
    before = "" if float(b.memory.activations) > 0 else " before activations"
    return [f"{_method(job)} of a {name}{rep.format_count(b.params)}{active}: "
            f"{gb_words(b.memory.total)} of {held} per device{before} ({setup}, {layout_words(b)} "
            f"on {n} device{'s' * (n != 1)}{_uneven_words(b)})",
            f"{rep.format_count(job.tokens)} {tokens}: {rep.format_flops(b.flops)}"]


def _where(b: Budget, table: calc.DeviceTable) -> str:
    n = int(b.job.cluster.devices)
    on = f" on {n} devices" if n != 1 else ""
    if b.ranged:
        row = prior_row(b)
        of = "" if row is None else f" of its 16-bit row ({table.get(row).tflops:.1f} TFLOP/s)"
        whose = "the step model's" if b.step is not None else "the prior's"
        return f"{on} at {whose} utilization{of} (low / expected / high)"
    return f"{on} at {float(b.utilization) * 100:g}% utilization"


def hours_line(b: Budget, table: calc.DeviceTable) -> str:
    """The device asked for, its rate and the hours (a range on its 16-bit row says so)."""
    d = table.get(asked_device(b))
    hours = figure(b.hours) if b.ranged else f"{float(b.hours):8.1f}"
    return f"{d.name:52} {d.tflops:7.1f} TFLOP/s -> {hours} h{_where(b, table)}   [{d.note}]"


def prior_note(b: Budget) -> str:
    """Why a range of an FP8 (non-16-bit) row is worked out on its 16-bit row; "" when it is not."""
    row = prior_row(b)
    if row is None:
        return ""
    return (f"range of {asked_device(b)} worked out on {row}: the prior's utilizations are shares of a "
            "16-bit peak (the runs report them so; against an FP8 peak the same run reads about half)")


COLUMNS = ("device", "days", "device-hours", "GiB/device", "memory", "USD/device-h", "cost USD", "energy kWh")


def table_row(b: Budget) -> list[str]:
    price = "-" if b.usd_per_device_hour is None else f"{float(b.usd_per_device_hour):,.2f}"
    cost = "no price" if b.cost_usd is None else figure(b.cost_usd, 0)
    energy = "no watts" if b.energy_kwh is None else figure(b.energy_kwh)
    return [asked_device(b), figure(b.days, 2), figure(b.device_hours), f"{float(b.memory.total) / GIB:,.1f}",
            fit_text(b), price, cost, energy]


def range_head(b: Budget) -> str:
    price = "no price" if b.usd_per_device_hour is None else f"{float(b.usd_per_device_hour):,.2f} USD per device-hour"
    return f"{asked_device(b)}: {float(b.memory.total) / GIB:,.1f} GiB per device, {fit_text(b)}; {price}"


RANGE_FIGURES = (("hours", "hours", 1), ("days", "days", 2), ("device_hours", "device-hours", 1),
                 ("cost_usd", "cost USD", 0), ("energy_kwh", "energy kWh", 1))


def range_rows(b: Budget) -> list[list[str]]:
    """[label, low, expected, high] per figure of a ranged Budget ('no price' / 'no watts' where missing)."""
    rows = []
    for key, label, digits in RANGE_FIGURES:
        value = getattr(b, key)
        if value is None:
            rows.append([label, "", "no price" if key == "cost_usd" else "no watts", ""])
        else:
            rows.append([label, *(_num(v, digits) for v in value.as_tuple())])
    return rows


COST_TO_BUDGET = "cost to budget (expected)"  # the workbook's words (Budget and Summary sheets)
TYPED_COST_NOTE = ("cost USD at the given utilization: a what-if, not the cost to budget; --range gives the "
                   f"{COST_TO_BUDGET} from published runs like this job")


def budget_line(b: Budget) -> str:
    """The one cost to budget of a ranged Budget: the expected cost, with the runs' low-high band."""
    if b.cost_usd is None:
        return f"{COST_TO_BUDGET}: no price"
    low, expected, high = (figure(v, 0) for v in b.cost_usd.as_tuple())
    return f"{COST_TO_BUDGET}: {expected} USD (low {low}, high {high})"


def assumptions(budgets: list[Budget]) -> list[str]:
    """Where the utilization, goodput, prices and PUE came from; what is missing."""
    lines = []
    first = budgets[0]
    if first.step is not None:
        p = first.prior
        lines.append(f"utilization {p.low:.3f} / {p.expected:.3f} / {p.high:.3f} of the figures' row (low / expected "
                     f"/ high; {first.utilization_basis}); goodput {float(first.goodput):.2f} ({first.goodput_basis})")
    elif first.prior is not None:
        p = first.prior
        lines.append(f"utilization prior: {p.low:.3f} / {p.expected:.3f} / {p.high:.3f} (low / expected / high; "
                     f"{first.utilization_basis.removeprefix('prior: ')}); goodput {float(first.goodput):.2f} "
                     f"({first.goodput_basis})")  # the Budget's basis: an inference job's says "fitted on training"
    else:
        lines.append(f"utilization {float(first.utilization):.0%} of the device's rate (given); goodput "
                     f"{float(first.goodput):.2f} ({first.goodput_basis})")
    for label in dict.fromkeys(_price_note(b) for b in budgets if b.usd_per_device_hour is not None):
        lines.append(label)
    lines += [note for note in dict.fromkeys(map(prior_note, budgets)) if note]
    if any(b.cost_usd is None for b in budgets):
        lines.append("no price: the device row has none; pass --price USD per device-hour or PROVIDER:PLAN "
                     "(see trainbudget prices)")
    if any(b.energy_kwh is None for b in budgets):
        lines.append("no watts: the device row has no board power")
    if any(b.fits is False for b in budgets):
        lines.append(f"does NOT fit: more bytes per device than the device's memory less its reserve "
                     f"({calc.reserve_words()}); add devices, a ZeRO stage or a layout (trainbudget fit)")
    lines.append(f"energy at PUE {float(first.pue):g}")
    return lines


def _price_note(b: Budget) -> str:
    dated = (f", as of {b.price_as_of} ({b.price_age_days} days old)"
             if b.price_as_of and b.price_age_days is not None else "")
    return f"price {float(b.usd_per_device_hour):.4g} USD per device-hour on {asked_device(b)}: {b.price_label}{dated}"


def emit_text(budgets: list[Budget], table: calc.DeviceTable, write: Write) -> None:
    """The same job on one or more devices: header, hours per device, the figures table, assumptions."""
    lines = [*header(budgets[0]), ""]
    lines += [hours_line(b, table) for b in budgets]
    lines += [f"{asked_device(b)}: {calc.step_words(b.step)}" + "".join(f"; {w}" for w in b.step.limits)
              for b in budgets if b.step is not None]
    if budgets[0].ranged:  # one small table per device: figures down, low / expected / high across
        for b in budgets:
            lines += ["", range_head(b), *rep.table(("", "low", "expected", "high"), range_rows(b),
                                                    right=(1, 2, 3)).splitlines(), budget_line(b)]
        lines.append("")
    else:
        lines += ["", *rep.table(COLUMNS, [table_row(b) for b in budgets], right=range(1, 8)).splitlines(), ""]
        lines.append(TYPED_COST_NOTE)
    lines += assumptions(budgets)
    lines.append(rep.UTILIZATION_NOTE)
    write("\n".join(lines) + "\n")


def scenario_text(b: Budget) -> str:
    """One scenario as a block (written as soon as it is computed)."""
    job = b.job
    device = asked_device(b)
    what = f"{rep.format_count(b.params)} params" if job.training.method == "full" else \
        f"{_method(job)} of {rep.format_count(b.params)} params"  # the method's FLOPs: say which
    forward = " (forward only)" if job.training.method == "inference" else ""
    lines = [f"{job.name or device}: {what}, {rep.format_count(job.tokens)} tokens{forward}, "
             f"{int(job.cluster.devices)} x {device}; {float(b.memory.total) / GIB:,.1f} GiB per device: {fit_text(b)}"]
    for key, unit in (("hours", "hours"), ("days", "days"), ("device_hours", "device-hours"),
                      ("cost_usd", "USD"), ("energy_kwh", "kWh")):
        value = getattr(b, key)
        text = ("no price" if key == "cost_usd" else "no watts") if value is None else figure(value)
        notes = ["low / expected / high"] if isinstance(value, Span) else []
        if key == "energy_kwh" and value is not None:  # each row's own PUE (a scenarios file's pue column)
            notes.append(f"at PUE {float(b.pue):g}")
        lines.append(f"  {unit:13} {text}" + (f"  ({', '.join(notes)})" if notes else ""))
    u = (f"{float(b.utilization):.0%} (given)" if not b.ranged else
         f"{'step model' if b.step is not None else 'prior'} {figure(b.utilization, 3)} ({b.utilization_basis})")
    if b.step is not None:  # the breakdown, as estimate --step prints it
        lines.append(f"  step          {calc.step_words(b.step)}" + "".join(f"; {w}" for w in b.step.limits))
    lines.append(f"  utilization   {u}; goodput {float(b.goodput):.2f} ({b.goodput_basis})")
    if b.usd_per_device_hour is not None:
        lines.append("  " + _price_note(b))
    if prior_row(b):
        lines.append("  " + prior_note(b))
    return "\n".join(lines) + "\n"


def emit_scenarios_text(budgets: Iterator[Budget], write: Write) -> None:
    for b in budgets:
        write(scenario_text(b))
