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
    if mode == "full":  # each layer's input; sequence parallelism shards it over t (§4.2.2)
        return L * 2 * s * b * h / (t if sp else 1)
    dense = 34 / t if sp else 10 + 24 / t
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
