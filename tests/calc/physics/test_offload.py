"""Recompute "offload" on the doors that count FLOPs and activation bytes (train_flops, activation_bytes,
train_memory), as fit and the step model mean it: full recompute with each layer's input in host memory."""

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc.physics import fit
from trainbudget.calc.physics.recompute import RECOMPUTE_ORDER

H100 = "H100 SXM, BF16 tensor core, dense"
FIVE = "none, selective, op, full, offload"


@pytest.mark.parametrize("name", ["offload", "OFFLOAD", " Offload "])
def test_offload_flops_are_full_recomputes(name):
    """Where the layer input waits changes no FLOPs: 8N per token and 16·L·d·T (Narayanan et al. 2021
    §5.1), each name read as calc's other names are (case-insensitive, stripped)."""
    n, D, L, d, T = 1e9, 1e6, 24, 2048, 2048
    assert calc.train_flops(n, D, recompute=name) == pytest.approx(8 * n * D)
    got = calc.train_flops(n, D, n_layers=L, d_model=d, seq_len=T, recompute=name)
    assert got == pytest.approx((8 * n + 16 * L * d * T) * D)
    assert got == calc.train_flops(n, D, n_layers=L, d_model=d, seq_len=T, recompute="full")
    assert got > calc.train_flops(n, D, n_layers=L, d_model=d, seq_len=T, recompute="op")


def test_offload_flops_broadcast_as_full():
    params, tokens = np.array([[1e9], [7e9]]), np.array([1e6, 2e6, 3e6])
    got = calc.train_flops(params, tokens, recompute="offload", active_params=params / 2)
    assert got.shape == (2, 3)
    np.testing.assert_array_equal(got, calc.train_flops(params, tokens, recompute="full", active_params=params / 2))
    assert got[1, 2] == pytest.approx(8 * 3.5e9 * 3e6)


# Llama 3.1 8B's widths; the offload figure is full recompute with one layer a stage (n_layers =
# pipeline_parallel) and one micro-batch in flight, whatever the layers and micro-batches given
_LLAMA = {"n_kv_heads": 8, "head_dim": 128, "ffn_dim": 14336, "gated_mlp": True, "dropout": False}


@pytest.mark.parametrize("layout", [
    {},
    {"pipeline_parallel": 4, "vocab": 128256, "micro_batches": 8},
    {"pipeline_parallel": 2, "tensor_parallel": 4, "sequence_parallel": True, "vocab": 128256, "virtual_stages": 2},
    {"pipeline_parallel": 8, "context_parallel": 2, "flash_attention": True, "loss": "fused"},
])
def test_offload_activations_are_one_layer_a_stage_of_full(layout):
    kw = {**_LLAMA, **layout}
    p = kw.get("pipeline_parallel", 1)
    got = calc.activation_bytes(32, 4096, 32, 8192, 2, recompute="offload", **kw)
    want = calc.activation_bytes(p, 4096, 32, 8192, 2, recompute="full", **{**kw, "micro_batches": 1})
    assert got == want
    assert got < calc.activation_bytes(32, 4096, 32, 8192, 2, recompute="full", **kw)
    # no layer's count or micro-batches in flight reach it: 64 layers hold what 32 do
    assert calc.activation_bytes(64, 4096, 32, 8192, 2, recompute=" Offload", **kw) == got


def test_offload_on_one_device_holds_one_input_and_one_recomputed_layer():
    """p = 1, no vocab: the layer input in flight 2·s·b·h plus the layer being recomputed (no recompute's
    one layer: Chen et al. 2016 §3), independently of the kernel's full-recompute branch."""
    s, b, h, a = 4096, 1, 8192, 64
    one = calc.activation_bytes(1, h, a, s, b, flash_attention=True)
    got = calc.activation_bytes(80, h, a, s, b, recompute="offload", flash_attention=True)
    assert got == pytest.approx(2 * s * b * h + one)


