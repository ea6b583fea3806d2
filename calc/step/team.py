"""A team's own measured steps calibrate the step model for that team: one factor per device.

The step model's achievable matmul rate is fitted per device family on published runs
(calc.step.calibrate); a team's software, kernels and data loader reach more or less of it. A
team's measured steps (each a device, a model shape, a layout and batch, and the tokens per
second per device it measured) fit one factor per device on that rate, and the band of a
prediction for that team goes from the published runs' spread (calc.STEP_RESIDUAL) to the spread
left once a team's own bias is removed (TEAM_RESIDUAL: a smaller median error and a tighter fast
end; its slow end is wider, as its comment says).

The file (CSV, one measured step a row; column names as calc/data/steptime_measured.csv, whose
rows are valid here):
- required: device (a row of the device table), devices, seq_len (tokens), global_batch_tokens
  (tokens per optimizer step), recompute (none, selective, op, full, offload), tokens_per_second_per_device;
- the model: its shape in params, n_layers, d_model (and optionally active_params, attn_dim,
  kv_dim, vocab, top_k, expert_params: the routed experts' parameters), or else `model` naming a
  calc.models preset;
- optional (calc.step.Layout's defaults when empty or absent): tp, pp, vpp, cp, ep (1 each),
  zero_stage (1), micro_batch (1 sequence), flash_attention (TRUE; FALSE: unfused attention, which
  needs n_heads with a shape of its own); source, as_of, note are kept as words.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

import numpy as np

from ..base.errors import TrainingBudgetError, show
from ..hardware.catalog import DeviceTable
from .calibrate import CONSTANTS, Constants, _loss, with_fraction
from .hardware import FAMILIES, Hardware, hardware
from .layout import Layout
from .runs import STEP_RESIDUAL
from .shape import Shape
from .step import step_time

REQUIRED = ("device", "devices", "seq_len", "global_batch_tokens", "recompute", "tokens_per_second_per_device")
SHAPE = ("params", "n_layers", "d_model")
SHAPE_OPTIONAL = ("active_params", "attn_dim", "kv_dim", "vocab", "top_k", "expert_params", "n_heads")
LAYOUT_OPTIONAL = ("tp", "pp", "vpp", "cp", "ep", "zero_stage", "micro_batch")
FACTOR_RANGE = (0.25, 4.0)  # a team at a quarter to 4x the published runs' achievable rate; outside: a typo

# Step time measured / predicted after a team's own factor, p10 and p90 over the packaged measured
# layouts (calc/data/steptime_measured.csv, use=fit rows): each row predicted with the factor fitted
# on the other rows of its team (the same first word of `source`, the same device; teams of 2 or
# more rows: 46 rows), by team_residuals() on 2026-12-07 with the constants fitted that day. The
# median error with the team's factor from its other rows is 5.6%; the fast end is tighter than
# STEP_RESIDUAL (0.865, 1.154), the slow end is not: a team's rows on one device span models and
# layouts whose misses one rate factor cannot carry from one to the other.
TEAM_RESIDUAL = (0.870, 1.199)


@dataclass(frozen=True)
class TeamSteps:
    """A team's measured steps: per row its device name, Shape, Layout (scalars) and measured
    tokens/s per device; `records` the rows' cells as read."""

    devices: tuple[str, ...]
    shapes: tuple[Shape, ...]
    layouts: tuple[Layout, ...]
    measured: tuple[float, ...]
    records: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class TeamCalibration:
    """factors: per device name, the factor on the step model's achievable matmul rate (1 = the
    published runs'); rows: measured steps per device; error_before / error_after: per device, the
    median |measured/predicted - 1| of tokens/s on the team's rows with the default constants and
    with the factor; band: per device, step time low / high multipliers (measured / predicted) for a
    prediction with the factor; capped: devices whose factor reached a bound (the measured tokens/s
    need more than the peak, or under FACTOR_RANGE's floor of the rate: rows to check); basis: words."""

    factors: dict[str, float]
    rows: dict[str, int]
    error_before: dict[str, float]
    error_after: dict[str, float]
    band: dict[str, tuple[float, float]]
    capped: tuple[str, ...]
    basis: str

    def constants_for(self, hw: Hardware, constants: Constants | None = None) -> Constants:
        """The step model's constants for a job on `hw` (a calc.step.hardware row): its family's
        matmul fraction times this team's factor for that device (unchanged for a device the team
        did not measure)."""
        base = constants or CONSTANTS
        factor = self.factors.get(hw.name)
        if factor is None:
            return base
        family = FAMILIES[int(hw.family)]
        return with_fraction(base, family, base.matmul_fraction[int(hw.family)] * factor)

    def band_for(self, device: str) -> tuple[float, float]:
        """Step time low / high multipliers for `device`: the team's where it measured that device,
        else the published runs' (calc.STEP_RESIDUAL)."""
        return self.band.get(device, STEP_RESIDUAL)


