"""Per-device memory against published measurements (tests/data/measured_memory.csv: torchtitan
docs/performance.md and the torchtune README, copied with their sources).

Every row can now be expressed, and the computed peak is within 15% of the measured one:
T1/T3 with recompute="op" (torchtitan's op-level selective checkpointing, calc.activations),
T4 with loss="parallel" (PyTorch's loss_parallel, on by default with tensor parallelism).
Computed / measured - 1, before (Korthikanti's selective recompute for T1/T3, a 10 B loss,
no sequence-parallel gathers) and now: T1 +31.7% -> -6.8%, T3 +38.4% -> -8.9%, T2 -13.4% ->
-4.1%, T4 -26.5% -> -5.3%, L1 +10.1%, Q1 -8.9% (unchanged).

The terms (calc.activations cites each): T1/T3 per layer the op policy's saved outputs (input,
Q, V, SDPA output and logsumexp, gate, down) 15.5·s·b·h against Korthikanti's 34 (-37 GiB), plus
the recomputed layer's working set (1.3 GiB); the loss's backward peak at 12 B per logit element
(+3.9 GiB on T1/T3, +7.8 on T2); T4 loss_parallel's 16 B per local logit element (+11.7 GiB) and
the sequence-parallel all-gathered block inputs of the recomputed layer (+3.5 GiB). Local batch 16
is one micro-batch (torchtitan @ 9dec370 has no gradient accumulation).

What explains the rest (all rows low but L1): the figures are the caching allocator's maximum
*reserved* memory (torchtitan/metrics.py @ 9dec370 line 62, reserved_bytes.all.peak), above what
is allocated; FSDP2's own buffers are counted as DeepSpeed's ZeRO-3 buffers (3.8 GiB here), while
FSDP2 keeps its root group (input embedding and output projection, 2.0 GiB in bf16 for 8B)
unsharded through forward and backward (torch/distributed/_composable/fsdp/_fsdp_state.py,
_lazy_init: "For the root, do not reshard after forward") and reduce-scatters fp32 gradients;
float8 casts and compile buffers (T2, T4) are not modelled; FSDP2 keeps no bf16 shard (the
2 B/param counted for weights over-counts 1.9 GiB in T1). L1 is high because torchtune's
chunked loss stores less than the 2 B "fused" figure.
"""

import csv

import pytest

from tests.conftest import DATA
from trainbudget import calc

GIB = 2 ** 30
ROWS = list(csv.DictReader((DATA / "measured_memory.csv").open(encoding="utf-8")))
LORA_TRAINABLE = 20e6  # torchtune's Llama 3.1 8B LoRA recipe: rank 8 on q, v, o and the MLP


def computed_gib(row, **change):
    row = {**row, **change}
    shape = calc.model_preset(row["model"]).shape
    t, n = int(row["tensor_parallel"]), int(row["devices"])
    act = calc.activation_bytes(shape["n_layers"], shape["d_model"], shape["n_heads"], int(row["seq_len"]),
                                int(row["micro_batch"]), recompute=row["recompute"], tensor_parallel=t,
                                sequence_parallel=t > 1, flash_attention=True, vocab=shape["vocab"],
                                n_kv_heads=shape["n_kv_heads"], head_dim=shape["head_dim"],
                                ffn_dim=shape["ffn_dim"], gated_mlp=True, dropout=False, loss=row["loss"])
    params = calc.model_preset(row["model"]).params().total
    if row["method"] == "full":  # FSDP: ZeRO-3 with fp32 gradients and the gathered-layer buffers
        m = calc.train_memory(params, grad_bytes=4, zero_stage=3, devices=n, tensor_parallel=t,
                              zero3_buffers=True, activations=act)
    else:
        m = calc.train_memory(params, method=row["method"], trainable=LORA_TRAINABLE, activations=act)
    return m.total / GIB


@pytest.mark.parametrize("row", [r for r in ROWS if r["expressible"] == "yes"], ids=lambda r: r["id"])
def test_expressible_measurements_within_15_percent(row):
    got, measured = computed_gib(row), float(row["measured_gib"])
    assert abs(got / measured - 1) <= 0.15, (row["id"], got, measured)


