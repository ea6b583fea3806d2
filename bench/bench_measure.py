"""Benchmark: `trainbudget measure`'s numpy rate against the best rate numpy reaches in a long run.

Goal: the 20 s measurement reaches >= 90% of the long run's best. Prints; asserts nothing.
"""

from __future__ import annotations

from trainbudget.addin.measure import backends, core as measure


def main(dtype: str = "fp32") -> None:
    backend = backends.numpy_backend()
    quick = measure.measure(backend, dtype, seconds=20.0)
    long = [measure.time_size(backend, n, dtype, budget_s=30.0) for n in (1024, 2048, 4096, 6144)]
    best = max(long, key=lambda s: s.tflops)
    q = quick.best
    print(f"measure (20 s):    {q.tflops:.4f} TFLOP/s at n={q.n}")
    print(f"long run (2 min):  {best.tflops:.4f} TFLOP/s at n={best.n} ({best.repeats} repeats)")
    print(f"ratio:             {q.tflops / best.tflops:.1%} (goal >= 90%)  on {backend.hardware}")


if __name__ == "__main__":
    main()
