"""Benchmark: fit_layouts over every layout of a 16,384-device job.

Run: python bench/bench_fit.py. Prints figures; asserts nothing (the goal lives in issues 12
and 18: every layout for 16,384 devices in <= 50 ms, now with uneven pipeline depths, virtual
stages, context parallel, recompute and micro-batch searched as well).
"""

from __future__ import annotations

import timeit

from trainbudget.calc import fit_layouts

H100 = "H100 SXM, BF16 tensor core, dense"
CASES = [("Llama 3.1 405B", 16384), ("Llama 3.1 70B", 16384), ("Mixtral 8x7B", 16384),
         ("Qwen3-30B-A3B", 16384), ("Llama 3.1 8B", 16384)]


def best_ms(model: str, devices: int, repeats: int = 7) -> tuple[float, int, int]:
    """Best wall time (ms), layouts evaluated, layouts that fit."""
    fit_layouts(model, H100, devices)  # warm caches (presets, catalog)
    everything = fit_layouts(model, H100, devices, memory_gib=1e9)  # nothing excluded by memory
    times = timeit.repeat(lambda: fit_layouts(model, H100, devices), number=1, repeat=repeats)
    return min(times) * 1e3, len(everything), len(fit_layouts(model, H100, devices))


def main() -> None:
    print(f"{'model':<16} {'devices':>7} {'layouts':>7} {'fit':>5} {'best ms':>8}")
    for model, devices in CASES:
        ms, n, fit = best_ms(model, devices)
        print(f"{model:<16} {devices:>7} {n:>7} {fit:>5} {ms:>8.2f}")


if __name__ == "__main__":
    main()
