"""The step model's few constants, fitted on the packaged measured layouts, and leave-one-out.

Constants (no per-model or per-row factor): the achievable share of the dense peak a training
matmul mix reaches, one per device family (FAMILIES: Ampere, Hopper, Blackwell, TPU); the share
of the FP8 peak's gain an FP8 recipe realizes (quantization and scaling overheads, non-FP8 GEMMs);
the HBM bytes per hidden element, layer and token of the memory-bound vector work; and the
overlap efficiency of DP traffic with the compute it hides behind; the flash-attention kernels'
rate relative to the GEMMs' (how that rate falls on short tiles, ATTENTION_TILE, is fixed from a
kernel benchmark, not fitted). Fitted by coordinate search on a soft-L1 loss of the log errors
(robust to the few rows whose layout is guessed), over rows marked `use=fit` in
calc/data/steptime_measured.csv.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .hardware import FAMILIES

# The attention kernels' half-rate tile length, tokens (calc.step.terms.attention_rate): fixed from the
# published kernel benchmark, not fitted. FlashAttention-3 on H100 at head dim 128 (Shah et al. 2024,
# arXiv:2407.08608 Fig. 5d, causal forward: 292, 423, 521, 579, 602, 616 TFLOP/s at 512, 1K, 2K, 4K,
# 8K, 16K tokens; Fig. 6, backward: 316, 424, 501, 542, 559, 561) follows rate x L / (L + T) with T =
# 567 (forward) and 409 (backward); weighted by their FLOPs (forward 1, backward 2.5: FA3 s.4.1) as a
# training step runs them, T = 452 (least squares on the six sizes). The forward without the causal
# mask (Fig. 5c) saturates sooner, T = 167.
ATTENTION_TILE = 450.0


@dataclass(frozen=True)
class Constants:
    """matmul_fraction: per FAMILIES entry, share of the dense peak reached (0-1); fp8_gain: share
    of the FP8 rate reached relative to that; vector_bytes: HBM bytes per hidden element, layer and
    token; overlap: share of the hidden-able DP traffic actually hidden (0-1); attention_ratio: the
    flash-attention kernels' achievable rate on long tiles as a share of the family's matmul rate
    (0-1.5); attention_tile: the tile length (tokens) at which they reach half that (ATTENTION_TILE,
    fixed from FlashAttention-3's benchmark, not fitted)."""

    matmul_fraction: tuple[float, ...]
    fp8_gain: float
    vector_bytes: float
    overlap: float
    attention_ratio: float = 1.0
    attention_tile: float = 0.0


# Fitted by fit_constants() on calc/data/steptime_measured.csv (57 use=fit rows) on 2026-12-07, with
# unfused attention where a row ran it (its flash_attention column: GPT-OSS's sinks under Transformer
# Engine), attention's rate falling on short tiles (ATTENTION_TILE), context parallel's per-step ring send and
# the routed experts' gradients reduced over the expert data-parallel group, a TPU's TP and CP
# groups on one torus axis (calc.step.hardware's scale_up_axis_GBps) and the pipeline at its busiest
# stage's pace;
# bench/bench_steptime.py refits and prints them with leave-one-out figures. fp8_gain, vector_bytes
# and overlap sit at their bounds (an FP8 GEMM cannot beat 2x; 200 bytes is about Korthikanti et
# al. 2022 s.4's 34 bytes of activations per element and layer, written and read in the forward,
# the backward and the recompute).
CONSTANTS = Constants(matmul_fraction=(0.647, 0.690, 0.785, 0.914), fp8_gain=1.0, vector_bytes=200.0, overlap=0.100,
                      attention_ratio=0.256, attention_tile=ATTENTION_TILE)

# overlap from 0.1: below it the measured rows' loss falls 2.2% (0.244 to 0.239, at 0.02) while the
# layouts published runs chose drop out of the step model's top ranks (tests/calc/step/
# test_published_layouts.py, test_published_plans.py: Llama 3.1 8B FSDP on 128 H100 from 110th to
# 261st), a second measurement the fit does not see
_BOUNDS = {"fp8_gain": (0.3, 1.0), "vector_bytes": (0.0, 200.0), "overlap": (0.1, 1.0),
           "attention_ratio": (0.1, 1.5)}


SOFT = 0.15  # log error where the loss turns from quadratic to linear (about 15%: the goal's band)


def _loss(predicted: np.ndarray, measured: np.ndarray) -> float:
    """Soft-L1 (pseudo-Huber) loss of the log errors: quadratic below SOFT, linear above, so a few
    rows the model cannot express (a guessed layout, an unmodelled kernel) pull on the constants
    no harder than a fixed amount each (Huber 1964; smooth, so the line search converges)."""
    err = np.log(predicted / measured) / SOFT
    return float(np.mean(np.sqrt(1.0 + err**2) - 1.0))


def _vector(c: Constants) -> list[float]:
    return [*c.matmul_fraction, c.fp8_gain, c.vector_bytes, c.overlap, c.attention_ratio]


def _constants(x: list[float], fixed: Constants) -> Constants:
    """The fitted values `x` (as _vector orders them) with `fixed`'s constants that are not fitted."""
    n = len(FAMILIES)
    return Constants(tuple(x[:n]), x[n], x[n + 1], x[n + 2], x[n + 3], attention_tile=fixed.attention_tile)


def fit_constants(predict: Any, measured: np.ndarray, start: Constants = CONSTANTS, sweeps: int = 6) -> Constants:
    """Constants minimizing the loss of `predict(constants) -> tokens/s per row` against `measured`,
    by golden-section search on one constant at a time, `sweeps` times over."""
    x = _vector(start)
    bounds = [(0.2, 1.0)] * len(FAMILIES) + [_BOUNDS["fp8_gain"], _BOUNDS["vector_bytes"], _BOUNDS["overlap"],
                                          _BOUNDS["attention_ratio"]]
    gold = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(sweeps):
        for i, (lo, hi) in enumerate(bounds):
            def f(v: float, i: int = i) -> float:
                y = list(x)
                y[i] = v
                return _loss(predict(_constants(y, start)), measured)
            a, b = lo, hi
            for _ in range(30):
                c, d = b - gold * (b - a), a + gold * (b - a)
                if f(c) < f(d):
                    b = d
                else:
                    a = c
            x[i] = (a + b) / 2.0
    return _constants([float(v) for v in x], start)


def leave_one_out(predict_rows: Any, measured: np.ndarray, start: Constants = CONSTANTS,
                  sweeps: int = 4) -> np.ndarray:
    """Each row's prediction from constants fitted without it: `predict_rows(constants, mask)`
    returns tokens/s for the rows in `mask` (a boolean array over `measured`)."""
    out = np.empty_like(measured)
    everything = np.ones(measured.shape, dtype=bool)
    for i in range(measured.size):
        keep = everything.copy()
        keep[i] = False
        c = fit_constants(lambda k, keep=keep: predict_rows(k, keep), measured[keep], start, sweeps)
        one = ~keep
        out[i] = predict_rows(c, one)[0]
    return out


def with_fraction(c: Constants, family: str, value: float) -> Constants:
    """`c` with one family's matmul fraction replaced (a team's own measured rows, for example)."""
    fr = list(c.matmul_fraction)
    fr[FAMILIES.index(family)] = value
    return replace(c, matmul_fraction=tuple(fr))
