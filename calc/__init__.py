"""trainbudget.calc: the training-budget calculator, pure numpy.

Every numeric argument takes a scalar, a list or an array and broadcasts like numpy;
scalars in give a Python float out. Units are in the names: params (count), tokens (count),
tflops (1e12 FLOP/s), bytes, GB (1e9 bytes), GiB (2^30 bytes: device memory), hours, usd, kwh.
One job, one answer: `budget(Job(...))` composes every figure of a job into one `Budget`.
"""

from .backtest import backtest
from .budget import Budget, Job, Owned, Span, budget, usable_bytes
from .checks import TrainingBudgetError, UnknownDeviceError
from .config import load_config
from .devices import Device, DeviceTable, catalog, load_devices
from .flops import chinchilla_tokens, train_flops
from .layouts import Layouts, fit_layouts
from .memory import (
                     METHODS,
                     OPTIMIZERS,
                     MemoryBreakdown,
                     activation_bytes,
                     train_bytes,
                     train_memory,
)
from .models import ModelPreset, ParamBreakdown, model_params, model_preset, model_presets
from .owned import owned_usd_per_device_hour
from .prices import load_prices
from .prior import GOODPUT, UtilizationPrior, utilization_prior
from .ranges import train_range
from .report import SEED_DEVICES, SEED_PARAMS, SEED_TOKENS, budget_rows
from .schedule import (
                     device_tflops,
                     devices_needed,
                     gpu_hours,
                     train_cost,
                     train_energy_kwh,
                     train_hours,
)
from .units import parse_count

__all__ = [
    "METHODS", "OPTIMIZERS", "SEED_DEVICES", "SEED_PARAMS", "SEED_TOKENS", "Device", "DeviceTable",
    "MemoryBreakdown", "TrainingBudgetError", "UnknownDeviceError", "activation_bytes", "budget_rows", "catalog",
    "chinchilla_tokens", "device_tflops", "devices_needed", "gpu_hours", "load_devices", "parse_count",
    "train_bytes", "train_cost", "train_energy_kwh", "train_flops", "train_hours", "train_memory",
    "GOODPUT", "UtilizationPrior", "backtest", "load_prices", "owned_usd_per_device_hour", "train_range",
    "utilization_prior", "Budget", "Job", "Owned", "Span", "budget", "usable_bytes",
]
__all__ += ["Layouts", "ModelPreset", "ParamBreakdown", "fit_layouts", "load_config", "model_params",
            "model_preset", "model_presets"]
