"""The planner's search for one device: the device counts a plan considers and, at each count, the
layout the step model times fastest among those that fit the device's usable memory and that the
global batch allows. Units: devices (counts), sequences, tokens, bytes.

Counts (plan_counts): whole instances of the offering doubled, step x 2^k (step: the offering's
devices per instance and --node, calc.planning.offers); for a Cloud TPU the slice shapes sold, then
whole numbers of the largest slice doubled (Multislice); from the fewest that could meet the deadline
at the device's full rate up to max_plan_devices() (16,384: the largest published run, Llama 3.1
405B, arXiv:2407.21783 §3.3, the edge of the runs the prior and the step model were fitted on). Why
doublings: the tensor, pipeline, context and data sizes of a power-of-two count are powers of two,
the splits published runs use (Llama 3.1 405B: TP8 CP1 PP16 DP128 on 16,384 H100, arXiv:2407.21783
Table 4; DeepSeek-V3: PP16 EP64 on 2,048 H800, arXiv:2412.19437 §3.2.2), and a power-of-two global
batch divides among the replicas; the fewest count a deadline needs, rounded to a whole instance,
can be one no one runs (1,568 H100: TP2 PP49 CP4).

Layout at a count (fastest): calc.fit_layouts' layouts at that count, ranked by calc.layout_steps
(the step model's tokens/s per device), the first of those calc.budget can price; fit's memory order
where the step model cannot time the device (a row without memory bandwidth).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..base.errors import TrainingBudgetError
from ..compose.budget import budget, usable_bytes
from ..compose.job import job as make_job
from ..compose.layout_speed import by_speed, layout_steps
from ..compose.step_terms import trained_share
from ..hardware.catalog import DeviceTable
from ..model.shapes import ModelPreset
from ..money.totals import GIB
from ..physics.fit import Search, fit_layouts
from ..physics.parallel import expert_fits
from ..prior.runs import load_runs

LAYOUT_KEYS = ("tp", "pp", "vpp", "cp", "ep", "dp", "zero_stage", "micro_batch", "accumulation", "recompute")


@functools.cache
def max_plan_devices() -> float:
    """The most devices a plan considers: the most devices of any main published run
    (calc/data/runs.csv; 16,384 H100s for Llama 3.1 405B, Llama Team 2024, arXiv:2407.21783 §3.3)."""
    return max(r.devices for r in load_runs() if r.use == "main" and r.devices)


def plan_counts(step: int, slices: tuple[int, ...], low: float, cap: float) -> list[float]:
    """The counts planned, ascending, in [low, cap]: step x 2^k; for a TPU (`slices`: the sizes sold) the sizes that are
    multiples of step, then the largest slice x 2^k (k >= 1) where a multiple of step."""
    if slices:
        sold = [float(s) for s in slices if s % step == 0]
        top, k = slices[-1], 2
        while top * k <= cap:
            if (top * k) % step == 0:
                sold.append(float(top * k))
            k *= 2
    else:
        sold = [float(step * 2 ** k) for k in range(64) if step * 2 ** k <= cap]
    return sorted(n for n in sold if low <= n <= cap)


def _fastest(found: Any, preset: ModelPreset, device: str, search: Search, table: DeviceTable) -> int:
    """The row of `found` the step model times fastest among those calc.budget prices and finds fitting
    (fit's first, in memory order, where the step model cannot time the device); -1 when there is none."""
    ok = _budget_fits(found, preset, device, search, table)
    if not len(ok):
        return -1
    try:  # (a method the step does not time, qlora or inference, is refused: fit's memory order)
        trained = trained_share(search.method, preset, search.trainable)
        order = np.asarray(by_speed(layout_steps(found, preset, device, search.seq, table, trained,
                                                 search.flash_attention)))
    except TrainingBudgetError:
        return int(ok[0])
    return int(order[np.isin(order, ok)][0])


def priced(found: Any) -> np.ndarray:
    """The rows of `found` calc.budget can price: expert parallel dividing data x context parallel
    (calc.physics.parallel.expert_fits, the rule of calc.physics.layout.checked_layout and fit_layouts alike)."""
    return np.flatnonzero(expert_fits(found.dp, found.cp, found.ep))


def _budget_fits(found: Any, preset: ModelPreset, device: str, search: Search, table: DeviceTable) -> np.ndarray:
    """The rows of `found` calc.budget prices (priced) and whose bytes per device it also finds within the
    usable memory: one broadcasting Budget over the rows, so a plan shows only a layout the Budget it
    prints calls fitting (both shard ZeRO over data x context ranks; fit's reserve and activations are
    the Budget's)."""
    rows = priced(found)
    if not len(rows):
        return rows
    names = {"tp": found.tp[rows], "pp": found.pp[rows], "cp": found.cp[rows],
             "ep": found.ep[rows], "zero_stage": found.zero_stage[rows], "activations": found.activations_bytes[rows]}
    b = budget(make_job(model=preset, tokens=1e9, device=device, table=table, method=search.method,
                        trainable=search.trainable, utilization=1.0,
                        devices=float(found.tp[0] * found.pp[0] * found.cp[0] * found.dp[0]),
                        **{k: np.asarray(v, dtype=np.float64) for k, v in names.items()}))
    return rows[np.broadcast_to(np.asarray(b.fits, dtype=bool), rows.shape)]


def layout_at(preset: ModelPreset, device: str, n: float, search: Search, table: DeviceTable,
              cache: dict[tuple[Any, ...], Any]) -> dict[str, Any] | None:
    """The fastest layout of `n` devices (module doc) as flat names (calc.job's, and `dp`,
    `accumulation`, `activations` bytes), or None when none fits and the batch allows."""
    usable = usable_bytes(device, table)
    key = ("layout", preset.name, device, usable, n, search)
    if key in cache:
        return cache[key]
    found = fit_layouts(preset, device, int(n), search.with_(memory_gib=usable / GIB, explain=False), table=table)
    i = _fastest(found, preset, device, search, table) if len(found) else -1
    cache[key] = None if i < 0 else {
        "tp": int(found.tp[i]), "pp": int(found.pp[i]), "vpp": int(found.vpp[i]),
        "cp": int(found.cp[i]), "ep": int(found.ep[i]), "dp": int(found.dp[i]),
        "zero_stage": int(found.zero_stage[i]), "micro_batch": int(found.micro_batch[i]),
        "accumulation": int(found.accumulation[i]), "recompute": str(found.recompute[i]),
        "activations": float(found.activations_bytes[i])}
    return cache[key]


def states_layout(n: float, batch: int) -> dict[str, Any] | None:
    """A model without a shape: data parallel over every device, ZeRO-3, model states only (no
    activations); None past one sequence per device a step (the global batch's sequences)."""
    if n > batch:
        return None
    return {"tp": 1, "pp": 1, "vpp": 1, "cp": 1, "ep": 1, "dp": int(n), "zero_stage": 3, "micro_batch": None,
            "accumulation": None, "recompute": None, "activations": 0.0}


def job_names(layouts: list[dict[str, Any]], counts: list[float], timed: bool) -> dict[str, Any]:
    """calc.job's flat names for the layouts at `counts` (arrays, one element per count; `timed`: with
    the step model's schedule, micro-batch, virtual stages and recompute: fit's names, which the step
    times as calc.step.layout.CODES says)."""
    names: dict[str, Any] = {"devices": np.asarray(counts, dtype=np.float64)}
    for key in ("tp", "pp", "cp", "ep", "zero_stage", "activations"):
        names[key] = np.asarray([float(lay[key]) for lay in layouts])
    if timed:
        names["vpp"] = np.asarray([float(lay["vpp"]) for lay in layouts])
        names["micro_batch"] = np.asarray([float(lay["micro_batch"]) for lay in layouts])
        names["recompute"] = np.asarray([lay["recompute"] for lay in layouts])
    if len(counts) == 1:
        names = {k: (v[0].item() if isinstance(v[0], np.generic) else v[0]) for k, v in names.items()}
    return names


def too_many(days: float, n: float, cap: float) -> str:
    """The note where the deadline needs more devices than the planner considers."""
    count = f"{n / 1e6:,.1f}M" if n >= 1e6 else f"{n:,.0f}"
    return (f"{days:g} day{'' if days == 1 else 's'} needs at least {count} devices at the device's full rate, "
            f"more than the {cap:,.0f} the planner considers")


def fewest_at_full_rate(hours_one: float, days: float) -> float:
    """The fewest devices that could meet `days`: the hours of one device at utilization 1 over the
    deadline's hours (no layout does better than the device's rate)."""
    return max(1.0, hours_one / (24.0 * days)) if math.isfinite(hours_one) else math.inf
