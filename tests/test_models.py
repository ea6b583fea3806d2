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


# --- load_config: local config.json files (tests/data/configs, sources in SOURCES.md) -------
import json  # noqa: E402
from pathlib import Path  # noqa: E402

from trainbudget.calc.config import load_config  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "configs"


@pytest.mark.parametrize(("file", "preset"), [("Llama-3.1-8B.json", "Llama 3.1 8B"),
                                              ("Mixtral-8x7B-v0.1.json", "Mixtral 8x7B"),
                                              ("Qwen3-30B-A3B.json", "Qwen3-30B-A3B")])
def test_config_gives_the_preset_shape(file, preset):
    got = calc.model_params(**load_config(CONFIGS / file).shape)
    want = model_preset(preset).params()
    assert (got.total, got.active) == (want.total, want.active)


def test_qwen3_moe_config_counts_near_published():
    got = calc.model_params(**load_config(CONFIGS / "Qwen3-30B-A3B.json").shape)
    assert got.total == pytest.approx(30.5e9, rel=0.005)
    assert got.active == pytest.approx(3.3e9, rel=0.02)  # the card rounds to 3.3B


def _write(tmp_path, **changes):
    data = json.loads((CONFIGS / "Llama-3.1-8B.json").read_text())
    data.update(changes)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(data))
    return p


@pytest.mark.parametrize(("changes", "message"), [
    ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, "model_type must be one of"),
    ({"q_lora_rank": 1536}, "fields not understood: q_lora_rank"),
    ({"attention_bias": True}, "attention_bias true is not modelled"),
    ({"hidden_size": "4096"}, "hidden_size must be a whole number"),
])
def test_config_errors_name_the_field(tmp_path, changes, message):
    with pytest.raises(calc.TrainingBudgetError, match=message):
        load_config(_write(tmp_path, **changes))


def test_config_not_json_or_missing(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(calc.TrainingBudgetError, match="is not JSON"):
        load_config(bad)
    with pytest.raises(calc.TrainingBudgetError, match="cannot be read"):
        load_config(tmp_path / "absent.json")