def _cell(rec: dict[str, str], col: str, where: str) -> float | None:
    raw = (rec.get(col) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw.replace("_", ""))
    except ValueError:
        raise TrainingBudgetError(f"{where}: {col} must be a number (got {show(raw)})", col) from None
    zero_ok = col in ("top_k", "vocab", "zero_stage", "expert_params")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise TrainingBudgetError(f"{where}: {col} must be a finite number {'>=' if zero_ok else '>'} 0 "
                                  f"(got {show(raw)})", col)
    return value


def _shape(rec: dict[str, str], where: str) -> Shape:
    if (rec.get("params") or "").strip():
        vals = {c: _cell(rec, c, where) for c in SHAPE + SHAPE_OPTIONAL}
        missing = [c for c in SHAPE if vals[c] is None]
        if missing:
            raise TrainingBudgetError(f"{where}: a shape needs {', '.join(SHAPE)} (missing {', '.join(missing)})",
                                      missing[0])
        active = vals["active_params"] or vals["params"]
        return Shape(params_active=active, params_total=vals["params"], n_layers=vals["n_layers"],
                     d_model=vals["d_model"], attn_dim=vals["attn_dim"], kv_dim=vals["kv_dim"],
                     vocab=vals["vocab"] or 0.0, top_k=vals["top_k"] or 0.0, params_expert=vals["expert_params"],
                     n_heads=vals["n_heads"])
    name = (rec.get("model") or "").strip()
    if not name:
        raise TrainingBudgetError(f"{where}: give the model's shape ({', '.join(SHAPE)}) or a preset in `model`",
                                  "model")
    try:
        return Shape.from_preset(name)
    except TrainingBudgetError as e:
        raise TrainingBudgetError(f"{where}: {e}", "model") from None


def load_team_steps(text: str) -> TeamSteps:
    """A team's measured steps from CSV `text` (columns: module doc). Raises TrainingBudgetError
    naming the row and column of the first bad cell."""
    recs = list(csv.DictReader(text.splitlines()))
    if not recs:
        raise TrainingBudgetError("measured steps: the file has no rows", "measured_steps")
    absent = [c for c in REQUIRED if c not in recs[0]]
    if absent:
        raise TrainingBudgetError(f"measured steps: the file lacks column(s) {', '.join(absent)}", absent[0])
    devices, shapes, layouts, measured = [], [], [], []
    for i, rec in enumerate(recs, start=2):  # row 1 is the header
        where = f"measured steps row {i}"
        device = (rec.get("device") or "").strip()
        if not device:
            raise TrainingBudgetError(f"{where}: device is empty", "device")
        need = {c: _cell(rec, c, where) for c in REQUIRED[1:] if c != "recompute"}
        empty = [c for c, v in need.items() if v is None]
        if empty:
            raise TrainingBudgetError(f"{where}: {', '.join(empty)} is empty", empty[0])
        opt = {c: v for c in LAYOUT_OPTIONAL if (v := _cell(rec, c, where)) is not None}
        try:
            lay = Layout(devices=need["devices"], seq_len=need["seq_len"],
                         global_batch_tokens=need["global_batch_tokens"], recompute=rec.get("recompute") or "",
                         flash_attention=(rec.get("flash_attention") or "true").strip(), **opt)
            lay.dp  # noqa: B018 (checks devices = tp x pp x cp x dp)
        except TrainingBudgetError as e:
            raise TrainingBudgetError(f"{where}: {e}", getattr(e, "field", None)) from None
        shape = _shape(rec, where)
        if not lay.flash_attention and not shape.n_heads:
            raise TrainingBudgetError(f"{where}: flash_attention FALSE times each head's scores: give n_heads (or a "
                                      "preset in `model`)", "n_heads")
        devices.append(device)
        shapes.append(shape)
        layouts.append(lay)
        measured.append(need["tokens_per_second_per_device"])
    return TeamSteps(tuple(devices), tuple(shapes), tuple(layouts), tuple(measured), tuple(recs))


