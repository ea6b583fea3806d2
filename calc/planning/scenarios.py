"""Plans side by side: scenario files read into `Job`s, and the Scenarios sheet's plan rows.

Every figure comes from calc.budget; this module only reads inputs into `Job`s and
writes `Budget`s as rows. A scenarios file (CSV, columns SCENARIO_COLUMNS) is streamed: one row
read, one `Job` made, at a time, so a million-row file needs no more memory than one row. Its
cells take the command line's syntax: "7B", "1.5T", "40%", "prior", "aws:on_demand", "2.5".
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import itertools
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.checks import choice
from ..base.errors import TrainingBudgetError, broadcasts, show
from ..base.textfile import open_regular, size_text
from ..base.units import parse_count, parse_number, parse_share
from ..compose.budget import Budget, Job, Owned, Span, budget
from ..compose.job import job as job_of
from ..hardware.catalog import DeviceTable, catalog
from ..model.shapes import ModelPreset, model_preset
from ..physics.memory import METHODS
from .cells import ScenarioBlanks, parse_own, parse_price

FIGURES = ("hours", "device_hours", "usd", "kwh")
SCENARIO_COLUMNS = ("name", "params", "tokens", "device", "devices", "utilization", "price", "own", "model",
                    "active_params", "method", "pue", "zero_stage", "tp", "pp", "cp", "ep", "seq_len",
                    "global_batch")   # model: a preset name (calc.model.shapes) in place of params;
# method and pue as the workbook's Scenarios plans have them (blank: the command line's --method, --pue);
# zero_stage, tp, pp, cp, ep as --zero-stage, --tp, --pp, --cp, --ep (blank: the command line's); seq_len and
# global_batch (sequences per step, as --global-batch) as --seq-len, --global-batch: the step model's batch
# (utilization "step"); the row's data parallel (devices / (tp · pp · cp)) must divide the global batch (a
# whole accumulation at micro-batch 1)
LAYOUT_COLUMNS = ("zero_stage", "tp", "pp", "cp", "ep")  # a job's flat names (calc.job)
# The bounds calc.fit_layouts and `plan` put on the same two sizes (calc/physics/fit.py): one rule on every door.
SIZE_LIMITS = {"seq_len": 2 ** 30, "global_batch": 2 ** 40}
MAX_SCENARIO_BYTES = 1 << 30  # 1 GiB: about 150 million rows; a larger file is surely a mistake

__all__ = ["FIGURES", "FILLS", "Filled", "SCENARIO_COLUMNS", "Owned", "ScenarioBlanks", "named", "parse_own",
           "parse_price", "plan_row", "scenario_budgets", "scenario_jobs", "scenario_rows", "read_scenarios"]


@broadcasts
def plan_row(params: float, tokens: float, device: str, *, own: Owned | None = None,
             table: DeviceTable | None = None, **flat: Any) -> dict[str, Any]:
    """One plan's figures (the Scenarios sheet's row: `hours`, `device_hours`, `usd`, `kwh`, with
    `_low/_expected/_high` for a range), read off budget(job(...)). `flat`: calc.job's names for the
    sheet's other plan cells (devices, default 1; utilization, default "prior"; price, "" or None: the
    device row's; pue, default 1.0; name, today, active_params: None, all `params`, a dense model;
    method: inference is a forward pass, calc.flops_per_param_token); `own` an owned price, in place
    of `price`."""
    table = catalog() if table is None else table
    flat = {"devices": 1, "utilization": "prior", "pue": 1.0, "name": "", **flat}
    price = flat.pop("price", None)
    b = budget(job_of(params=params, tokens=tokens, device=device, table=table, **flat,
                      price=own if own is not None else (None if price == "" else price)))
    return legacy_row(b, flat["name"] or table.get(device).name)


def legacy_row(b: Budget, name: str) -> dict[str, Any]:
    """A Budget in the Scenarios sheet's row keys."""
    row: dict[str, Any] = {"name": name, "device": b.device, "params": b.params, "tokens": b.job.tokens,
                           "devices": int(b.job.cluster.devices), "utilization": "prior" if b.ranged else b.utilization}
    for fig, value in zip(FIGURES, (b.hours, b.device_hours, b.cost_usd, b.energy_kwh), strict=True):
        if isinstance(value, Span):
            row.update({f"{fig}_{k}": float(v) for k, v in zip(("low", "expected", "high"), value.as_tuple(),
                                                                 strict=True)})
        elif b.ranged:
            row.update({f"{fig}_{k}": None for k in ("low", "expected", "high")})
        else:
            row[fig] = None if value is None else float(value)
    if b.usd_per_device_hour is not None:
        row.update({"usd_per_device_hour": float(b.usd_per_device_hour), "price": b.price_label,
                    "price_as_of": b.price_as_of, "price_age_days": b.price_age_days,
                    "price_source": b.price_source})
    return row


