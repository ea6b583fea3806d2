"""Back-test of the utilization prior: leave each published run out, predict its device-hours.

Run: python bench/backtest.py [--by-family]. Prints one line per run and the two figures per set
(runs with reported device-hours; all runs, MFU-only runs judged on the hours their MFU implies):
share inside the low-high band (goal >= 0.80) and median error of the expected value (goal <= 0.25).
"""

from __future__ import annotations

import sys

from trainbudget.calc.backtest import backtest


def main(argv: list[str]) -> None:
    by_family = "--by-family" in argv
    result = backtest(by_family=by_family)
    print(f"{'run':22} {'kind':5} {'observed':>12} {'low':>12} {'expected':>12} {'high':>12}  in  error")
    for r in result.rows:
        print(f"{r.run:22} {r.kind:5} {r.observed:12.4g} {r.low:12.4g} {r.expected:12.4g} {r.high:12.4g}  "
              f"{'y' if r.inside else 'n':2}  {r.error:.2f}")
    prior = "prior narrowed to the run's device family" if by_family else "prior from all other runs"
    for kind, s in result.summary().items():
        print(f"{kind:5} ({s['runs']} runs, {prior}): inside low-high {s['inside_fraction']:.0%} (goal >= 80%), "
              f"median error {s['median_error']:.0%} (goal <= 25%)")


if __name__ == "__main__":
    main(sys.argv[1:])
