"""Pipeline stages that need not be even: 80 layers on 3 stages are 26 / 27 / 27.

Megatron-Core lets the first and last stages hold fewer layers (--decoder-first-pipeline-num-layers,
--decoder-last-pipeline-num-layers) and Llama 3 405B trained 126 layers on 16 stages with one layer
fewer on the first and the last (7 / 8 x 14 / 7; arXiv:2407.21783, §3.3.2: the first stage holds the
embedding and the most in-flight micro-batches, the last the output layer and the loss), so a
pipeline depth need only be at most the layer count, and the extra layers of an uneven split go to
the middle stages first. Weights per device are those of the BUSIEST stage, ceil(L / p) layers (plus
the input embedding, counted on the first stage by calc.physics.memory's stage_params): the
parameters of such a layout are those of a model whose p stages each hold ceil(L / p) layers.
Activations peak where layers x in-flight micro-batches do (activation_layers). Units: layers and
parameter counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def stage_layers(n_layers: int, stages: int) -> list[int]:
    """Layers on each of `stages` pipeline stages, the extra layers on the middle stages, then the
    last (Llama 3, §3.3.2): 80, 3 -> [26, 27, 27]; 126, 16 -> [7, 8 x 14, 7]."""
    p = int(stages)
    base, extra = divmod(int(n_layers), p)
    order = [*range(1, p - 1), p - 1, 0] if p > 1 else [0]  # who takes an extra layer, in turn
    takes = set(order[:extra])
    return [base + (k in takes) for k in range(p)]


def activation_layers(n_layers: Any, stages: Any) -> Any:
    """The layers whose activations the busiest device holds, in the first stage's units: L for an
    even split. In 1F1B device d keeps p - d micro-batches in flight (Narayanan et al. 2021 s.2.2;
    Korthikanti et al. 2022 s.4.2.3: the first stage stores p), so with stage_layers' split
    (floor(L/p) first, ceil(L/p) on the second) the peak is max(floor x p, ceil x (p - 1)) layer
    micro-batches; returned as that over 1, the layer count an even split with the first stage's
    p in flight would need (126 on 16: 120, where ceil(L/p) x p is 128)."""
    L = np.asarray(n_layers, dtype=np.float64)
    p = np.asarray(stages, dtype=np.float64)
    low, high = np.floor(L / p), np.ceil(L / p)
    peak = np.maximum(low * p, high * (p - 1.0))
    return np.where(np.mod(L, p) == 0, L, peak)


def uneven(n_layers: Any, stages: Any) -> Any:
    """Whether the stages differ in layers (`stages` does not divide `n_layers`)."""
    return np.mod(n_layers, stages) != 0


def busiest_scale(n_layers: Any, stages: Any) -> Any:
    """ceil(L / p) · p / L: the layer-held parameters of the busiest stage, times p, over all of them."""
    return -(-np.asarray(n_layers, dtype=np.float64) // stages) * stages / n_layers


def busiest_params(total: Any, experts: Any, stage_params: Any, n_layers: Any, stages: Any) -> tuple[Any, Any]:
    """(total, routed-expert) parameters as if every stage held the busiest stage's ceil(L / p) layers
    (the first-stage `stage_params` unscaled), so that an even split over `stages` gives the busiest
    stage's share; unchanged (the same floats) where the stages are even."""
    if type(stages) is float and type(n_layers) in (int, float):
        if not n_layers % stages:
            return total, experts
        scale = float(busiest_scale(n_layers, stages))
        return stage_params + (total - stage_params) * scale, experts * scale
    scale = busiest_scale(n_layers, stages)
    even = ~uneven(n_layers, stages)
    return (np.where(even, total, stage_params + (total - stage_params) * scale),
            np.where(even, experts, experts * scale))