def scenario_jobs(records: Iterable[Mapping[str, Any]], base: Job, blanks: ScenarioBlanks | None = None,
                  filled: Filled | None = None) -> Iterator[Job]:
    """One `Job` per scenario record: the record's cells over `base` (the command line's other
    options: method, layout, PUE, ...). A record whose every cell is blank (a spreadsheet's
    trailing ",,,,") is skipped like an empty line and not counted. Blank utilization, price and
    own cells take `blanks` (None: none); a blank utilization with no default is refused. Every error names
    its row ("scenario 3: ..."). `filled`, when given, counts the rows where a default filled a
    blank cell (FILLS' keys: "utilization", "price", "own") and where the row is priced as owned
    hardware ("owned": where blanks.usd_per_kwh and blanks.occupancy apply)."""
    blanks = ScenarioBlanks() if blanks is None else blanks
    for i, rec in enumerate(_nonblank(records), start=1):
        where = f"scenario {i}"
        try:
            used: list[str] = []
            job = _row_job(where, rec, base, blanks, used)
        except TrainingBudgetError as e:
            raise named(where, e, rec.get("name")) from None
        if filled is not None:
            for key in used:
                filled.add(key, i)
        yield job


FILLS = ("utilization", "price", "own", "owned")


@dataclass
class Filled:
    """Where scenario_jobs' defaults were used: per FILLS key, how many rows and the first
    FIRST_ROWS row numbers (a million-row file keeps no list of a million)."""

    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, list[int]] = field(default_factory=dict)

    def add(self, key: str, row: int) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1
        rows = self.first.setdefault(key, [])
        if len(rows) < FIRST_ROWS:
            rows.append(row)


FIRST_ROWS = 8


def scenario_budgets(records: Iterable[Mapping[str, Any]], base: Job, blanks: ScenarioBlanks | None = None,
                     filled: Filled | None = None) -> Iterator[Budget]:
    """budget() of each of scenario_jobs(records, base, blanks, filled), an error naming its row."""
    for i, job in enumerate(scenario_jobs(records, base, blanks, filled), start=1):
        try:
            b = budget(job)
        except TrainingBudgetError as e:
            raise named(f"scenario {i}", e, job.name) from None
        yield b


def named(where: str, e: TrainingBudgetError, name: Any = None) -> TrainingBudgetError:
    """`e` with its message prefixed by `where` ("scenario 3: ...") unless it already is, and the
    row's name at the end where it has one ("... (the row named 'b')": the number counts non-blank
    rows only, so a file with blank lines numbers its rows otherwise; the name is the file's own)."""
    text = str(e)
    text = text if text.startswith(f"{where}:") else f"{where}: {text}"
    shown = "" if name is None else str(name).strip()
    return TrainingBudgetError(f"{text} (the row named {shown!r})" if shown else text)


def _blank(value: Any) -> bool:
    if isinstance(value, list):  # csv.DictReader's cells beyond the header (key None)
        return all(_blank(v) for v in value)
    return value is None or str(value).strip() == ""