def _predict(steps: TeamSteps, idx: list[int], hw: Hardware, constants: Constants) -> np.ndarray:
    return np.array([float(step_time(steps.shapes[i], steps.layouts[i], hw, constants).tokens_per_second_per_device)
                     for i in idx])


def fit_factor(steps: TeamSteps, idx: list[int], hw: Hardware, constants: Constants | None = None) -> float:
    """The factor on `hw`'s family matmul fraction that best fits rows `idx` (the constants' own
    soft-L1 loss of the log errors, calc.step.calibrate: a row the model cannot express pulls no
    harder than a fixed amount; golden-section search over FACTOR_RANGE, capped so the achievable
    rate stays at or under the peak)."""
    base = constants or CONSTANTS
    frac = base.matmul_fraction[int(hw.family)]
    family = FAMILIES[int(hw.family)]
    meas = np.array([steps.measured[i] for i in idx])
    lo, hi = math.log(FACTOR_RANGE[0]), math.log(min(FACTOR_RANGE[1], 1.0 / frac))

    def loss(logf: float) -> float:
        pred = _predict(steps, idx, hw, with_fraction(base, family, frac * math.exp(logf)))
        return _loss(pred, meas)

    gold = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    for _ in range(40):  # the bracket shrinks to 0.618^40 of log(16): far under 0.1%
        c, d = b - gold * (b - a), a + gold * (b - a)
        if loss(c) < loss(d):
            b = d
        else:
            a = c
    return math.exp((a + b) / 2.0)


def _groups(steps: TeamSteps, table: DeviceTable | None) -> dict[str, tuple[Hardware, list[int]]]:
    """Rows by the device table's own name for their device (two spellings of one row are one device)."""
    out: dict[str, tuple[Hardware, list[int]]] = {}
    for i, d in enumerate(steps.devices):
        try:
            hw = hardware(d, table)
        except TrainingBudgetError as e:
            raise TrainingBudgetError(f"measured steps, device {d!r}: {e}", "device") from None
        out.setdefault(hw.name, (hw, []))[1].append(i)
    return out


def _median_error(pred: np.ndarray, meas: np.ndarray) -> float:
    return float(np.median(np.abs(meas / pred - 1.0)))