def test_every_row_has_a_source_and_date():
    assert len(ROWS) == 6 and all(r["source"] and r["as_of"] for r in ROWS)
    assert all(r["expressible"] == "yes" for r in ROWS)


def test_the_loss_and_the_recomputed_layer_explain_t2():
    """T2 (8B, seq 32k, full AC): without the loss copies and the working set the estimate is
    the old one, about half the measured 83.9 GiB (the project's earlier figure)."""
    row = next(r for r in ROWS if r["id"] == "T2")
    shape = calc.model_preset(row["model"]).shape
    s, h, v = 32768, shape["d_model"], shape["vocab"]
    loss = 12 * s * v / GIB                # fp32 log-probabilities, their gradient, the input gradient
    working = 34 * s * h / GIB             # Llama's 34·s·h (GQA + SwiGLU, no dropout), one layer
    assert loss == pytest.approx(46.97, abs=0.01) and working == pytest.approx(4.25, abs=0.01)
    assert (computed_gib(row) - loss - working) / float(row["measured_gib"]) < 0.6


def test_op_level_checkpointing_is_what_brings_t1_and_t3_within_reach():
    """Korthikanti's selective recompute keeps every non-attention activation: T1/T3 +32/+38%.
    torchtitan's policy keeps the matmul outputs but every second one: within 15%."""
    for row in (r for r in ROWS if r["id"] in ("T1", "T3")):
        measured = float(row["measured_gib"])
        assert computed_gib(row, recompute="selective") / measured - 1 > 0.25
        assert abs(computed_gib(row) / measured - 1) <= 0.15


def test_op_policy_keeps_torchtitans_saved_ops_per_layer():
    """One layer of Llama 3.1 8B under recompute="op" keeps, per token: the layer input 2h, Q 2q
    and V 2k (matmuls 1 and 3), the SDPA output 2q and its fp32 logsumexp 4a, the gate 2f
    (matmul 5) and the down projection 2h (matmul 7); parallelize_llama.py @ 9dec370."""
    shape = calc.model_preset("Llama 3.1 8B").shape
    h, a, kv, f = shape["d_model"], shape["n_heads"], shape["n_kv_heads"] * shape["head_dim"], shape["ffn_dim"]
    q = a * shape["head_dim"]
    s, b = 8192, 2
    opts = dict(n_kv_heads=shape["n_kv_heads"], head_dim=shape["head_dim"], ffn_dim=f, gated_mlp=True,
                dropout=False, flash_attention=True, recompute="op")
    one, two = (calc.activation_bytes(n, h, a, s, b, **opts) for n in (1, 2))
    assert two - one == pytest.approx(s * b * (2 * h + 2 * q + 2 * kv + 2 * q + 4 * a + 2 * f + 2 * h))
    # with tensor and sequence parallelism: the input and the two reduce-scatter outputs are
    # sequence-sharded, the row-parallel down projection's partial sum is full width
    t = 8
    one, two = (calc.activation_bytes(n, h, a, s, b, tensor_parallel=t, sequence_parallel=True, **opts)
                for n in (1, 2))
    assert two - one == pytest.approx(s * b * ((2 * h + 2 * q + 2 * kv + 2 * q + 4 * a + 2 * f + 4 * h) / t + 2 * h))


def test_loss_parallel_explains_t4():
    """T4 (70B, TP 8, local batch 16): loss_parallel's backward holds 16 B per local logit
    element, 4 more than the plain loss; with the plain loss T4 is outside 15%."""
    row = next(r for r in ROWS if r["id"] == "T4")
    shape = calc.model_preset(row["model"]).shape
    tokens, v, t = 16 * 8192, shape["vocab"], 8
    extra = computed_gib(row) - computed_gib(row, loss="standard")
    assert extra == pytest.approx(4 * tokens * v / t / GIB)
    assert computed_gib(row, loss="standard") / float(row["measured_gib"]) - 1 < -0.15
