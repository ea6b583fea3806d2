"""Back-test of the utilization prior: leave each published main run out, predict its device-hours.

Run: python bench/backtest.py [--global]. Prints one line per run and, per set (every main run;
runs with reported hours; MFU-only runs; sensitivity runs scored out of sample), the share
inside the low-high band (goal >= 85%), the median error of the expected value (goal <= 15%)
and the median band width high/low (goal <= x2.2). `--global` scores the shipped prior of
2026-11 (10th/50th/90th percentiles of all other runs) for comparison.
"""

from __future__ import annotations

import sys

from trainbudget.calc.backtest import GOALS, backtest


def main(argv: list[str]) -> None:
    method = "global" if "--global" in argv else "ridge"
    result = backtest(method=method)
    print(f"{'run':26} {'kind':11} {'observed':>11} {'low':>11} {'expected':>11} {'high':>11}  in  error")
    for r in result.rows:
        print(f"{r.run:26} {r.kind:11} {r.observed:11.4g} {r.low:11.4g} {r.expected:11.4g} {r.high:11.4g}  "
              f"{'y' if r.inside else 'n':2}  {r.error:.2f}")
    print(f"\nprior: {method}; goals: inside >= {GOALS['inside_fraction']:.0%}, median error <= "
          f"{GOALS['median_error']:.0%}, median band <= x{GOALS['median_width']:g}")
    print(f"{'set':12} {'runs':>4} {'inside':>7} {'error':>6} {'band':>6}")
    for kind, s in result.summary().items():
        print(f"{kind:12} {s['runs']:4d} {s['inside_fraction']:7.0%} {s['median_error']:6.0%} "
              f"{'x' + format(s['median_width'], '.2f'):>6}")
    print(f"goals met on every main run: {'yes' if result.meets_goals() else 'NO'}")


if __name__ == "__main__":
    main(sys.argv[1:])
