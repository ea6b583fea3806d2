"""Back-test of the utilization prior: leave each published main run out, predict its device-hours.

Run: python bench/backtest.py [--global | --band loo] [--no-tokens] [--compare]. Prints one line
per run and, per set (every main run;
runs with reported hours; MFU-only runs; sensitivity runs scored out of sample), the share
inside the low-high band (goal >= 85%), the median error of the expected value (goal <= 15%)
and the median band width high/low (goal <= x2.2). `--global` scores the shipped prior of
2026-11 (10th/50th/90th percentiles of all other runs) for comparison. `--band loo` scores the
native-expressible band (constant multipliers: percentiles of the fold's leave-one-out residuals
at 0.85·(1 + 1/n)) instead of the jackknife+; `--no-tokens` the model without tokens per param;
`--compare` prints only the summary line of each of the four ridge variants and the global prior
(scored at the goodput it shipped with, 0.90).

Variants tried for the prior's calibration (2026-12-01; every main run, leave-one-out, each fold's
band from its own training runs; inside (of 41) / median error / median band; "met" = all three):
  plain ridge, goodput 0.90 assumed (shipped to 2026-12-01)          35  13.6%  x2.26
  the lead's: penalty 0.03/0.1/1/3, shortest interval, quantile methods
  linear/higher/hazen/median_unbiased, symmetric |residual| jackknife,
  per-fold penalty by inner LOO (mse, mad, width)                     best x2.22-2.24 at 35
  scope column (log goodput fitted), unpenalized; goodput 0.80       34  14.8%  x2.19
    penalty 0.3 toward goodput 1                                      34  14.6%  x2.19
    penalty 0.3 / 1 / 3 toward goodput 0.90 (Llama 3)                 34 / 34 / 35  14.7 / 14.4 / 14.7%
                                                                      x2.19 / x2.19 / x2.204
  Huber weights (c = 1.345, MAD scale), goodput 0.90 assumed         35  12.4%  x2.22
  Huber + scope column, unpenalized (SHIPPED)                         35  14.2%  x2.09  met
    the same, scope penalty 0.3 toward goodput 0.90                   35  14.4%  x2.09  met
  weighted least squares, tier A 1, tier B 0.5                        34  12.4%  x2.24
    the same + scope column                                           34  16.1%  x2.14
Sensitivity of the shipped variant (not chosen on it; the textbook c = 1.345 and the earlier
PENALTY 0.3 kept): c = 1.0 / 1.2 met (13.0%, 14.4%); c = 1.5 / 2.0 miss the error goal (15.4%,
15.7%); c = 3.0 misses inside (34); ridge penalty 0.1 / 1.0 met (x2.10, x2.15). The margins are
thin: 35 of 41 inside (34 fails), error 14.2% against 15%.
Re-read for the largest errors (TinyLlama, DeepSeek LLM 67B, Llama 3 / 3.1 8B, GPT-3,
DeepSeek-V3): every row's figures match the source it quotes; none corrected.
"""

from __future__ import annotations

import sys

from trainbudget.calc import BACKTEST_GOALS as GOALS, LLAMA3_GOODPUT, backtest

VARIANTS = (("jackknife+", frozenset()), ("jackknife+", frozenset({"tokens"})), ("loo", frozenset()),
            ("loo", frozenset({"tokens"})))


def compare() -> None:
    """One summary line (every main run) per ridge variant, and the global prior's."""
    print(f"{'model':44} {'runs':>4} {'inside':>7} {'error':>6} {'band':>6}  goals")
    results = [(f"ridge, band {band}, {'no tokens' if dropped else 'with tokens'}",
                backtest(band=band, dropped=dropped)) for band, dropped in VARIANTS]
    for label, r in [*results, ("global p10/p50/p90 (shipped 2026-11)",
                                     backtest(method="global", goodput=LLAMA3_GOODPUT))]:
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
    result = backtest(method=method, band=band, dropped=dropped,
                      **({"goodput": LLAMA3_GOODPUT} if method == "global" else {}))
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
