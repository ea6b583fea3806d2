"""Benchmark: `build`, `verify` (cached values, and with LibreOffice), one LibreOffice recalculation
of the 50-scenario check, `export` with recalculation and PDF, and `verify --no-recalc` of large
workbooks as a command (wall and CPU seconds, peak RSS of the child). Prints; asserts nothing.
Goals: build <= 2 s, verify <= 1 s, export <= 10 s on the 2-core machine; verify of a
1.1M-row workbook under 60 s and 500 MB, of a 200k-row extra sheet under 300 MB.
`--large-only` runs the large-workbook part alone.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from trainbudget.addin import libreoffice as engine
from trainbudget.addin.export import mailcopy as export
from trainbudget.addin.template import build as template
from trainbudget.addin.verify import check as verify

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for the tests' scenario builder


def timed(fn: Callable[[], object], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measured(args: list[str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of `trainbudget ARGS` as its own process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "trainbudget.addin.cli", *args], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) in (0, 1)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def large(tmp: Path, book: Path) -> None:
    from tests.addin.verify.test_verify_large import large_workbook

    for rows, sheets, goal in ((200_000, 1, "300 MB"), (550_000, 2, "60 s, 500 MB")):
        path = large_workbook(book, tmp / f"large-{rows * sheets}.xlsm", rows, sheets)
        wall, cpu, peak = measured(["verify", "--no-recalc", str(path)], tmp)
        print(f"verify, {rows * sheets:,} extra rows ({path.stat().st_size / 1e6:.1f} MB file): {wall:.1f} s wall, "
              f"{cpu:.1f} s CPU, peak {peak:.0f} MB (goal {goal}; load average {os.getloadavg()[0]:.1f})")


def main() -> None:
    if "--large-only" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            book = template.build(Path(tmp) / "TrainingBudget.xlsm").path
            large(Path(tmp), book)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        book = tmp / "TrainingBudget.xlsm"
        print(f"build:                      {timed(lambda: template.build(book, force=True)):.2f} s (goal <= 2)")
        cli = [sys.executable, "-m", "trainbudget.addin.cli", "verify", "--no-recalc", str(book)]
        print(f"verify, cached values:      {timed(lambda: verify.verify(book, recalc=False)):.2f} s in-process; "
              f"{timed(lambda: subprocess.run(cli, check=True, capture_output=True)):.2f} s as a command "
              "(goal <= 1)")
        print(f"verify, LibreOffice recalc: {timed(lambda: verify.verify(book, recalc=True)):.2f} s")
        from tests.workbook.test_native_formulas import _scenario_workbook, _scenarios

        scen = tmp / "scenarios.xlsm"
        _scenario_workbook(book, scen, _scenarios())
        print(f"LibreOffice, 50 scenarios:  {timed(lambda: engine.recalculate(scen, tmp / 'lo')):.2f} s")
        out = timed(lambda: export.export(book, tmp / "budget.xlsx", tmp / "budget.pdf"))
        print(f"export with recalc and PDF: {out:.2f} s (goal <= 10)")
        large(tmp, book)


if __name__ == "__main__":
    main()
