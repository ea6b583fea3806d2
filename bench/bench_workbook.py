"""Benchmark: `build`, `verify` (cached values, and with LibreOffice), one LibreOffice recalculation
of the 50-scenario check, and `export` with recalculation and PDF. Prints seconds; asserts nothing.
Goals (issues): build <= 2 s, verify <= 1 s, export <= 10 s on the 2-core machine.
"""

from __future__ import annotations

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


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        book = tmp / "TrainingBudget.xlsm"
        print(f"build:                      {timed(lambda: template.build(book, force=True)):.2f} s (goal <= 2)")
        cli = [sys.executable, "-m", "trainbudget.addin.cli", "verify", "--no-recalc", str(book)]
        print(f"verify, cached values:      {timed(lambda: verify.verify(book, recalc=False)):.2f} s in-process; "
              f"{timed(lambda: subprocess.run(cli, check=True, capture_output=True)):.2f} s as a command "
              "(goal <= 1)")
        print(f"verify, LibreOffice recalc: {timed(lambda: verify.verify(book, recalc=True)):.2f} s")
        from tests.test_libreoffice import _scenario_workbook, _scenarios

        scen = tmp / "scenarios.xlsm"
        _scenario_workbook(book, scen, _scenarios())
        print(f"LibreOffice, 50 scenarios:  {timed(lambda: engine.recalculate(scen, tmp / 'lo')):.2f} s")
        out = timed(lambda: export.export(book, tmp / "budget.xlsx", tmp / "budget.pdf"))
        print(f"export with recalc and PDF: {out:.2f} s (goal <= 10)")


if __name__ == "__main__":
    main()
