"""train_flops and chinchilla_tokens against their sources."""

import pytest

from trainbudget import calc


def test_kaplan_six_n_d():
    # Kaplan et al. 2020, §2.1: C = 6ND (forward 2N + backward 4N per token)
    assert calc.train_flops(7e9, 1e9) == pytest.approx(6 * 7e9 * 1e9)


def test_palm_appendix_b_attention_term():
    # PaLM App. B: 6N + 12·L·H·Q·T per token, H·Q = d_model. PaLM 540B: L=118, d=18432, T=2048.
    n, L, d, T, D = 540.35e9, 118, 18432, 2048, 780e9
    got = calc.train_flops(n, D, n_layers=L, d_model=d, seq_len=T)
    assert got == pytest.approx((6 * n + 12 * L * d * T) * D)
    # the attention term is a few percent at this scale, as PaLM notes
    assert 1.0 < got / calc.train_flops(n, D) < 1.1


def test_recompute_full_adds_one_forward():
    # Narayanan et al. 2021 §5.1: full recomputation -> 8N per token (+16·L·d·T)
    n, D = 1e9, 1e6
    assert calc.train_flops(n, D, recompute="full") == pytest.approx(8 * n * D)
    got = calc.train_flops(n, D, n_layers=24, d_model=2048, seq_len=2048, recompute="full")
    assert got == pytest.approx((8 * n + 16 * 24 * 2048 * 2048) * D)


def test_recompute_selective_adds_only_attention():
    n, D = 1e9, 1e6
    got = calc.train_flops(n, D, n_layers=24, d_model=2048, seq_len=2048, recompute="selective")
    assert got == pytest.approx((6 * n + 16 * 24 * 2048 * 2048) * D)
    assert calc.train_flops(n, D, recompute="selective") == calc.train_flops(n, D)


def test_shape_arguments_go_together():
    with pytest.raises(calc.TrainingBudgetError, match="go together"):
        calc.train_flops(1e9, 1e9, n_layers=24)


def test_broadcasting_and_scalar_type():
    got = calc.train_flops([[1e9], [2e9]], [1e6, 2e6, 3e6])
    assert got.shape == (2, 3)
    assert got[1, 2] == pytest.approx(6 * 2e9 * 3e6)
    assert isinstance(calc.train_flops(1e9, 1e9), float)


@pytest.mark.parametrize(("params", "tokens"), [(1e9, 20.2e9), (10e9, 205.1e9), (67e9, 1.5e12)])
def test_chinchilla_table_3(params, tokens):
    # Hoffmann et al. 2022, Table 3: compute-optimal tokens for 1B, 10B and 67B parameters
    assert calc.chinchilla_tokens(params) == pytest.approx(tokens, rel=0.12)


def test_attention_width_is_n_heads_times_head_dim():
    # PaLM App. B, 6N + 12·L·H·Q·T: Qwen3-30B-A3B has H·Q = 32·128 = 4096 on d_model 2048
    # PaLM's N counts both embedding tables (active_with_embedding); torchtitan's leaves the input
    # table out (active): 29.8 and 27.9 GFLOP per token in the reference table
    b = calc.model_preset("Qwen3-30B-A3B").params()
    got = calc.train_flops(b.total, 1, active_params=b.active_with_embedding, n_layers=48, d_model=2048,
                           seq_len=4096, n_heads=32, head_dim=128)
    assert got == pytest.approx(6 * b.active_with_embedding + 12 * 48 * 4096 * 4096)
    assert got / 1e9 == pytest.approx(29.8, abs=0.05)  # ../shared/reference/accuracy-2026.md §4
    mfu = calc.train_flops(b.total, 1, active_params=b.active, n_layers=48, d_model=2048, seq_len=4096,
                           n_heads=32, head_dim=128)
    assert mfu / 1e9 == pytest.approx(27.9, abs=0.05)
    narrow = calc.train_flops(b.total, 1, active_params=b.active_with_embedding, n_layers=48, d_model=2048,
                              seq_len=4096)
    assert narrow < got


def test_sliding_window_layers_count_min_t_window():
    # gpt-oss: every other layer attends to 128 tokens (model card §2.1)
    L, hq, T = 24, 64 * 64, 8192
    got = calc.train_flops(20.9e9, 1, active_params=3.6e9, n_layers=L, d_model=2880, seq_len=T, n_heads=64,
                           head_dim=64, window=128, window_layers=12)
    assert got == pytest.approx(6 * 3.6e9 + 12 * hq * (12 * T + 12 * 128))
    short = calc.train_flops(1e9, 1, n_layers=2, d_model=64, seq_len=100, window=4096)
    assert short == calc.train_flops(1e9, 1, n_layers=2, d_model=64, seq_len=100)  # min(T, window) = T


def test_input_embedding_can_be_left_out_as_mfu_does():
    b = calc.model_preset("Llama 3.1 8B").params()
    emb = 128256 * 4096
    assert calc.train_flops(b.total, 1e12, input_embedding=emb) == pytest.approx(6 * (b.total - emb) * 1e12)
    assert b.active == b.active_with_embedding - emb


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_layers": 2, "d_model": 64, "seq_len": 8, "n_heads": 4}, "n_heads and head_dim go together"),
    ({"n_layers": 2, "d_model": 64, "seq_len": 8, "window_layers": 1}, "window_layers needs window"),
    ({"n_layers": 2, "d_model": 64, "seq_len": 8, "window": 4, "window_layers": 3}, "window_layers must be <="),
    ({"window": 4}, "need n_layers, d_model and seq_len"),
    ({"input_embedding": 2e9}, "input_embedding must be <"),
    ({"input_embedding": -1}, "input_embedding must be"),
])
def test_attention_options_are_checked(kwargs, message):
    with pytest.raises(calc.TrainingBudgetError, match=message):
        calc.train_flops(1e9, 1e9, **kwargs)
