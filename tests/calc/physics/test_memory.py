"""train_memory / train_bytes / activation_bytes against ZeRO, HF, QLoRA and Korthikanti."""

import numpy as np
import pytest

from trainbudget import calc


def test_seed_sixteen_bytes_per_param():
    m = calc.train_memory(7e9)
    # ZeRO §3.1: 2 (bf16 weights) + 2 (bf16 grads) + 8 (Adam m, v) + 4 (fp32 master)
    assert (m.weights, m.gradients, m.optimizer, m.master) == (14e9, 14e9, 56e9, 28e9)
    assert m.total == calc.train_bytes(7e9) == 112e9


def test_fp32_gradients_eighteen_bytes():
    # Hugging Face model training anatomy: 18 B/param with fp32 gradients
    assert calc.train_bytes(1e9, grad_bytes=4) == pytest.approx(18e9)


@pytest.mark.parametrize(("stage", "gb"), [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_figure_1(stage, gb):
    # ZeRO Figure 1: Ψ = 7.5B, K = 12, N_d = 64 -> 120, 31.4, 16.6, 1.9 GB per device
    got = calc.train_bytes(7.5e9, zero_stage=stage, devices=64) / 1e9
    assert got == pytest.approx(gb, abs=0.05)


@pytest.mark.parametrize(("optimizer", "state"), [("adamw", 8), ("adamw_8bit", 2), ("adafactor", 4),
                                                 ("lion", 4), ("sgd_momentum", 4), ("sgd", 0)])
def test_optimizer_state_bytes(optimizer, state):
    m = calc.train_memory(1e9, optimizer=optimizer)
    assert m.optimizer == pytest.approx(state * 1e9)
    assert calc.train_bytes(1e9, optimizer=optimizer, master=False) == pytest.approx((4 + state) * 1e9)


def test_lora_trains_only_adapters():
    m = calc.train_memory(7e9, method="lora", trainable=40e6)
    assert m.weights == pytest.approx(2 * 7e9 + 2 * 40e6)  # frozen bf16 base + adapters
    assert m.gradients == pytest.approx(2 * 40e6)
    assert m.optimizer + m.master == pytest.approx(12 * 40e6)
    as_fraction = calc.train_memory(7e9, method="lora", trainable=40e6 / 7e9)
    assert as_fraction.total == pytest.approx(m.total)


def test_qlora_65b_fits_one_48gb_gpu():
    # Dettmers et al. 2023: a 65B model fine-tunes on one 48 GB GPU (NF4 base + 0.127 bit constants)
    m = calc.train_memory(65e9, method="qlora", trainable=0.002)
    assert m.weights == pytest.approx(65e9 * (0.5 + 0.127 / 8) + 2 * 0.002 * 65e9)
    assert m.total < 48e9 < calc.train_bytes(65e9, method="lora", trainable=0.002)


def test_inference_is_weights_only():
    m = calc.train_memory(7e9, method="inference")
    assert m.total == m.weights == 14e9


def test_activations_add_to_total():
    m = calc.train_memory(1e9, activations=5e9)
    assert m.total == pytest.approx(16e9 + 5e9)


def _korthikanti(s, b, h, a, t, L, sp, mode):
    dense = 34 / t if sp else 10 + 24 / t
    if mode == "full":  # each layer's input; sequence parallelism shards it over t (§4.2.2),
        #                 plus one layer's whole working set while it is recomputed (Chen 2016),
        #                 whose attention and MLP inputs are all-gathered whole under SP, 2h each
        gathered = 4 * (1 - 1 / t) if sp else 0
        return L * 2 * s * b * h / (t if sp else 1) + s * b * h * (dense + gathered + 5 * a * s / (h * t))
    scores = 0 if mode == "selective" else 5 * a * s / (h * t)
    return L * s * b * h * (dense + scores)


@pytest.mark.parametrize("mode", ["none", "selective", "full"])
@pytest.mark.parametrize(("t", "sp"), [(1, False), (8, False), (8, True)])
def test_korthikanti_table_2(mode, t, sp):
    # GPT-3 175B shape from Korthikanti Table 3: a=96, h=12288, L=96, s=2048, b=1
    got = calc.activation_bytes(96, 12288, 96, 2048, 1, recompute=mode, tensor_parallel=t,
                                sequence_parallel=sp)
    assert got == pytest.approx(_korthikanti(2048, 1, 12288, 96, t, 96, sp, mode))


def test_korthikanti_no_parallelism_is_34_plus_5as_over_h():
    s, b, h, a = 2048, 4, 4096, 32
    assert calc.activation_bytes(1, h, a, s, b) == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    flash = calc.activation_bytes(1, h, a, s, b, flash_attention=True)
    assert flash == pytest.approx(s * b * h * 34)


def test_breakdown_broadcasts():
    m = calc.train_memory(np.array([1e9, 2e9]), zero_stage=[[0], [3]], devices=8)
    assert m.total.shape == (2, 2)
    assert m.total[1, 1] == pytest.approx(32e9 / 8)


# --- layouts: llm-analysis (0.2.2) as the oracle, under its conventions -------------------
# Its conventions, matched here: plain (2-matrix) MLP, tied embeddings, every pipeline stage
# holds the embedding and the last norm (our stage_params), fp32 gradients (grad_bytes=4),
# Adam 12 B/param with the master copy, expert MLPs over tensor · expert ranks and their ZeRO
# shards over data / expert ranks.
from llm_analysis.analysis import DSZeRO, LLMAnalysis  # noqa: E402  (the [test] extra)
from llm_analysis.config import ModelConfig, ParallelismConfig, get_gpu_config_by_name  # noqa: E402

ORACLE_LAYOUTS = [  # (model, devices, tp, pp, ep, zero)
    ("dense", 8, 8, 1, 1, 0), ("dense", 16, 8, 2, 1, 0), ("dense", 64, 8, 4, 1, 1),
    ("dense", 64, 4, 2, 1, 2), ("dense", 128, 2, 8, 1, 3), ("dense", 32, 1, 1, 1, 3),
    ("dense", 256, 8, 8, 1, 1), ("dense", 48, 2, 3, 1, 2), ("moe", 64, 2, 2, 8, 0),
    ("moe", 64, 1, 4, 4, 1), ("moe", 128, 4, 1, 8, 2), ("moe", 32, 2, 1, 2, 1),
]
SHAPES = {"dense": dict(n_layers=48, d_model=6144, n_heads=48, ffn_dim=24576, vocab=51200),
          "moe": dict(n_layers=24, d_model=4096, n_heads=32, ffn_dim=16384, vocab=32000,
                      n_experts=8, top_k=2)}


def _oracle(shape, devices, tp, pp, ep, zero):
    model = ModelConfig(name="t", num_layers=shape["n_layers"], n_head=shape["n_heads"],
                        hidden_dim=shape["d_model"], vocab_size=shape["vocab"],
                        ffn_embed_dim=shape["ffn_dim"], moe_num_experts=shape.get("n_experts", 1),
                        moe_top_k=shape.get("top_k", 1))
    par = ParallelismConfig(tp_size=tp, pp_size=pp, dp_size=devices // (tp * pp), ep_size=ep)
    a = LLMAnalysis(model, get_gpu_config_by_name("a100-sxm-80gb"), parallelism_config=par)
    z, layers = DSZeRO(zero), shape["n_layers"] // pp
    weights = (a.get_memory_embedding(z) + layers * a.get_weight_memory_per_layer(z)
               + a.get_weight_memory_last_layernorm(z))
    o_l, g_l = a.get_memory_optimizer_state_and_gradient_per_layer(ds_zero=z)
    o_e, g_e = a.get_memory_optimizer_state_and_gradient_embedding(ds_zero=z)
    o_n, g_n = a.get_memory_optimizer_state_and_gradient_last_layernorm(ds_zero=z)
    return weights, layers * g_l + g_e + g_n, layers * o_l + o_e + o_n


@pytest.mark.parametrize(("model", "devices", "tp", "pp", "ep", "zero"), ORACLE_LAYOUTS)
def test_model_states_per_device_equal_llm_analysis(model, devices, tp, pp, ep, zero):
    shape = SHAPES[model]
    b = calc.model_params(**shape, gated_mlp=False, tied_embeddings=True)
    experts = b.experts if shape.get("n_experts", 1) > 1 else 0.0
    m = calc.train_memory(b.total, grad_bytes=4, zero_stage=zero, devices=devices,
                          tensor_parallel=tp, pipeline_parallel=pp, expert_parallel=ep,
                          expert_params=experts, stage_params=b.embedding + shape["d_model"])
    weights, grads, states = _oracle(shape, devices, tp, pp, ep, zero)
    assert m.weights == pytest.approx(weights, rel=1e-9)
    assert m.gradients == pytest.approx(grads, rel=1e-9)
    assert m.optimizer + m.master == pytest.approx(states, rel=1e-9)


def test_layout_defaults_keep_the_seed_and_zero_figure_1():
    assert calc.train_bytes(7e9) == pytest.approx(16 * 7e9)
    # ZeRO Figure 1: 7.5B params, N_d = 64: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB
    got = [calc.train_bytes(7.5e9, zero_stage=k, devices=64) / 1e9 for k in range(4)]
    assert got == pytest.approx([120, 31.4, 16.6, 1.9], abs=0.06)


def test_fp32_gradients_are_18_bytes_and_adamw_bf16_is_14():
    assert calc.train_bytes(1e9, grad_bytes=4) == pytest.approx(18e9)
    assert calc.train_bytes(1e9, optimizer="adamw_bf16") == pytest.approx(12e9)
    assert calc.train_bytes(1e9, optimizer="adamw_bf16", grad_bytes=4) == pytest.approx(14e9)


def test_tensor_and_pipeline_split_the_replica_zero_the_data_parallel_group():
    m = calc.train_memory(64e9, devices=64, tensor_parallel=8, pipeline_parallel=2, zero_stage=1)
    replica = 64e9 / 16
    assert m.weights == pytest.approx(2 * replica)
    assert m.optimizer + m.master == pytest.approx(12 * replica / 4)


def test_zero3_buffers_follow_deepspeed_defaults():
    plain = calc.train_memory(69e9, zero_stage=3, devices=16)
    buf = calc.train_memory(69e9, zero_stage=3, devices=16, zero3_buffers=True)
    assert buf.total - plain.total == pytest.approx(2 * 1e9 + 2 * 5e7 + 2 * 5e8)


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(devices=12, tensor_parallel=8), "devices must be divisible by tensor_parallel"),
    (dict(devices=64, tensor_parallel=8, expert_parallel=3), "expert_parallel must divide"),
    (dict(devices=64, pipeline_parallel=0), "pipeline_parallel must be a whole number"),
])
def test_bad_layouts_name_the_argument(kwargs, message):
    with pytest.raises(calc.TrainingBudgetError, match=message):
        calc.train_memory(7e9, **kwargs)


