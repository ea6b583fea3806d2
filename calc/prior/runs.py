"""Published training runs: what real runs achieved, to calibrate the utilization a budget assumes.

Packaged data `data/runs.csv`, every row with its source (paper and table, or model card) and
`as_of`. Implied whole-run utilization = train_flops / (device-hours · 3600 · peak), the
reference's check (Llama 2 7B: 6 · 6.74e9 · 2e12 / (184,320 · 3600 · 312e12) ≈ 0.39).
It falls below steady-state MFU because the hours include restarts and everything else.
For mixture-of-experts models FLOPs use the active parameters.

Columns that keep the kinds of evidence apart:
- `hours_scope`: "whole-run" (reported hours include restarts and downtime) or "steady-state"
  (hours derived from throughput, as LLaMA's Table 15, or a run with only an MFU);
- `hours_kind`: "stated" (the source prints the hours) or "derived" (GPUs x days, a per-trillion
  rate times tokens); blank without hours;
- `reported_mfu`: on the 6·N·D basis against the 16-bit dense peak (a source's figure with
  attention FLOPs or against an FP8 peak is converted; the note says how);
- `use`: "main" (the utilization prior learns from it), "sensitivity" (benchmarks, second-hand
  or coarse figures: scored out of sample only) or "no" (not a utilization: the note says why);
- `tier`: A (the source states the figure), B (derived or second-hand), C (coarse).
The corrections of 2026-11-30 (13 of the first 25 rows) are in each row's note.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from ..hardware.catalog import DeviceTable, catalog
from ..money.totals import SECONDS_PER_HOUR, TERA, gpu_hours
from ..physics.flops import train_flops


@dataclass(frozen=True)
class Run:
    """One published run; `device_hours`, `reported_flops` and `reported_mfu` may be unknown."""

    run: str
    params: float
    active_params: float | None
    tokens: float
    device: str
    device_hours: float | None
    reported_flops: float | None
    reported_mfu: float | None
    hours_scope: str
    source: str
    as_of: str
    note: str
    devices: float | None = None   # devices the run used, where published
    peak_precision: str = "bf16"   # precision of the peak the utilization is measured against
    hours_kind: str = ""           # "stated" or "derived" (blank without hours)
    use: str = "main"              # "main", "sensitivity" or "no"
    tier: str = ""                 # "A", "B" or "C" (see the module doc)

    @property
    def flops_params(self) -> float:
        """Parameters that do the FLOPs: the active ones for a mixture of experts."""
        return self.active_params or self.params

    @property
    def moe(self) -> bool:
        """A mixture of experts: fewer active than total parameters."""
        return self.active_params is not None and self.active_params < self.params


def _opt(text: str) -> float | None:
    return float(text) if text.strip() else None


@functools.lru_cache(maxsize=1)
def load_runs() -> tuple[Run, ...]:
    """The packaged runs, in file order."""
    text = resources.files(__name__.rsplit(".", 2)[0]).joinpath("data/runs.csv").read_text("utf-8")
    return tuple(Run(run=r["run"], params=float(r["params"]), active_params=_opt(r["active_params"]),
                     tokens=float(r["tokens"]), device=r["device"], device_hours=_opt(r["device_hours"]),
                     reported_flops=_opt(r["reported_flops"]), reported_mfu=_opt(r["reported_mfu"]),
                     hours_scope=r["hours_scope"], source=r["source"], as_of=r["as_of"], note=r["note"],
                     devices=_opt(r.get("devices", "")), peak_precision=r.get("peak_precision") or "bf16",
                     hours_kind=r.get("hours_kind", ""), use=r.get("use") or "main", tier=r.get("tier", ""))
                 for r in csv.DictReader(text.splitlines()))


def implied_utilization(run: Run, table: DeviceTable | None = None) -> float | None:
    """train_flops / (device-hours · 3600 · peak FLOP/s); None where hours are not published."""
    if run.device_hours is None:
        return None
    peak = (catalog() if table is None else table).get(run.device).tflops * TERA
    return float(train_flops(run.flops_params, run.tokens)) / (run.device_hours * SECONDS_PER_HOUR * peak)


def predicted_device_hours(run: Run, table: DeviceTable | None = None) -> float | None:
    """Device-hours this tool predicts at the run's reported MFU; None where no MFU is reported."""
    if run.reported_mfu is None:
        return None
    return float(gpu_hours(run.flops_params, run.tokens, run.device, utilization=run.reported_mfu,
                           table=table))
