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