def test_tensor_parallel_must_divide_heads():
    with pytest.raises(calc.TrainingBudgetError, match="tensor_parallel must divide n_heads"):
        calc.activation_bytes(32, 4096, 32, 2048, 1, tensor_parallel=3)
    with pytest.raises(calc.TrainingBudgetError, match="pipeline_parallel must divide n_layers"):
        calc.activation_bytes(30, 4096, 32, 2048, 1, pipeline_parallel=4)


def test_pipeline_first_stage_holds_all_layers_worth_and_logits_are_counted():
    s, b, h, a, L, t, v = 4096, 1, 8192, 64, 80, 8, 128256
    layers = L * s * b * h * 34 / t
    pp1 = calc.activation_bytes(L, h, a, s, b, tensor_parallel=t, sequence_parallel=True,
                                recompute="selective", vocab=v)
    # final norm and projection inputs 4·s·b·h/t; 12 B per logit element: the fp32 log-probabilities,
    # their gradient and the input gradient at the start of backward
    assert pp1 == pytest.approx(layers + s * b * h / t + 4 * s * b * h / t + 12 * s * b * v / t)
    pp4 = calc.activation_bytes(L, h, a, s, b, tensor_parallel=t, sequence_parallel=True,
                                recompute="selective", pipeline_parallel=4)
    assert pp4 == pytest.approx(layers)  # 4 micro-batches in flight x L/4 layers (§4.2.3)
    few = calc.activation_bytes(L, h, a, s, b, tensor_parallel=t, sequence_parallel=True,
                                recompute="selective", pipeline_parallel=4, micro_batches=2)
    assert few == pytest.approx(layers / 2)