def _nonblank(records: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for rec in records:
        if not all(_blank(v) for v in rec.values()):
            yield rec


def _row_job(where: str, rec: Mapping[str, Any], base: Job, blanks: ScenarioBlanks, used: list[str]) -> Job:
    """One record's Job (scenario_jobs' rules); `used` gets the FILLS keys of the blanks it took."""
    extra = rec.get(None) if isinstance(rec, dict) else None
    if len(rec) - (None in rec) == 1 and ";" in str(next(k for k in rec if k is not None)):
        raise TrainingBudgetError(f"{where}: the header is one column ({show(next(k for k in rec if k is not None))}): "
                                  "separate the cells with commas, not semicolons")
    if extra and any(str(c).strip() for c in extra):
        raise TrainingBudgetError(f"{where}: {len(extra)} cell(s) beyond the header's columns "
                                  f"({show(', '.join(map(str, extra)))}); the columns are "
                                  f"{', '.join(SCENARIO_COLUMNS)}")
    unknown = sorted(str(k) for k in rec if k is not None and k not in SCENARIO_COLUMNS)
    if unknown:
        close = [k for k in unknown if k.strip().lower() in SCENARIO_COLUMNS]
        hint = f"; write {', '.join(repr(k.strip().lower()) for k in close)}" if close else ""
        raise TrainingBudgetError(f"{where}: unknown column(s) {', '.join(map(repr, unknown))} "
                                  f"(known, lower case: {', '.join(SCENARIO_COLUMNS)}{hint})")
    r = {k: v for k, v in rec.items() if k is not None and v is not None and str(v).strip() != ""}
    for need in ("tokens", "device"):
        if need not in r:
            raise TrainingBudgetError(f"{where}: {need} is required")
    params, active, preset = _model(where, r)
    pue = parse_number("pue", r["pue"], 1.0) if "pue" in r else blanks.pue  # (the row's PUE: its owned price's too)
    job = base.with_(params=params, active_params=active, model=preset,
                     method=choice("method", r["method"], METHODS) if "method" in r else base.training.method,
                     pue=pue if "pue" in r else base.pricing.pue,
                     tokens=parse_count(f"{where}: tokens", r["tokens"]), device=str(r["device"]).strip(),
                     devices=_devices(where, r.get("devices", 1)),
                     utilization=_utilization(where, r.get("utilization"), blanks.utilization, used),
                     price=_price(where, r, blanks, pue, used),
                     name=str(r.get("name", "")))
    return _layout(where, r, job)


def _layout(where: str, r: Mapping[str, Any], job: Job) -> Job:
    """The row's zero_stage, tp, pp, cp, ep over the command line's (blank cells keep it), and its
    seq_len and global_batch checked: the data-parallel size must divide the global batch."""
    changes: dict[str, float] = {}
    for column in LAYOUT_COLUMNS:
        if column in r:
            low = 0 if column == "zero_stage" else 1
            value = parse_number(f"{where}: {column}", r[column], float(low))
            if not value.is_integer() or value < low or (column == "zero_stage" and value > 3):
                top = " and <= 3" if column == "zero_stage" else ""
                raise TrainingBudgetError(f"{where}: {column} must be a whole number >= {low}{top} "
                                          f"(got {show(r[column])})")
            changes[column] = value
    job = job.with_(**changes) if changes else job
    sizes = {}
    for column in ("seq_len", "global_batch"):
        if column in r:
            value = parse_number(f"{where}: {column}", r[column], 1.0)
            if not value.is_integer() or value < 1:
                raise TrainingBudgetError(f"{where}: {column} must be a whole number >= 1 (got {show(r[column])})")
            if value > SIZE_LIMITS[column]:
                raise TrainingBudgetError(f"{where}: {column} must be at most {SIZE_LIMITS[column]:,} "
                                          f"(got {show(r[column])})")
            sizes[column] = value
    if sizes:
        job = job.with_(**_batch(job, sizes))
    if "global_batch" in sizes:
        replica = float(job.layout.tp) * float(job.layout.pp) * float(job.layout.cp)
        data = float(job.cluster.devices) / replica
        if not data.is_integer() or sizes["global_batch"] % data:
            raise TrainingBudgetError(
                f"{where}: global_batch {int(sizes['global_batch']):,} sequences is not a whole number of steps of "
                f"data parallel {data:g} (devices {float(job.cluster.devices):g} / (tp x pp x cp {replica:g})): "
                "each step "
                "takes data parallel x micro-batch x accumulation sequences")
    return job


def _batch(job: Job, sizes: Mapping[str, float]) -> dict[str, float]:
    """The job's seq_len and global_batch_tokens with a row's seq_len and global_batch (sequences)
    over them: a global batch the row leaves blank keeps its sequences (the command line's
    --global-batch, or the default) at the row's sequence length."""
    seq_len, tokens = job.layout.sizes()
    sequences = sizes.get("global_batch", tokens / seq_len)
    seq_len = sizes.get("seq_len", seq_len)
    return {"seq_len": seq_len, "global_batch_tokens": sequences * seq_len}


def _model(where: str, r: Mapping[str, Any]) -> tuple[float | None, float | None, ModelPreset | None]:
    """(params, active_params, preset) of a row: params (with active_params for a mixture of
    experts) or a model preset's name, which gives both and the shape."""
    if "model" in r:
        try:
            preset = model_preset(r["model"])
        except TrainingBudgetError as e:
            raise TrainingBudgetError(f"{where}: {e}") from None
        if "params" in r:
            raise TrainingBudgetError(f"{where}: give params or model, not both (the model gives its "
                                      f"parameters; got params {show(r['params'])} and model {show(r['model'])})")
        if "active_params" in r:
            raise TrainingBudgetError(f"{where}: active_params {show(r['active_params'])} goes with params, not "
                                      f"with model: {preset.name} gives its own active parameters (leave "
                                      "active_params blank, or give params in place of model)")
        return None, None, preset
    if "params" not in r:
        raise TrainingBudgetError(f"{where}: params (or model) is required")
    params = parse_count(f"{where}: params", r["params"])
    if "active_params" not in r:
        return params, None, None
    active = parse_count(f"{where}: active_params", r["active_params"])
    if active > params:
        raise TrainingBudgetError(f"{where}: active_params {show(r['active_params'])} is more than params "
                                  f"{show(r['params'])}")
    return params, active, None


def _devices(where: str, value: Any) -> float:
    n = parse_number(f"{where}: devices", value, 1.0)
    if not n.is_integer():
        raise TrainingBudgetError(f"{where}: devices must be a whole number >= 1 (got {show(value)})")
    return n


def _utilization(where: str, value: Any, default: Any, used: list[str]) -> Any:
    if value is None:
        if default is None:
            raise TrainingBudgetError(f"{where}: utilization is blank; give a share such as 0.4 or 40%, "
                                      "'prior' or 'step' (or pass --utilization, --range or --step for every "
                                      "blank cell)")
        used.append("utilization")
        return default
    if str(value).strip().lower() in ("prior", "step"):  # the published runs' range, or the step model's
        return str(value).strip().lower()
    return parse_share(f"{where}: utilization", value)


def _price(where: str, r: Mapping[str, Any], blanks: ScenarioBlanks, pue: float | None, used: list[str]) -> Any:
    """The row's price: its price or own cell, else the blanks' own, else the blanks' price (None: the device's)."""
    price, own = blanks.price, blanks.own
    if r.get("own") and r.get("price"):  # as --price with --own: one price per job
        raise TrainingBudgetError(f"{where}: give price or own, not both (got price {show(r['price'])} and own "
                                  f"{show(r['own'])}: one price per row, as --price and --own on the command line)")
    if r.get("own") or (own and not r.get("price")):
        used += ["owned"] if r.get("own") else ["own", "owned"]
        return parse_own(r.get("own") or own, blanks.usd_per_kwh, pue, blanks.occupancy, blanks.tariff_name)
    if r.get("price"):
        return parse_price(f"{where}: price", r["price"])
    if price is not None:
        used.append("price")
    return price


def scenario_rows(records: Iterable[Mapping[str, Any]], *, defaults: Mapping[str, Any] | None = None,
                  usd_per_kwh: float | None = None, table: DeviceTable | None = None,
                  today: dt.date | None = None) -> list[dict[str, Any]]:
    """One plan row (plan_row's keys) per scenario record; blanks take `defaults` (utilization
    "prior" unless given, price, own)."""
    d = dict(defaults or {})
    base = job_of(params=1.0, table=catalog() if table is None else table, today=today)
    made = scenario_budgets(records, base, ScenarioBlanks(utilization=d.get("utilization", "prior"),
                                                          price=parse_price("price", d.get("price")),
                                                          own=d.get("own"), usd_per_kwh=usd_per_kwh))
    return [legacy_row(b, b.job.name or b.device) for b in made]


def read_scenarios(path: Any, what: str = "--scenarios") -> Iterator[dict[str, Any]]:
    """The records of a scenarios CSV, streamed (csv.DictReader over the open file): regular files
    only (a FIFO or a device is refused before anything is read, textfile.open_regular), at most
    MAX_SCENARIO_BYTES (checked on the open file before reading), UTF-8 with or without a BOM.
    Memory stays bounded whatever the file: a line is read at most MAX_LINE_CHARS at a time, and a
    longer one is refused there. A header naming a column twice is refused (which would be read?)."""
    p = Path(path)
    raw = open_regular(p, what)
    size = os.fstat(raw.fileno()).st_size
    if size > MAX_SCENARIO_BYTES:
        raw.close()
        raise TrainingBudgetError(f"{what} {p} is larger than {size_text(MAX_SCENARIO_BYTES)}")
    with io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as f:
        try:
            reader = csv.DictReader(_bounded_lines(f, what, p))
            _check_header(reader.fieldnames, what, p)
            yield from reader
        except UnicodeDecodeError as e:
            raise TrainingBudgetError(f"{what} {p} is not UTF-8 text (byte {e.start})") from None
        except csv.Error as e:
            raise TrainingBudgetError(f"{what} {p}: not a CSV file ({e})") from None


MAX_LINE_CHARS = 1 << 17  # 131,072: csv's own field size limit (csv.field_size_limit()); a real row is ~100


def _bounded_lines(f: io.TextIOBase, what: str, p: Path) -> Iterator[str]:
    """The file's lines, each read at most MAX_LINE_CHARS characters at a time: a longer line
    (a file with no line breaks, a runaway quoted cell) is refused after that many, never held whole."""
    for number in itertools.count(1):
        line = f.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        if len(line) > MAX_LINE_CHARS:
            raise TrainingBudgetError(f"{what} {p}: line {number} is longer than {MAX_LINE_CHARS:,} characters; "
                                      "not a scenarios file")
        yield line


def _check_header(names: Any, what: str, p: Path) -> None:
    """Refuse a header that names a column twice (csv.DictReader would silently keep the last cell)."""
    seen: set[str] = set()
    for name in names or ():
        if name in seen:
            raise TrainingBudgetError(f"{what} {p}: the header names column {show(name)} twice; keep one")
        seen.add(name)