def calibrate_from_measured(steps: TeamSteps | str, table: DeviceTable | None = None,
                            constants: Constants | None = None) -> TeamCalibration:
    """A team's calibration from its measured steps (a TeamSteps, or the CSV text): per device, the
    factor on the achievable matmul rate (fit_factor), the errors on the team's rows before and
    after, and the band for a prediction with it: TEAM_RESIDUAL, widened to the team's own
    leave-one-out residuals where it measured 3 or more steps on that device."""
    steps = load_team_steps(steps) if isinstance(steps, str) else steps
    base = constants or CONSTANTS
    factors, rows, before, after, band, capped = {}, {}, {}, {}, {}, set()
    for device, (hw, idx) in _groups(steps, table).items():
        meas = np.array([steps.measured[i] for i in idx])
        f = fit_factor(steps, idx, hw, base)
        fam = int(hw.family)
        if f * base.matmul_fraction[fam] >= 0.995 or f <= FACTOR_RANGE[0] * 1.005:
            capped.add(device)
        fitted = with_fraction(base, FAMILIES[fam], base.matmul_fraction[fam] * f)
        factors[device], rows[device] = f, len(idx)
        before[device] = _median_error(_predict(steps, idx, hw, base), meas)
        after[device] = _median_error(_predict(steps, idx, hw, fitted), meas)
        lo, hi = TEAM_RESIDUAL
        if len(idx) >= 3:
            own = _loo(steps, idx, hw, base)
            lo, hi = min(lo, float(own.min())), max(hi, float(own.max()))
        band[device] = (lo, hi)
    words = "; ".join(f"{d}: x{factors[d]:.3f} on the achievable matmul rate from {rows[d]} measured step"
                      f"{'s' * (rows[d] != 1)} (median error {before[d]:.1%} -> {after[d]:.1%}), step time "
                      f"x{band[d][0]:.3g}-x{band[d][1]:.3g}" + (" (at a bound of the factor: the measured tokens/s "
                      f"need more than the peak or under {FACTOR_RANGE[0]:g} of the rate; check the rows)"
                      if d in capped else "") for d in factors)
    basis = (f"team calibration: {words}; band: p10-p90 of the residuals left once each published team's own "
             f"factor is fitted on its other rows (x{TEAM_RESIDUAL[0]:g}-x{TEAM_RESIDUAL[1]:g}), widened to the "
             "team's own leave-one-out residuals")
    return TeamCalibration(factors, rows, before, after, band, tuple(sorted(capped)), basis)


def _loo(steps: TeamSteps, idx: list[int], hw: Hardware, base: Constants) -> np.ndarray:
    """Step time measured / predicted for each row of `idx`, the factor fitted on the others."""
    fam = int(hw.family)
    out = []
    for i in idx:
        others = [j for j in idx if j != i]
        f = fit_factor(steps, others, hw, base)
        pred = _predict(steps, [i], hw, with_fraction(base, FAMILIES[fam], base.matmul_fraction[fam] * f))[0]
        out.append(pred / steps.measured[i])
    return np.array(out)


def team_of(record: dict[str, str]) -> str:
    """A published row's team: the first word of its `source` (a paper's first author, a framework)."""
    words = (record.get("source") or "").split()
    return words[0].rstrip(",") if words else "?"


def team_residuals(text: str | None = None, constants: Constants | None = None) -> np.ndarray:
    """Step time measured / predicted for each row of the packaged measured layouts (or CSV `text`
    of the same columns; rows marked use=check are left out) whose team (team_of, and the same
    device) has 2 or more rows, each predicted with the factor fitted on the team's other rows: the
    spread TEAM_RESIDUAL summarizes."""
    if text is None:
        from importlib import resources
        text = resources.files(__name__.rsplit(".", 2)[0]).joinpath("data/steptime_measured.csv").read_text("utf-8")
    recs = list(csv.DictReader(text.splitlines()))
    if recs and "use" in recs[0]:  # rows that are not a steady-state step stay out, as in the fit
        buf = io.StringIO()
        out = csv.DictWriter(buf, fieldnames=list(recs[0]))
        out.writeheader()
        out.writerows(r for r in recs if r["use"] == "fit")
        text = buf.getvalue()
    steps = load_team_steps(text)
    base = constants or CONSTANTS
    teams: dict[tuple[str, str], list[int]] = {}
    for i, rec in enumerate(steps.records):
        teams.setdefault((team_of(rec), steps.devices[i]), []).append(i)
    out = [_loo(steps, idx, hardware(dev), base) for (_, dev), idx in teams.items() if len(idx) >= 2]
    return np.concatenate(out)