def test_69b_zero3_with_buffers_and_fp32_grads_needs_what_deepspeed_says():
    # DeepSpeed's estimate_zero3_model_states_mem_needs: 18 B/param / N plus the largest layer
    # -> 15-16 H100s; the bare 16 B/param count said 14.
    # DeepSpeed counts the whole 80 GiB (reserve_gib=0); the usable 76 GiB (calc/capacity.py) needs
    # one more: 1104e9 / 81.6e9 = 13.5 -> 14, and 17 with the buffers.
    h100 = "H100 SXM, BF16 tensor core, dense"
    assert calc.devices_needed(69e9, h100, zero_stage=3, reserve_gib=0) == 13
    assert calc.devices_needed(69e9, h100, zero_stage=3, zero3_buffers=True, grad_bytes=4, reserve_gib=0) == 16
    assert calc.devices_needed(69e9, h100, zero_stage=3) == 14
    assert calc.devices_needed(69e9, h100, zero_stage=3, zero3_buffers=True, grad_bytes=4) == 17


def test_moe_flops_follow_active_params_through_the_schedule():
    h100 = "H100 SXM, BF16 tensor core, dense"
    moe = dict(active_params=12.9e9)
    assert calc.train_flops(46.7e9, 1e12, **moe) == pytest.approx(6 * 12.9e9 * 1e12)
    assert calc.train_hours(46.7e9, 1e12, h100, **moe) == pytest.approx(calc.train_hours(12.9e9, 1e12, h100))
    assert calc.gpu_hours(46.7e9, 1e12, h100, devices=8, **moe) == pytest.approx(
        calc.gpu_hours(12.9e9, 1e12, h100, devices=8))
    assert calc.train_cost(46.7e9, 1e12, h100, usd_per_device_hour=2, **moe) == pytest.approx(
        calc.train_cost(12.9e9, 1e12, h100, usd_per_device_hour=2))
    assert calc.train_energy_kwh(46.7e9, 1e12, h100, **moe) == pytest.approx(
        calc.train_energy_kwh(12.9e9, 1e12, h100))
    with pytest.raises(calc.TrainingBudgetError, match="active_params must be <= params"):
        calc.train_flops(1e9, 1e12, active_params=2e9)


