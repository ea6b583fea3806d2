"""Parameter counts from shapes against published figures (calc/data/models.csv)."""

import pytest

from trainbudget import calc
from trainbudget.calc.models import model_preset, model_presets


@pytest.mark.parametrize("name", ["Llama 3.1 8B", "Llama 3.1 70B", "Llama 3.1 405B", "Mixtral 8x7B"])
def test_counts_from_shape_within_half_a_percent_of_published(name):
    preset = model_preset(name)
    assert preset.has_shape
    got = preset.params()
    assert got.total == pytest.approx(preset.published_total_params, rel=0.005)
    assert got.active == pytest.approx(preset.published_active_params, rel=0.005)


def test_llama_8b_exact_count_and_parts_sum():
    b = calc.model_params(32, 4096, 32, n_kv_heads=8, ffn_dim=14336, vocab=128256)
    assert b.total == 8_030_261_248  # safetensors count of meta-llama/Llama-3.1-8B
    assert b.total == b.embedding + b.attention + b.mlp + b.router + b.norms
    assert b.embedding == 2 * 128256 * 4096
    assert b.attention == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)


def test_moe_active_counts_top_k_experts():
    b = model_preset("Mixtral 8x7B").params()
    expert = 3 * 4096 * 14336
    assert b.experts == 32 * 8 * expert
    assert b.total - b.active == 32 * 6 * expert
    assert b.router == 32 * 4096 * 8


def test_deepseek_v3_is_published_totals():
    p = model_preset("DeepSeek-V3")
    assert not p.has_shape
    assert (p.params().total, p.params().active) == (671e9, 37e9)


def test_every_preset_has_source_and_as_of():
    for p in model_presets().values():
        assert p.source and p.as_of


def test_shape_errors_name_the_argument():
    with pytest.raises(calc.TrainingBudgetError, match="n_kv_heads must divide n_heads"):
        calc.model_params(2, 64, 8, n_kv_heads=3)
    with pytest.raises(calc.TrainingBudgetError, match="top_k must be <= n_experts"):
        calc.model_params(2, 64, 8, n_experts=2, top_k=3)
    with pytest.raises(calc.TrainingBudgetError, match="model must be one of"):
        model_preset("Llama 9")


def test_broadcasts_over_arrays():
    b = calc.model_params([32, 80], 4096, 32)
    assert b.total.shape == (2,)
