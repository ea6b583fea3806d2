"""Reports as plain data: the budget rows TRAIN_BUDGET spills, and the tables behind the
`estimate`, `devices` and `runs` commands. Plain Python values (dicts, lists, floats), so the
command line can print them as text, JSON or CSV and the UDFs can spill them; nothing here
formats or prints.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.errors import TrainingBudgetError, show
from ..hardware import catalog as _devices
from ..hardware.catalog import DeviceTable, catalog
from ..money.totals import GB, GIB, train_hours
from ..physics.flops import train_flops
from ..physics.memory import train_memory
from ..physics.stages import stage_layers
from ..prior import runs as _runs
from .budget import Budget, Job, Span, budget
from .job import job as job_of

# The starting document's scenario and its four rates, in its order: a 7B full fine-tune on
# 1B tokens, on two matmul rates measured on an Apple M3 Ultra and on the H100 SXM's dense peaks.
SEED_PARAMS = 7e9
SEED_TOKENS = 1e9
SEED_DEVICES = (
    "M3 Ultra, MLX fp32 matmul (measured)",
    "M3 Ultra, PyTorch MPS bf16 matmul (measured)",
    "H100 SXM, BF16 tensor core, dense",
    "H100 SXM, FP8 tensor core, dense",
)


# flat: one argument per TRAIN_BUDGET argument (Excel's flat call); the body builds one calc.job
def budget_rows(params: float, tokens: float, device: Any, utilization: float = 1.0,
                devices: int = 1, usd_per_device_hour: float | None = None, pue: float = 1.0,
                method: str = "full", optimizer: str = "adamw", zero_stage: int = 0,
                active_params: float | None = None, table: DeviceTable | None = None) -> list[list[Any]]:
    """[label, value] rows of one `Budget`: memory by part (GB, 1e9 bytes, per device), FLOPs,
    hours, days, device-hours, cost, energy, then whether it fits, the headroom (GiB), the
    utilization and goodput used. `active_params` (None: `params`, a dense model) the parameters
    one token runs through (a mixture of experts' active ones): FLOPs and hours follow them, memory
    holds every parameter. A figure the device row lacks data for (a price, watts) reads as a
    short text. A thin wrapper over calc.budget."""
    if isinstance(utilization, str) or hasattr(utilization, "hour_factors"):
        raise TrainingBudgetError(f"utilization must be a number in (0, 1] (got {show(utilization)}): the budget "
                                  "table holds points; for low / expected / high use calc.train_range")
    return budget_table(budget(job_of(params=params, tokens=tokens, device=device, devices=devices,
                                      utilization=utilization, price=usd_per_device_hour, pue=pue, method=method,
                                      optimizer=optimizer, zero_stage=zero_stage, active_params=active_params,
                                      table=table)))


def _mid(value: Any) -> Any:
    """A range's expected figure; a point as it is."""
    return value.expected if isinstance(value, Span) else value


def budget_table(b: Budget) -> list[list[Any]]:
    """[label, value] rows of one scalar `Budget` (TRAIN_BUDGET's table; budget_rows' docstring says
    which). A Budget timed by the step model (utilization "step") gives its expected figures, then
    the hours' low and high (calc.run_hours' band) and the step's own figures (STEP_ROWS)."""
    rows: list[list[Any]] = [[f"{part.capitalize()} (GB per device)", value / GB]  # activations where the step
                             for part, value in b.memory.as_dict().items()  # model counted them
                             if part != "activations" or value > 0]
    rows += [["FLOPs", b.flops], ["Hours", _mid(b.hours)], ["Days", _mid(b.days)],
             ["Device-hours", _mid(b.device_hours)]]
    if isinstance(b.hours, Span):
        rows += [["Hours, low", b.hours.low], ["Hours, high", b.hours.high]]
    rows.append(["Cost (USD)", "n/a: no price; pass usd_per_device_hour" if b.cost_usd is None else _mid(b.cost_usd)])
    rows.append(["Energy (kWh)", f"n/a: device {b.device!r} has no watts in its table row"
                 if b.energy_kwh is None else _mid(b.energy_kwh)])
    rows.append(["Fits in memory", "n/a: no memory in the device row" if b.fits is None else bool(b.fits)])
    rows.append(["Headroom (GiB per device)", "n/a" if b.headroom_bytes is None else b.headroom_bytes / GIB])
    rows += [["Utilization", _mid(b.utilization)], ["Goodput", b.goodput]]
    if b.step is not None:
        figures = step_row(b)
        rows += [[label[0].upper() + label[1:], figures[key]] for key, label in STEP_ROWS]
    return rows


def estimate(params: float = SEED_PARAMS, tokens: float = SEED_TOKENS,
             devices: tuple[str, ...] | list[str] = SEED_DEVICES, utilization: float = 1.0,
             n_devices: int = 1, table: DeviceTable | None = None) -> dict[str, Any]:
    """The seed's table for any job: memory, FLOPs, and hours on each device (hours are wall-clock)."""
    table = catalog() if table is None else table
    memory = train_memory(params)
    rows = []
    for name in devices:
        d = table.get(name)
        hours = train_hours(params, tokens, d.tflops, utilization=utilization,
                                 devices=n_devices)
        rows.append({"device": d.name, "tflops": d.tflops, "kind": d.kind, "hours": hours,
                     "days": hours / 24, "device_hours": hours * n_devices, "note": d.note})
    return {"params": params, "tokens": tokens, "utilization": utilization,
            "devices": n_devices, "flops": train_flops(params, tokens),
            "memory_bytes": memory.as_dict(), "rows": rows}


def device_rows(table: DeviceTable | None = None) -> list[dict[str, Any]]:
    """The device table as plain rows, in the catalog's column order."""
    table = catalog() if table is None else table
    return [{c: getattr(d, c) for c in _devices.COLUMNS} for d in table]


def runs_rows(table: DeviceTable | None = None) -> list[dict[str, Any]]:
    """Published runs with their implied utilization and, where an MFU is reported, predicted hours."""
    return [{"run": r.run, "params": r.params, "active_params": r.active_params, "tokens": r.tokens,
             "device": r.device, "device_hours": r.device_hours, "hours_scope": r.hours_scope,
             "implied_utilization": _runs.implied_utilization(r, table), "reported_mfu": r.reported_mfu,
             "predicted_device_hours": _runs.predicted_device_hours(r, table), "source": r.source}
            for r in _runs.load_runs()]


# --- one row schema for every door's JSON and CSV ---------------------------------------------------

FIGURES = ("hours", "days", "device_hours", "cost_usd", "energy_kwh")


def _f(value: Any) -> Any:
    """A number as a Python float (None stays None)."""
    return None if value is None else float(value)


def _n(value: Any) -> Any:
    """A count as an int when it is whole (7000000000, not 7000000000.0), else a float."""
    f = float(value)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def budget_row(b: Budget) -> dict[str, Any]:
    """One scalar `Budget` as a flat row, keys with units: the same keys for every path (a range
    gives `<figure>_low`, `_expected` and `_high` where a point gives `<figure>`)."""
    job, lay = b.job, b.layout
    row: dict[str, Any] = {
        "name": job.name or (job.model.preset.name if job.model.preset is not None else ""),
        "model": None if job.model.preset is None else job.model.preset.name, "device": asked_device(b),
        "prior_device": prior_row(b),
        "params": _n(b.params), "active_params": _n(b.active_params), "tokens": _n(job.tokens),
        "devices": _n(job.cluster.devices), "flops": _f(b.flops),
        **{k: _n(lay[k]) for k in ("tp", "pp", "ep",
                                   "cp", "dp")},
        "pipeline_stage_layers": _stage_layers(job, lay["pp"]),
        "method": job.training.method,
        "optimizer": None if str(job.training.method).lower() == "inference" else job.training.optimizer,
        "zero_stage": _n(job.layout.zero_stage),  # (an inference job, a forward pass, has no optimizer)
        "recompute": None if str(job.training.method).lower() == "inference" else str(job.layout.recompute),
        "flash_attention": bool(job.layout.flash_attention),
        "memory_per_device_gib": float(b.memory.total) / GIB,
        **{f"{part}_gib": float(v) / GIB for part, v in b.memory.as_dict().items() if part != "total"},
        "usable_gib": None if b.usable_bytes is None else float(b.usable_bytes) / GIB,
        "fits": None if b.fits is None else bool(b.fits),
        "headroom_gib": None if b.headroom_bytes is None else float(b.headroom_bytes) / GIB,
        **step_row(b),
    }
    _put(row, "utilization", b.utilization)
    row.update(utilization_basis=b.utilization_basis, goodput=float(b.goodput), goodput_basis=b.goodput_basis)
    for fig in FIGURES:
        value = getattr(b, fig)
        _put(row, fig, Span(None, None, None) if value is None and b.ranged else value)
    row.update(usd_per_device_hour=_f(b.usd_per_device_hour), price=b.price_label, price_source=b.price_source,
               price_as_of=b.price_as_of, price_age_days=b.price_age_days, pue=float(b.pue))
    return row


STEP_PARTS = ("compute", "tp", "cp", "ep", "bubble", "dp_exposed", "optimizer")  # calc.Step's breakdown
STEP_PART_WORDS = {"compute": "compute", "tp": "TP", "cp": "CP", "ep": "EP", "bubble": "bubble",
                   "dp_exposed": "exposed DP", "optimizer": "optimizer"}
# step_row's keys as a table's rows (TRAIN_STEP, TRAIN_BUDGET at "step"): (key, label with its unit)
STEP_ROWS = (("step_seconds", "step seconds"), ("tokens_per_second_per_device", "tokens/s per device"),
             ("mfu", "MFU (row's dense peak)"), ("mfu_16bit", "MFU (16-bit peak)"), ("hfu", "HFU"),
             *((f"step_{p}_seconds", f"{STEP_PART_WORDS[p]} seconds") for p in STEP_PARTS),
             ("seq_len", "sequence length (tokens)"), ("global_batch_tokens", "global batch (tokens)"))


def step_row(b: Budget) -> dict[str, Any]:
    """The step model's figures (None when the utilization did not come from it): seconds per step,
    tokens per second per device, MFU (6·N_active and attention against the row's dense peak, and
    against the 16-bit peak, the basis runs publish), HFU (the row's peak), seconds by part, and the
    batch the step was timed at."""
    st = b.step
    keys = ("seq_len", "global_batch_tokens", "step_seconds", "tokens_per_second_per_device", "mfu", "mfu_16bit", "hfu",
            *(f"step_{part}_seconds" for part in STEP_PARTS))
    if st is None:
        return dict.fromkeys(keys)
    seq_len, tokens = b.job.layout.sizes()
    values = (_n(seq_len), _n(tokens), _f(st.step_seconds), _f(st.tokens_per_second_per_device), _f(st.mfu),
              _f(st.mfu_16bit), _f(st.hfu), *(_f(st.breakdown[part]) for part in STEP_PARTS))
    return dict(zip(keys, values, strict=True))


def asked_device(b: Budget) -> Any:
    """The device the job asked for (its catalog name), which `b.device` differs from when a range
    is worked out on the same hardware's 16-bit row (calc.prior_device)."""
    d = b.job.cluster.device
    if isinstance(d, str):
        return (catalog() if b.job.cluster.table is None else b.job.cluster.table).get(d).name
    return b.device


def prior_row(b: Budget) -> Any:
    """The row a range was worked out on when it is not the device asked for (an FP8 peak's 16-bit
    row: the prior's utilizations are shares of 16-bit peaks, calc/compose/ranges.py), else None."""
    if not b.ranged or not isinstance(b.device, str):
        return None
    return None if b.device == asked_device(b) else b.device


def _stage_layers(job: Job, pipeline_parallel: Any) -> str | None:
    """Layers per pipeline stage of a model with a shape, "26/27/27" where uneven (calc.physics.stages: the
    memory per device is then the largest stage's); None without a shape or with one stage."""
    shape = job.model.preset.shape if job.model.preset is not None else None
    if not shape or np.ndim(pipeline_parallel) or pipeline_parallel == 1:
        return None
    return "/".join(map(str, stage_layers(shape["n_layers"], int(pipeline_parallel))))


def _put(row: dict[str, Any], key: str, value: Any) -> None:
    if isinstance(value, Span):
        row.update({f"{key}_{label}": _f(v) for label, v in zip(("low", "expected", "high"), value.as_tuple(),
                                                                   strict=True)})
    else:
        row[key] = _f(value)


_POINT = ("utilization", *FIGURES)


def row_keys(ranged: bool | None) -> list[str]:
    """budget_row's keys in order: for points (False), ranges (True) or both (None: a file of
    scenarios may mix them, so its CSV has every column)."""
    b = budget(job_of(params=1e9, utilization=1.0 if ranged is False else "prior"))
    keys = list(budget_row(b))
    if ranged is None:
        out: list[str] = []
        for k in keys:
            stem = k.rsplit("_", 1)[0]
            if k.endswith("_low") and stem in _POINT:
                out.append(stem)
            out.append(k)
        return out
    return keys
