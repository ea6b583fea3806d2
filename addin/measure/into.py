"""The measure command's presentation: progress, text, and the Devices row it records."""

from __future__ import annotations

from pathlib import Path

from ... import calc
from ..workbook import devices_write
from .backends import Backend
from .core import Measurement, SizeResult, measure


def run(backend: Backend, dtype: str, seconds: float, show_progress: bool) -> Measurement:
    """Measure, with a progress bar on a terminal."""
    if not show_progress:
        return measure(backend, dtype, seconds)
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(f"{backend.name} {dtype} matmul", total=seconds)
        import time

        start = time.perf_counter()

        def tick(result: SizeResult) -> None:
            bar.update(task, completed=time.perf_counter() - start,
                       description=f"n={result.n}: {result.tflops:.2f} TFLOP/s")
        return measure(backend, dtype, seconds, progress=tick)


def text(m: Measurement) -> str:
    """Per-size rates, then the best sustained rate and its provenance."""
    lines = [f"{'n':>6} {'TFLOP/s':>9} {'repeats':>8} {'spread':>7} {'error':>9}"]
    lines += [f"{s.n:>6} {s.tflops:>9.3f} {s.repeats:>8} {s.spread:>7.1%} {s.error:>9.1e}" for s in m.sizes]
    best = m.best
    lines.append(f"best sustained: {best.tflops:.3f} TFLOP/s ({m.backend} {m.dtype}, n={best.n}) on "
                 f"{m.hardware}" + (" (interrupted: partial sweep)" if m.interrupted else ""))
    return "\n".join(lines) + "\n"


def as_device(m: Measurement, name: str | None = None) -> calc.Device:
    """The measurement as a Devices row: kind measured, its provenance as the source."""
    label = name or f"{m.hardware}, {m.backend} {m.dtype} matmul (measured)"
    sizes = ", ".join(str(s.n) for s in m.sizes)
    return calc.Device(name=label.strip(), tflops=m.best.tflops, kind="measured", hardware=m.hardware,
                       precision=m.dtype, source=m.source(), as_of=m.date, note=f"sizes swept: {sizes}")


def check_writable(workbook: Path, name: str | None = None) -> None:
    """Refuse a workbook `record` could not write (or a bad device name), before measuring."""
    if name is not None:
        devices_write.check_name(name)
    devices_write.check_writable(workbook)


def record(workbook: Path, device: calc.Device) -> str:
    """Add or update the row in the workbook's Devices table ('added' or 'updated')."""
    return devices_write.upsert_device(workbook, device)
