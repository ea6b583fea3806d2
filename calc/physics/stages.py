"""Pipeline stages that need not be even: 80 layers on 3 stages are 27 / 27 / 26.

Megatron-Core lets the first and last stages hold fewer layers (--decoder-first-pipeline-num-layers,
--decoder-last-pipeline-num-layers) and Llama 3 405B trained 126 layers on 16 stages
(arXiv:2407.21783, §3.3.2), so a pipeline depth need only be at most the layer count. Memory per
device is that of the BUSIEST stage, ceil(L / p) layers (plus the input embedding, counted on the
first stage by calc.physics.memory's stage_params), as calc.fit_layouts plans layouts: the
parameters of such a layout are those of a model whose p stages each hold ceil(L / p) layers.
Units: layers and parameter counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def stage_layers(n_layers: int, stages: int) -> list[int]:
    """Layers on each of `stages` pipeline stages, the extra layers on the first: 80, 3 -> [27, 27, 26]."""
    base, extra = divmod(int(n_layers), int(stages))
    return [base + (k < extra) for k in range(int(stages))]


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