def test_chinchilla_follows_table_3_not_a_flat_20():
    from trainbudget.calc.physics.flops import CHINCHILLA_TABLE_3
    assert calc.chinchilla_tokens(10e9) == pytest.approx(205.1e9, rel=0.002)
    for n, d in CHINCHILLA_TABLE_3:
        assert calc.chinchilla_tokens(n) == pytest.approx(d, rel=0.01 if n != 67e9 else 0.08)
    assert calc.chinchilla_tokens(1e12) / 1e12 > calc.chinchilla_tokens(1e9) / 1e9 > 20


@pytest.mark.parametrize("t", [1, 2, 4, 8])
def test_full_recompute_activations_equal_llm_analysis(t):
    # Full recomputation keeps each layer's 16-bit input, sharded over t by sequence parallelism:
    # 2·s·b·h/t per layer (Korthikanti §4.2.2); llm-analysis counts the same. (Its selective
    # and no-recompute figures differ from Table 2 by its own terms: 33 vs 34 sbh/t.)
    from llm_analysis.analysis import ActivationRecomputation
    model = ModelConfig(name="t", num_layers=32, n_head=32, hidden_dim=4096, vocab_size=32000,
                        ffn_embed_dim=16384)
    a = LLMAnalysis(model, get_gpu_config_by_name("a100-sxm-80gb"),
                    parallelism_config=ParallelismConfig(tp_size=t, sp_size=t))
    oracle = a.get_activation_memory_per_layer(2, 2048, is_inference=False,
                                               activation_recomputation=ActivationRecomputation.FULL)
    stored = [calc.activation_bytes(n, 4096, 32, 2048, 2, recompute="full", tensor_parallel=t,
                                    sequence_parallel=True) for n in (1, 2)]
    assert stored[1] - stored[0] == pytest.approx(oracle, rel=1e-12)  # one more stored input


# --- train_memory takes the activation shape and sequence parallelism --
_SHAPE = {"n_layers": 32, "d_model": 4096, "n_heads": 32, "seq_len": 4096, "micro_batch": 1}


@pytest.mark.parametrize("layout", [{}, {"tensor_parallel": 8, "devices": 8},
                                    {"tensor_parallel": 2, "pipeline_parallel": 2, "devices": 8,
                                     "context_parallel": 2}])
