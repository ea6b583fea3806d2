"""The layout's identity, checked: data parallel = devices / (tensor · pipeline · context), expert
parallel inside it (Megatron-Core, DeepSpeed-MoE: calc.layout_data_parallel), and the parameter
split a layout shards (`check_parts`). Counts in, counts out; each check names the argument."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.arith import integral
from ..base.checks import _index, whole
from ..base.errors import TrainingBudgetError, broadcasts, show

# Scalar fast paths: a Python float in gives Python arithmetic (no numpy call: an Excel cell is a
# scalar call), an array in gives numpy's; the same rule either way.

def _any(condition: Any) -> bool:
    """Whether any element holds (a Python bool as it is)."""
    return condition if condition is True or condition is False else bool(np.any(condition))


def _mod(a: Any, b: Any) -> Any:
    return a % b if type(a) is float and type(b) is float else np.mod(a, b)


def _first(bad: Any, **values: Any) -> tuple[str, str]:
    """Where the first offending element is ('' for a scalar, '[i]' in an array) and the values
    there, shown as 'name=value, ...' (checked numbers, broadcast together)."""
    if bad is True:
        return "", ", ".join(f"{k}={show(v)}" for k, v in values.items())
    arrays = np.broadcast_arrays(np.asarray(bad), *(np.asarray(v, float) for v in values.values()))
    flat = int(np.argmax(arrays[0])) if arrays[0].ndim else 0
    idx = np.unravel_index(flat, arrays[0].shape)
    shown = ", ".join(f"{k}={show(a[idx])}" for k, a in zip(values, arrays[1:], strict=True))
    return _index(arrays[0].shape, flat), shown


@broadcasts
def layout_data_parallel(devices: Any, tensor_parallel: Any = 1, pipeline_parallel: Any = 1,
                         context_parallel: Any = 1, expert_parallel: Any = 1) -> np.ndarray:
    """Data-parallel size devices / (tensor · pipeline · context), checked.

    Convention (Megatron-Core, DeepSpeed-MoE): `devices` is the whole job; tensor, pipeline and
    context parallelism split each model replica; data parallelism is what remains; expert
    parallelism lives inside data parallelism (expert_parallel must divide it), so expert
    weights are split over tensor · pipeline · expert ranks and their ZeRO shards over
    data / expert ranks (Rajbhandari et al. 2022, "DeepSpeed-MoE", arXiv:2201.05596, §5;
    Megatron-Core MoE docs, "expert parallelism").
    """
    return checked_layout(devices, tensor_parallel, pipeline_parallel, context_parallel, expert_parallel)[-1]


def checked_layout(devices: Any, tensor_parallel: Any = 1, pipeline_parallel: Any = 1,
                   context_parallel: Any = 1, expert_parallel: Any = 1,
                   devices_checked: bool = False, sizes_checked: bool = False) -> tuple[Any, ...]:
    """(devices, tensor, pipeline, context, expert, data parallel), each checked (layout_data_parallel);
    `devices_checked`: `devices` is already whole("devices", ...)'s result; `sizes_checked`: so are
    the four parallel sizes (calc.budget's scalar path)."""
    n = devices if devices_checked else whole("devices", devices)
    if sizes_checked:
        t, p, c, e = tensor_parallel, pipeline_parallel, context_parallel, expert_parallel
    else:
        t = whole("tensor_parallel", tensor_parallel)
        p = whole("pipeline_parallel", pipeline_parallel)
        c = whole("context_parallel", context_parallel)
        e = whole("expert_parallel", expert_parallel)
    split = t * p * c
    dp, bad = _quotient(n, split)
    if bad:
        at, got = _first(_mod(n, split) != 0, devices=n, tensor_parallel=t, pipeline_parallel=p,
                         context_parallel=c)
        raise TrainingBudgetError(
            f"devices{at} must be divisible by tensor_parallel · pipeline_parallel · context_parallel "
            f"(got {got})")
    if _quotient(dp * c, e)[1]:  # calc/physics/parallel.py: e divides data x context parallel
        at, got = _first(_mod(dp * c, e) != 0, expert_parallel=e, data_parallel=dp, context_parallel=c)
        raise TrainingBudgetError(
            f"expert_parallel{at} must divide data x context parallel (devices / (tensor · pipeline)) (got {got})")
    return n, t, p, c, e, dp


def _quotient(a: Any, b: Any) -> tuple[Any, bool]:
    """(a / b, whether some a is not a multiple of b) for whole numbers. Below 2^53 a / b is a
    whole number exactly when b divides a (a non-multiple is at least 1/b from one, more than
    half a unit in the last place), so arrays need a floor, not numpy.mod's slow remainder."""
    if type(a) is float and type(b) is float:
        return a / b, a % b != 0
    if type(b) is float and b == 1.0 and isinstance(a, np.ndarray) and a.ndim:
        return a, False
    q = a / b
    if np.size(a) and float(np.max(a)) < 2.0 ** 53:
        return q, not integral(np.asarray(q))
    return q, _any(_mod(a, b) != 0)


def check_parts(exp: Any, stage_p: Any, n: Any) -> None:
    """Refuse expert_params + stage_params above params (checked numbers)."""
    if type(exp) is float and type(stage_p) is float and exp == 0.0 and stage_p == 0.0:
        return  # 0 + 0 is below every checked (positive) count: no pass
    bad = exp + stage_p > n
    if _any(bad):
        at, got = _first(bad, expert_params=exp, stage_params=stage_p, params=n)
        raise TrainingBudgetError(f"expert_params{at} + stage_params{at} must be <= params{at} (got {got})")