def test_offload_moe_layers_count_at_most_one_a_stage():
    kw = {"ffn_dim": 4096, "gated_mlp": True, "n_experts": 8, "top_k": 2, "moe_ffn_dim": 1024, "pipeline_parallel": 4}
    got = calc.activation_bytes(16, 1024, 8, 512, 1, recompute="offload", moe_layers=6, **kw)
    assert got == calc.activation_bytes(4, 1024, 8, 512, 1, recompute="full", micro_batches=1, moe_layers=4, **kw)
    two = calc.activation_bytes(16, 1024, 8, 512, 1, recompute="offload", moe_layers=2, **kw)
    assert two == calc.activation_bytes(4, 1024, 8, 512, 1, recompute="full", micro_batches=1, moe_layers=2, **kw)


@pytest.mark.parametrize("preset", ["Llama 3.1 8B", "Mixtral 8x7B", "Llama 3.1 405B"])
@pytest.mark.parametrize(("sizes", "micro_batch"), [((1, 1, 1, 1), 1), ((8, 4, 1, 1), 2), ((8, 16, 2, 2), 1)])
def test_fit_and_activation_bytes_agree_on_offload(preset, sizes, micro_batch):
    """fit's stage_activations passes "offload" through: it equals activation_bytes' offload on the preset's
    own shape where the stages are even, and the full-recompute bytes of one layer a stage that fit counted
    for it (405B's 126 layers on 4 or 16 stages are uneven)."""
    shape = calc.model_preset(preset).shape
    T, P, C, V = sizes
    o = {"seq_len": 8192, "sequence_parallel": T > 1, "flash_attention": True, "loss": "standard"}
    got = fit.stage_activations(shape, sizes, micro_batch, "offload", o)
    opts = fit._activation_shape(shape)
    if shape.get("n_experts", 1) > 1:
        opts["moe_layers"] = shape["n_layers"]
    kw = {"tensor_parallel": T, "sequence_parallel": T > 1, "flash_attention": True, "pipeline_parallel": P,
          "context_parallel": C, "vocab": shape["vocab"], "virtual_stages": V, "loss": "standard", **opts}
    args = (shape["d_model"], shape["n_heads"], o["seq_len"], micro_batch)
    if shape["n_layers"] % P == 0:
        assert got == calc.activation_bytes(shape["n_layers"], *args, recompute="offload", **kw)
    one_a_stage = {"micro_batches": 1} | ({"moe_layers": min(shape["n_layers"], P)} if "moe_layers" in opts else {})
    assert got == calc.activation_bytes(P, *args, recompute="full", **(kw | one_a_stage))


def test_train_memory_counts_offload():
    kw = {"n_layers": 32, "d_model": 4096, "n_heads": 32, "seq_len": 8192, "micro_batch": 1, "pipeline_parallel": 4,
          "devices": 4, "vocab": 128256}
    got = calc.train_memory(8e9, recompute="offload", **kw).activations
    assert got == calc.activation_bytes(32, 4096, 32, 8192, 1, recompute="offload", pipeline_parallel=4, vocab=128256)
    assert got < calc.train_memory(8e9, recompute="full", **kw).activations


@pytest.mark.parametrize("call", [
    lambda r: calc.train_flops(1e9, 1e9, recompute=r),
    lambda r: calc.train_flops(1e9, 1e9, n_layers=2, d_model=64, seq_len=64, recompute=r),
    lambda r: calc.activation_bytes(2, 512, 8, 256, 1, recompute=r),
    lambda r: calc.train_memory(1e9, recompute=r),
])
@pytest.mark.parametrize("bad", ["offloaded", "cpu", None, 3])
def test_other_names_refused_naming_the_argument_and_all_five(call, bad):
    with pytest.raises(calc.TrainingBudgetError) as e:
        call(bad)
    assert str(e.value).startswith(f"recompute must be one of {FIVE} (got ")
    assert repr(bad) in str(e.value) or str(bad) in str(e.value)


def test_one_vocabulary():
    """Every door lists the same five names: fit's, the step model's, FLOPs' and activations'."""
    from trainbudget.calc.physics import activations, flops

    assert flops.RECOMPUTE == activations.RECOMPUTE == calc.RECOMPUTE == RECOMPUTE_ORDER
    assert ", ".join(RECOMPUTE_ORDER) == FIVE