@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("extra", [{}, {"recompute": "full", "vocab": 128256},
                                   {"recompute": "selective", "micro_batches": 1}])
def test_shape_gives_activations_on_the_same_layout(layout, sp, extra):
    m = calc.train_memory(8e9, zero_stage=1, sequence_parallel=sp, **layout, **_SHAPE, **extra)
    act_layout = {k: v for k, v in layout.items() if k != "devices"}
    expected = calc.activation_bytes(*_SHAPE.values(), sequence_parallel=sp, **act_layout, **extra)
    assert m.activations == expected
    bytes_given = calc.train_memory(8e9, zero_stage=1, activations=expected, **layout)
    assert m.total == bytes_given.total


def test_sequence_parallel_divides_full_recompute_by_tensor_parallel():
    def stored(sp):  # the stored layer inputs: 32 layers less 16 (the working set cancels)
        return [calc.train_memory(70e9, devices=8, tensor_parallel=8, sequence_parallel=sp,
                                  recompute="full", **{**_SHAPE, "n_layers": n}).activations
                for n in (32, 16)]
    on, off = stored(True), stored(False)
    assert off[0] - off[1] == pytest.approx(8 * (on[0] - on[1]), rel=1e-12)


def test_shape_broadcasts_over_layouts():
    tp = np.array([1, 2, 4])
    m = calc.train_memory(8e9, devices=8, tensor_parallel=tp, sequence_parallel=True, **_SHAPE)
    assert m.activations.shape == (3,)
    assert m.activations[0] == pytest.approx(4 * m.activations[2], rel=0.3)


def test_activations_and_shape_are_not_both_given():
    with pytest.raises(calc.TrainingBudgetError, match=r"activations.*n_layers.*not both"):
        calc.train_memory(8e9, activations=1e9, **_SHAPE)
    with pytest.raises(calc.TrainingBudgetError, match="needs n_heads, seq_len, micro_batch"):
        calc.train_memory(8e9, n_layers=32, d_model=4096)


# --- activations from named parts (calc.activations) ----------------------------------------
def _per_layer(name, **extra):
    """One layer's selective-recompute bytes over s·b·h for a preset's own widths."""
    shape = calc.model_preset(name).shape
    s, b, h = 4096, 1, shape["d_model"]
    opts = {"n_kv_heads": shape["n_kv_heads"], "head_dim": shape["head_dim"], "ffn_dim": shape["ffn_dim"],
            "gated_mlp": True, "dropout": False}
    if shape.get("n_experts", 1) > 1:
        opts.update(n_experts=shape["n_experts"], top_k=shape["top_k"], moe_ffn_dim=shape["moe_ffn_dim"])
    one = calc.activation_bytes(1, h, shape["n_heads"], s, b, recompute="selective", **opts, **extra)
    return one / (s * b * h)


@pytest.mark.parametrize(("name", "coefficient"), [
    ("Llama 3.1 8B", 34.0), ("Llama 3.1 70B", 33.5), ("Mixtral 8x7B", 59.0), ("Qwen3-30B-A3B", 51.0)])
def test_per_layer_terms_from_first_principles(name, coefficient):
    # norms 4h; attention 2h + 4q + 4kv; MLP 2h + 6f (SwiGLU); MoE 2h + k·(2h + 6·f_e)
    # (../shared/reference/accuracy-2026.md §3a: 34.0, 33.5, 59.0, 51.0 s·b·h)
    assert _per_layer(name) == pytest.approx(coefficient)


def test_table_2_is_the_default_shape():
    s, b, h, a = 2048, 1, 4096, 32
    named = calc.activation_bytes(1, h, a, s, b, n_kv_heads=a, head_dim=h // a, ffn_dim=4 * h, gated_mlp=False,
                                  dropout=True)
    assert named == calc.activation_bytes(1, h, a, s, b) == pytest.approx(s * b * h * (34 + 5 * a * s / h))


