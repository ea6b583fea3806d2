"""Per-device memory against published measurements (tests/data/measured_memory.csv: torchtitan
docs/performance.md and the torchtune README, copied with their sources).

Where the configuration can be expressed, the computed peak is within 15% of the measured one.
Where it cannot (torchtitan's op-level selective checkpointing, float8 and compile buffers),
the gap is stated and held in a band, so a change that moves it shows up here.
"""

import csv
from pathlib import Path

import pytest

from trainbudget import calc

GIB = 2 ** 30
ROWS = list(csv.DictReader((Path(__file__).parent / "data" / "measured_memory.csv").open(encoding="utf-8")))
LORA_TRAINABLE = 20e6  # torchtune's Llama 3.1 8B LoRA recipe: rank 8 on q, v, o and the MLP
# What the rows that cannot be expressed come out at (computed / measured - 1): op-level SAC
# keeps less than Korthikanti's selective recompute (over); float8 casts, compile and the
# allocator at local batch 16 are left out (under).
OUT_OF_REACH = {"T1": (0.20, 0.45), "T3": (0.25, 0.50), "T4": (-0.35, -0.20)}


def computed_gib(row):
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


@pytest.mark.parametrize("row", [r for r in ROWS if r["expressible"] == "no"], ids=lambda r: r["id"])
def test_rows_out_of_reach_stay_in_their_stated_band(row):
    lo, hi = OUT_OF_REACH[row["id"]]
    err = computed_gib(row) / float(row["measured_gib"]) - 1
    assert lo <= err <= hi, (row["id"], err)


def test_every_row_has_a_source_and_date():
    assert len(ROWS) == 6 and all(r["source"] and r["as_of"] for r in ROWS)


def test_the_loss_and_the_recomputed_layer_explain_t2():
    """T2 (8B, seq 32k, full AC): without the loss copies and the working set the estimate is
    the old one, about half the measured 83.9 GiB."""
    row = next(r for r in ROWS if r["id"] == "T2")
    shape = calc.model_preset(row["model"]).shape
    s, h, v = 32768, shape["d_model"], shape["vocab"]
    loss = 10 * s * v / GIB                # bf16 logits + fp32 upcast + fp32 gradient
    working = 34 * s * h / GIB             # Llama's 34·s·h (GQA + SwiGLU, no dropout), one layer
    assert loss == pytest.approx(39.1, abs=0.1) and working == pytest.approx(4.25, abs=0.01)
    assert (computed_gib(row) - loss - working) / float(row["measured_gib"]) < 0.6
