"""Benchmark: one scalar call of each calc function (what an Excel cell costs), and one question.

The question: activations, memory and hours for a 7B job on 8 devices (activation_bytes +
train_memory + train_hours), and the same question asked of llm-analysis (the `bench` extra)
when it is installed. Run: python bench/bench_scalar.py. Prints figures; asserts nothing
(goals: <= 5 us per scalar call, <= 20 us for the question, >= 10x the peer).
"""

from __future__ import annotations

import logging
import timeit
from collections.abc import Callable

from trainbudget import calc

H100 = "H100 SXM, BF16 tensor core, dense"
# Llama-2-7B's shape (32 layers, d_model 4096, 32 heads), 4,096-token sequences, micro-batch 1.
LAYERS, D_MODEL, HEADS, SEQ, BATCH = 32, 4096, 32, 4096, 1
PARAMS, TOKENS, DEVICES, UTIL = 7e9, 1e12, 8, 0.4


def us(fn: Callable[[], object]) -> float:
    """Best-of-7 microseconds per call."""
    t = timeit.Timer(fn)
    number, _ = t.autorange()
    return min(t.repeat(7, number)) / number * 1e6


def ours() -> tuple[float, float, float]:
    act = calc.activation_bytes(LAYERS, D_MODEL, HEADS, SEQ, BATCH)
    mem = calc.train_memory(PARAMS, zero_stage=3, devices=DEVICES, activations=act)
    hours = calc.train_hours(PARAMS, TOKENS, H100, utilization=UTIL, devices=DEVICES)
    return act, mem.total, hours


def peer() -> Callable[[], object] | None:
    """llm-analysis asked the same question, its objects built once outside the timing."""
    try:
        from llm_analysis.analysis import DSZeRO, LLMAnalysis
        from llm_analysis.config import ModelConfig, ParallelismConfig, get_gpu_config_by_name
    except ImportError:
        return None
    logging.getLogger("llm_analysis").setLevel(logging.ERROR)
    logging.disable(logging.WARNING)
    model = ModelConfig(name="7b", num_layers=LAYERS, n_head=HEADS, hidden_dim=D_MODEL, vocab_size=32000)
    la = LLMAnalysis(model, get_gpu_config_by_name("h100-sxm-80gb"),
                     parallelism_config=ParallelismConfig(dp_size=DEVICES), flops_efficiency=UTIL)

    def question() -> tuple[float, float, float]:
        act = la.get_activation_memory_per_layer(BATCH, SEQ, is_inference=False) * LAYERS
        weights = la.get_weight_memory_per_layer(ds_zero=DSZeRO.STAGE_3) * LAYERS
        states = sum(la.get_memory_optimizer_state_and_gradient_per_layer(ds_zero=DSZeRO.STAGE_3)) * LAYERS
        fwd = la.get_latency_fwd(BATCH, SEQ, is_inference=False)
        step_s = 3 * (fwd[0] if isinstance(fwd, tuple) else fwd)  # backward ~ 2x forward
        hours = step_s * TOKENS / (BATCH * SEQ * DEVICES) / 3600
        return act, weights + states + act, hours
    return question


def main() -> None:
    calls = {
        "train_flops": lambda: calc.train_flops(PARAMS, TOKENS),
        "train_hours (name)": lambda: calc.train_hours(PARAMS, TOKENS, H100, utilization=UTIL, devices=DEVICES),
        "train_hours (TFLOP/s)": lambda: calc.train_hours(PARAMS, TOKENS, 989.5),
        "train_memory": lambda: calc.train_memory(PARAMS, zero_stage=3, devices=DEVICES),
        "train_memory (layout)": lambda: calc.train_memory(PARAMS, zero_stage=1, devices=DEVICES, tensor_parallel=2,
                                                           pipeline_parallel=2, stage_params=5e8),
        "train_bytes": lambda: calc.train_bytes(PARAMS),
        "activation_bytes": lambda: calc.activation_bytes(LAYERS, D_MODEL, HEADS, SEQ, BATCH),
        "train_cost": lambda: calc.train_cost(PARAMS, TOKENS, H100, usd_per_device_hour=2.5),
        "devices_needed": lambda: calc.devices_needed(PARAMS, H100, zero_stage=3),
    }
    for name, fn in calls.items():
        print(f"{name:24} {us(fn):7.2f} us per scalar call (goal <= 5)")
    mine = us(ours)
    print(f"{'question (ours)':24} {mine:7.2f} us (goal <= 20)")
    q = peer()
    if q is None:
        print("llm-analysis not installed (pip install -e .[bench]): no peer figure")
        return
    theirs = us(q)
    print(f"{'question (llm-analysis)':24} {theirs:7.2f} us; ours is {theirs / mine:.1f}x faster (goal >= 10x)")


if __name__ == "__main__":
    main()