def test_the_loss_is_twelve_bytes_per_logit_sixteen_parallel_or_two_fused():
    s, b, h, a, v, t = 8192, 1, 4096, 32, 128256, 2
    std, par, fused = (calc.activation_bytes(4, h, a, s, b, tensor_parallel=t, sequence_parallel=True, vocab=v,
                                             loss=loss) for loss in ("standard", "parallel", "fused"))
    assert std - fused == pytest.approx(10 * s * b * v / t)
    assert par - std == pytest.approx(4 * s * b * v / t)
    bare = calc.activation_bytes(4, h, a, s, b, tensor_parallel=t, sequence_parallel=True)
    assert std - bare == pytest.approx(s * b * h / t + 4 * s * b * h / t + 12 * s * b * v / t)


@pytest.mark.parametrize(("t", "sp"), [(1, False), (4, False), (4, True)])
def test_op_recompute_sits_between_selective_and_full(t, sp):
    """torchtitan's op-level policy keeps less than Korthikanti's selective recompute and more than
    full recompute, and its recomputed layer's working set is the rest of that layer."""
    s, b, h, a = 4096, 2, 4096, 32
    opts = dict(n_kv_heads=8, head_dim=128, ffn_dim=14336, gated_mlp=True, dropout=False, flash_attention=True,
                tensor_parallel=t, sequence_parallel=sp)
    sel, op, full = (calc.activation_bytes(32, h, a, s, b, recompute=m, **opts) for m in ("selective", "op", "full"))
    assert full < op < sel
    one = calc.activation_bytes(1, h, a, s, b, recompute="none", **opts)
    op1, op2 = (calc.activation_bytes(n, h, a, s, b, recompute="op", **opts) for n in (1, 2))
    kept = op2 - op1
    gathered = 4 * s * b * h * (1 - 1 / t) if sp else 0
    # one layer under "op": what it keeps plus the working set = the whole layer plus what the
    # policy keeps that the layer's own count does not (logsumexp, the down output, the scatters)
    extra = s * b * (4 * a / t + 2 * h + (4 * h / t if sp and t > 1 else 0))
    assert op1 == pytest.approx(one + extra + gathered)
    assert kept < one


def test_full_recompute_keeps_inputs_and_one_layers_working_set():
    s, b, h, a = 4096, 1, 8192, 64
    full = [calc.activation_bytes(n, h, a, s, b, recompute="full", flash_attention=True) for n in (10, 20)]
    none = calc.activation_bytes(1, h, a, s, b, flash_attention=True)
    assert full[1] - full[0] == pytest.approx(10 * 2 * s * b * h)  # each layer's 16-bit input
    assert full[0] - 10 * 2 * s * b * h == pytest.approx(none)      # plus one layer recomputed


def test_interleaved_pipeline_holds_more_in_flight():
    # Korthikanti §4.2.3: L·(1 + (p - 1)/(p·v)) layers' worth; the NeMo 70B recipe's VPP 5 at p 4: +15%
    kw = {"recompute": "selective", "tensor_parallel": 4, "sequence_parallel": True, "pipeline_parallel": 4}
    plain = calc.activation_bytes(80, 8192, 64, 4096, 1, **kw)
    vpp = calc.activation_bytes(80, 8192, 64, 4096, 1, virtual_stages=5, **kw)
    assert vpp / plain == pytest.approx(1.15)


def test_moe_layers_average_with_the_dense_ones():
    kw = {"ffn_dim": 4096, "gated_mlp": True, "n_experts": 8, "top_k": 2, "moe_ffn_dim": 1024}
    all_moe = calc.activation_bytes(4, 1024, 8, 512, 1, **kw)
    half = calc.activation_bytes(4, 1024, 8, 512, 1, moe_layers=2, **kw)
    dense = calc.activation_bytes(4, 1024, 8, 512, 1, ffn_dim=4096, gated_mlp=True)
    assert half == pytest.approx((all_moe + dense) / 2)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"loss": "chunky"}, "loss must be one of"),
    ({"virtual_stages": 0}, "virtual_stages must be a whole number"),
    ({"dropout": "no", "n_kv_heads": 3}, "n_kv_heads"),
    ({"flash_attention": "False"}, None),
])
def test_activation_options_are_checked(kwargs, message):
    if message is None:  # 'False' is False (calc_checks.flag), not a truthy string
        assert (calc.activation_bytes(2, 512, 8, 256, 1, **kwargs)
                == calc.activation_bytes(2, 512, 8, 256, 1, flash_attention=False))
        return
    with pytest.raises(calc.TrainingBudgetError, match=message):
        calc.activation_bytes(2, 512, 8, 256, 1, **kwargs)
