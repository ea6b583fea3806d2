"""Memory and board power of the device a backend ran on, where the backend can read them.

CUDA: total memory from `torch.cuda.get_device_properties(0).total_memory` (bytes; reported here
in GiB = 2^30 bytes, as the Devices table's "Memory GiB" column holds) and the enforced power
limit from NVML (`pynvml`, milliwatts) when pynvml is installed. Apple MLX: the unified memory
size from `mlx.core.metal.device_info()`. Anything else is unknown (None): the user passes
--memory-gib / --watts.
"""

from __future__ import annotations

import importlib.util

from .backends import Backend


def memory_gib(backend: Backend) -> float | None:
    """The device's memory in GiB (2^30 bytes), or None where the backend cannot say."""
    try:
        if backend.name == "torch" and backend.device == "cuda":
            import torch

            return torch.cuda.get_device_properties(0).total_memory / 2**30
        if backend.name == "mlx":
            import mlx.core as mx

            return float(mx.metal.device_info()["memory_size"]) / 2**30
    except Exception:
        return None
    return None


def watts(backend: Backend) -> float | None:
    """The board power limit in watts (NVML), or None where it cannot be read."""
    if backend.name != "torch" or backend.device != "cuda" or importlib.util.find_spec("pynvml") is None:
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            return pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


def missing_text(memory: float | None, power: float | None) -> str:
    """What the recorded row still lacks and which results that leaves empty (empty text if nothing)."""
    lines = []
    if memory is None:
        lines.append("memory is not known (pass --memory-gib): 'Devices needed to fit' shows #N/A for this device")
    if power is None:
        lines.append("board power is not known (pass --watts): 'Energy (kWh)' shows no watts for this device")
    return "\n".join(lines)
