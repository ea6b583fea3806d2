"""Published config.json files load as transformers reads them: Gemma 3's multimodal configs leave
fields out of text_config that Gemma3TextConfig's defaults fill, and fields transformers itself
writes are not refused as "not understood"."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, invoke
from trainbudget import calc

CONFIGS = DATA / "configs"
# Gemma 3 report (arXiv:2503.19786), Table 1: non-embedding parameters, millions.
NON_EMBEDDING_M = {"gemma-3-4b-pt.json": 3_209, "gemma-3-27b-pt.json": 25_600}


@pytest.mark.parametrize("file", sorted(NON_EMBEDDING_M))
def test_gemma3_published_configs_load(file):
    preset = calc.load_config(CONFIGS / file)
    counted = calc.model_params(**preset.shape)
    assert preset.note == "gemma3_text"
    assert abs((counted.total - counted.embedding) / 1e6 - NON_EMBEDDING_M[file]) < 1.0
    assert preset.shape["vocab"] == 262_208  # Gemma3TextConfig's default: the files give none


def test_gemma3_defaults_fill_only_what_the_file_leaves_out(tmp_path):
    data = json.loads((CONFIGS / "gemma-3-4b-pt.json").read_text())
    data["text_config"]["vocab_size"] = 1000
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    assert calc.load_config(path).shape["vocab"] == 1000


@pytest.mark.parametrize("field", [{"_attn_implementation_autoset": True}, {"use_bidirectional_attention": False},
                                   {"_sliding_window_pattern": 6}])
def test_fields_transformers_writes_are_accepted(tmp_path, field):
    data = json.loads((CONFIGS / "gemma-3-1b-pt.json").read_text()) | field
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    base = calc.model_params(**calc.load_config(CONFIGS / "gemma-3-1b-pt.json").shape).total
    assert calc.model_params(**calc.load_config(path).shape).total == base


def test_an_unknown_field_is_still_refused(tmp_path):
    data = json.loads((CONFIGS / "gemma-3-1b-pt.json").read_text()) | {"num_extra_towers": 2}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(calc.TrainingBudgetError, match="fields not understood: num_extra_towers"):
        calc.load_config(path)


def test_fit_takes_the_published_27b_config():
    got = invoke("fit", "--config", str(CONFIGS / "gemma-3-27b-pt.json"), "--devices", "8", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["layouts"]
