"""The measure command's presentation: progress, text, and the Devices row it records."""

from __future__ import annotations

from pathlib import Path

from ... import calc
from . import devices_write
from .backends import Backend
from .core import SUSTAINED_SPREAD, Measurement, SizeResult, measure


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
    """Per-size rates (each the median of its repeats), then the sustained rate and its provenance."""
    lines = [f"{'n':>6} {'TFLOP/s':>9} {'repeats':>8} {'spread':>7} {'error':>9}"]
    lines += [f"{s.n:>6} {s.tflops:>9.3f} {s.repeats:>8} {s.spread:>7.1%} {s.error:>9.1e}" for s in m.sizes]
    best = m.best
    head = ("sustained rate" if m.sustained else
            f"rate NOT sustained (every size varied by more than {SUSTAINED_SPREAD:.0%} across repeats; "
            "measure again on an idle machine or with more --seconds)")
    lines.append(f"{head}: {best.tflops:.3g} TFLOP/s ({m.backend} {m.dtype}, n={best.n}: the median of "
                 f"{best.repeats} repeats, spread {best.spread:.1%}) on "
                 f"{m.hardware}" + (" (interrupted: partial sweep)" if m.interrupted else ""))
    return "\n".join(lines) + "\n"


def as_device(m: Measurement, name: str | None = None, memory_gib: float | None = None,
              watts: float | None = None) -> calc.Device:
    """The measurement as a Devices row: kind measured, its provenance as the source; the rate
    rounded to three significant digits (the repeats do not support more)."""
    label = name or f"{m.hardware}, {m.backend} {m.dtype} matmul (measured)"
    sizes = ", ".join(str(s.n) for s in m.sizes)
    note = f"sizes swept: {sizes}" + ("" if m.sustained else f"; not sustained (spread {m.best.spread:.0%})")
    return calc.Device(name=label.strip(), tflops=float(f"{m.best.tflops:.3g}"), kind="measured",
                       hardware=m.hardware, precision=m.dtype, memory_gib=memory_gib, watts=watts,
                       source=m.source(), as_of=m.date, note=note)


def check_writable(workbook: Path, name: str | None = None) -> None:
    """Refuse a workbook `record` could not write (or a bad device name), before measuring."""
    if name is not None:
        devices_write.check_name(name)
    devices_write.check_writable(workbook)


def record(workbook: Path, device: calc.Device) -> str:
    """Add or update the row in the workbook's Devices table ('added' or 'updated')."""
    return devices_write.upsert_device(workbook, device)
