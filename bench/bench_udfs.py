"""Benchmark: the UDF layer's own cost per cell for a 10,000-cell range, beyond the calc call.

Run: python bench/bench_udfs.py (goal: <= 5 us per cell). Prints figures; asserts nothing.
"""

from __future__ import annotations

import timeit

import numpy as np

from trainbudget import calc
from trainbudget.addin.udf import udfs

H100 = "H100 SXM, BF16 tensor core, dense"


def main(cells: int = 10_000) -> None:
    rng = np.random.default_rng(0)
    params = rng.uniform(1e8, 1e12, (cells, 1))
    as_excel = tuple(tuple(row) for row in params.tolist())  # what COM hands over: row tuples
    udf = min(timeit.repeat(lambda: udfs.TRAIN_HOURS(as_excel, 1e12, H100, 0.4, 8), number=5, repeat=5)) / 5
    core = min(timeit.repeat(lambda: calc.train_hours(params, 1e12, H100, utilization=0.4, devices=8),
                             number=5, repeat=5)) / 5
    print(f"UDF over {cells:,} cells: {udf * 1e3:.2f} ms; calc alone {core * 1e3:.2f} ms; "
          f"layer's own cost {(udf - core) / cells * 1e6:.3f} us per cell (goal <= 5)")


if __name__ == "__main__":
    main()
