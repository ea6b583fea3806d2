"""trainbudget.calc: the training-budget calculator, pure numpy.

Every numeric argument takes a scalar, a list or an array and broadcasts like numpy;
scalars in give a Python float out. Units are in the names: params (count), tokens (count),
tflops (1e12 FLOP/s), bytes, GB (1e9 bytes), GiB (2^30 bytes: device memory), hours, usd, kwh.
One job, one answer: `budget(Job(...))` composes every figure of a job into one `Budget`.
"""

from .base.checks import TrainingBudgetError, UnknownDeviceError
from .base.units import parse_count
from .compose.budget import Budget, Job, Owned, Span, budget, usable_bytes
from .compose.ranges import train_range
from .compose.report import SEED_DEVICES, SEED_PARAMS, SEED_TOKENS, budget_rows
from .hardware.catalog import Device, DeviceTable, catalog, load_devices
from .model.hf_config import load_config
from .model.shapes import ModelPreset, ParamBreakdown, model_params, model_preset, model_presets
from .money.owned import owned_usd_per_device_hour
from .money.prices import load_prices
from .money.totals import (
                     device_tflops,
                     devices_needed,
                     gpu_hours,
                     train_cost,
                     train_energy_kwh,
                     train_hours,
)
from .physics.fit import DEFAULT_GLOBAL_BATCH, DEFAULT_SEQ_LEN, Layouts, fit_layouts
from .physics.flops import chinchilla_tokens, train_flops
from .physics.memory import (
                     METHODS,
                     OPTIMIZERS,
                     MemoryBreakdown,
                     activation_bytes,
                     train_bytes,
                     train_memory,
)
from .prior.backtest import backtest
from .prior.utilization import GOODPUT, UtilizationPrior, utilization_prior

__all__ = [
    "METHODS", "OPTIMIZERS", "SEED_DEVICES", "SEED_PARAMS", "SEED_TOKENS", "Device", "DeviceTable",
    "MemoryBreakdown", "TrainingBudgetError", "UnknownDeviceError", "activation_bytes", "budget_rows", "catalog",
    "chinchilla_tokens", "device_tflops", "devices_needed", "gpu_hours", "load_devices", "parse_count",
    "train_bytes", "train_cost", "train_energy_kwh", "train_flops", "train_hours", "train_memory",
    "GOODPUT", "UtilizationPrior", "backtest", "load_prices", "owned_usd_per_device_hour", "train_range",
    "utilization_prior", "Budget", "Job", "Owned", "Span", "budget", "usable_bytes",
]
__all__ += ["DEFAULT_GLOBAL_BATCH", "DEFAULT_SEQ_LEN", "Layouts", "ModelPreset", "ParamBreakdown", "fit_layouts",
            "load_config", "model_params", "model_preset", "model_presets"]
