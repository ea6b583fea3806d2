"""The parallel sizes' rules that tie two sizes together: where expert parallelism may live.

Expert parallel e divides data x context parallel (d · c): the ranks that hold the same attention
weights within one tensor-parallel group and one pipeline stage. Megatron-Core's MoE Parallel Folding
lays the MoE layers out as expert-tensor x expert x expert-data x pipeline over the same devices as the
attention's tensor x context x data x pipeline, the expert-tensor size defaulting to the tensor size,
and requires only that the world size divide by expert-tensor x expert x pipeline
(megatron/core/parallel_state.py, initialize_model_parallel: expert_tensor_parallel_size defaults to
tensor_model_parallel_size; "world_size ... is not divisible by expert_tensor_model_pipeline_parallel
size"; Liu et al. 2025, arXiv:2504.14960, "MoE Parallel Folding"); with expert-tensor = tensor that is
e dividing d · c. The older rule, e dividing d (DeepSpeed-MoE, arXiv:2201.05596 §5), is the case c = 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def expert_fits(data: Any, context: Any, expert: Any) -> Any:
    """True where expert parallel `expert` divides data x context parallel (`data` · `context`);
    counts, broadcasting (numpy arrays or numbers)."""
    return np.mod(np.asarray(data) * np.asarray(context), np.asarray(expert)) == 0
