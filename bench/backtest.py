"""Back-test of the utilization prior: leave each published main run out, predict its device-hours.

Run: python bench/backtest.py [--global | --band loo] [--no-tokens] [--compare]. Prints one line
per run and, per set (every main run;
runs with reported hours; MFU-only runs; sensitivity runs scored out of sample), the share
inside the low-high band (goal >= 85%), the median error of the expected value (goal <= 15%)
and the median band width high/low (goal <= x2.2). `--global` scores the shipped prior of
2026-11 (10th/50th/90th percentiles of all other runs) for comparison. `--band loo` scores the
native-expressible band (constant multipliers: percentiles of the fold's leave-one-out residuals
at 0.85·(1 + 1/n)) instead of the jackknife+; `--no-tokens` the model without tokens per param;
`--compare` prints only the summary line of each of the four ridge variants and the global prior.
"""

from __future__ import annotations

import sys

from trainbudget.calc.backtest import GOALS, backtest

VARIANTS = (("jackknife+", frozenset()), ("jackknife+", frozenset({"tokens"})), ("loo", frozenset()),
            ("loo", frozenset({"tokens"})))


def compare() -> None:
    """One summary line (every main run) per ridge variant, and the global prior's."""
    print(f"{'model':44} {'runs':>4} {'inside':>7} {'error':>6} {'band':>6}  goals")
    results = [(f"ridge, band {band}, {'no tokens' if dropped else 'with tokens'}",
                backtest(band=band, dropped=dropped)) for band, dropped in VARIANTS]
    for label, r in [*results, ("global p10/p50/p90 (shipped 2026-11)", backtest(method="global"))]:
        s = r.summary()["all"]
        print(f"{label:44} {s['runs']:4d} {s['inside_fraction']:7.0%} {s['median_error']:6.1%} "
              f"{'x' + format(s['median_width'], '.2f'):>6}  {'met' if r.meets_goals() else 'missed'}")


def main(argv: list[str]) -> None:
    if "--compare" in argv:
        compare()
        return
    method = "global" if "--global" in argv else "ridge"
    band = "loo" if "--band" in argv and argv[argv.index("--band") + 1:][:1] == ["loo"] else None
    dropped = frozenset({"tokens"}) if "--no-tokens" in argv else None
    result = backtest(method=method, band=band, dropped=dropped)
    print(f"{'run':26} {'kind':11} {'observed':>11} {'low':>11} {'expected':>11} {'high':>11}  in  error")
    for r in result.rows:
        print(f"{r.run:26} {r.kind:11} {r.observed:11.4g} {r.low:11.4g} {r.expected:11.4g} {r.high:11.4g}  "
              f"{'y' if r.inside else 'n':2}  {r.error:.2f}")
    print(f"\nprior: {method}{'' if method == 'global' else ', band ' + result.band}"
          f"{', no tokens' if dropped else ''}; goals: inside >= {GOALS['inside_fraction']:.0%}, median error <= "
          f"{GOALS['median_error']:.0%}, median band <= x{GOALS['median_width']:g}")
    print(f"{'set':12} {'runs':>4} {'inside':>7} {'error':>6} {'band':>6}")
    for kind, s in result.summary().items():
        print(f"{kind:12} {s['runs']:4d} {s['inside_fraction']:7.0%} {s['median_error']:6.0%} "
              f"{'x' + format(s['median_width'], '.2f'):>6}")
    print(f"goals met on every main run: {'yes' if result.meets_goals() else 'NO'}")


if __name__ == "__main__":
    main(sys.argv[1:])
