"""Matmul backends for `trainbudget measure`: numpy (always), torch (CUDA, MPS or CPU), MLX.

A backend makes random square operands in a dtype, multiplies them, and synchronizes the
device so the clock reads finished work. Each reports its version and the hardware it ran on.
"""

from __future__ import annotations

import importlib.util
import platform
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ... import calc


@dataclass
class Backend:
    """One way to multiply matrices: `name` (numpy, torch, mlx), `device` (cpu, cuda, mps, gpu)."""

    name: str
    device: str
    dtypes: tuple[str, ...]
    version: str
    hardware: str

    def operands(self, n: int, dtype: str, seed: int) -> tuple[Any, Any]:
        """Two random n x n matrices (standard normal, never zeros) in `dtype`, on the device."""
        rng = np.random.default_rng(seed)
        a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
        return self.put(a, dtype), self.put(b, dtype)

    def put(self, x: np.ndarray, dtype: str) -> Any:
        return x.astype({"fp64": np.float64, "fp32": np.float32}[dtype])

    def matmul(self, a: Any, b: Any, dtype: str) -> Any:
        return a @ b

    def sync(self, c: Any) -> None:
        """Wait until `c` is computed (numpy is synchronous)."""

    def rows(self, x: Any, idx: np.ndarray) -> np.ndarray:
        """Rows `idx` of `x` as float64 numpy."""
        return np.asarray(x[idx], dtype=np.float64)

    def full(self, x: Any) -> np.ndarray:
        return np.asarray(x, dtype=np.float64)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def numpy_backend() -> Backend:
    return Backend("numpy", "cpu", ("fp32", "fp64"), np.__version__, _cpu_model())


class TorchBackend(Backend):
    """torch on CUDA, MPS or the CPU; tf32 turns on TF32 tensor cores for fp32 inputs."""

    _DTYPES: ClassVar[dict[str, str]] = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16",
                                          "fp16": "float16"}

    def put(self, x: np.ndarray, dtype: str) -> Any:
        import torch

        if dtype == "fp8":
            return torch.from_numpy(x).to(self.device).to(torch.float8_e4m3fn)
        return torch.from_numpy(x).to(self.device).to(getattr(torch, self._DTYPES[dtype]))

    def matmul(self, a: Any, b: Any, dtype: str) -> Any:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        if dtype == "fp8":  # scaled matmul, B column-major as cuBLASLt requires
            one = torch.ones((), device=self.device)
            return torch._scaled_mm(a, b.t().contiguous().t(), scale_a=one, scale_b=one,
                                    out_dtype=torch.bfloat16)
        return a @ b

    def sync(self, c: Any) -> None:
        import torch

        if self.device == "cuda":
            torch.cuda.synchronize()
        elif self.device == "mps":
            torch.mps.synchronize()

    def rows(self, x: Any, idx: np.ndarray) -> np.ndarray:
        return x[idx.tolist()].float().cpu().double().numpy()

    def full(self, x: Any) -> np.ndarray:
        return x.float().cpu().double().numpy()


def torch_backend() -> Backend | None:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        fp8 = ("fp8",) if (major, minor) >= (8, 9) else ()
        return TorchBackend("torch", "cuda", ("bf16", "fp16", "tf32", "fp32", *fp8), torch.__version__,
                            torch.cuda.get_device_name())
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return TorchBackend("torch", "mps", ("fp32", "bf16", "fp16"), torch.__version__, "Apple GPU (MPS)")
    return TorchBackend("torch", "cpu", ("fp32", "bf16"), torch.__version__, _cpu_model())


class MlxBackend(Backend):
    _DTYPES: ClassVar[dict[str, str]] = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}

    def put(self, x: np.ndarray, dtype: str) -> Any:
        import mlx.core as mx

        return mx.array(x).astype(getattr(mx, self._DTYPES[dtype]))

    def sync(self, c: Any) -> None:
        import mlx.core as mx

        mx.eval(c)

    def rows(self, x: Any, idx: np.ndarray) -> np.ndarray:
        return self.full(x)[idx]

    def full(self, x: Any) -> np.ndarray:
        import mlx.core as mx

        return np.asarray(x.astype(mx.float32), dtype=np.float64)


def mlx_backend() -> Backend | None:
    if importlib.util.find_spec("mlx") is None:
        return None
    import mlx.core as mx

    return MlxBackend("mlx", "gpu", ("fp32", "bf16", "fp16"), getattr(mx, "__version__", "?"), _cpu_model())


FINDERS = {"torch": torch_backend, "mlx": mlx_backend, "numpy": numpy_backend}


def choose(name: str = "auto") -> Backend:
    """The named backend, or with 'auto' the fastest present: torch on a GPU, MLX, torch MPS, numpy."""
    if name != "auto":
        if name not in FINDERS:
            raise calc.TrainingBudgetError(f"backend must be auto, {', '.join(FINDERS)} (got {name!r})")
        found = FINDERS[name]()
        if found is None:
            raise calc.TrainingBudgetError(f"backend {name!r} is not installed")
        return found
    torch_b, mlx_b = torch_backend(), mlx_backend()
    for candidate in (torch_b if torch_b and torch_b.device == "cuda" else None, mlx_b,
                      torch_b if torch_b and torch_b.device == "mps" else None):
        if candidate is not None:
            return candidate
    return numpy_backend()
