"""The command line's words say what they mean: memory in decimal GB with GiB beside (the starting
document's "112 GB"), the method for what it is ("fine-tune" only for LoRA and QLoRA, which adapt
a trained model), "fits" only with "before activations" while activations are not counted, and a
config.json named by its file or its `_name_or_path`, never by its family."""

from __future__ import annotations

import json
import shutil

from tests.conftest import DATA, invoke

H100 = "H100 SXM, BF16 tensor core, dense"


def test_estimate_prints_the_seeds_headline_and_table(seed_lines):
    out = invoke("estimate", check=True).stdout
    first, second = out.splitlines()[:2]
    assert "112 GB (104.3 GiB) of weights, gradients and optimizer state" in first
    assert second == "1B training tokens: 42 EFLOP"
    for line in seed_lines[2:]:  # the four rates, word for word as the seed printed them
        assert line.split("[")[0].rstrip() in out


def test_the_method_is_named_for_what_it_is():
    pretrain = invoke("estimate", "--model", "Llama 3.1 405B", "--tokens", "15T", "--devices", "16384",
                      "--zero-stage", "3", "--device", H100, check=True).stdout
    assert pretrain.startswith("training of all weights of a Llama 3.1 405B")
    assert "fine-tune" not in pretrain.splitlines()[0]
    lora = invoke("estimate", "--method", "lora", "--device", H100, check=True).stdout
    assert lora.startswith("LoRA fine-tune of a 7B")


def test_fits_says_before_activations_until_they_are_counted():
    out = invoke("estimate", "--model", "Llama 3.1 405B", "--tokens", "15T", "--devices", "16384",
                 "--zero-stage", "3", "--device", H100, check=True).stdout
    assert "fits before activations (" in out
    assert not [line for line in out.splitlines() if " fits (" in line]


def test_a_config_json_is_named_by_its_file(tmp_path):
    folder = tmp_path / "qwen3"
    folder.mkdir()
    config = json.loads((DATA / "configs" / "Llama-3.2-1B.json").read_text("utf-8"))
    config.pop("_name_or_path", None)
    (folder / "config.json").write_text(json.dumps(config), "utf-8")
    out = invoke("estimate", "--config", str(folder / "config.json"), check=True).stdout
    assert out.startswith("training of all weights of a qwen3/config.json, 1.24B")
    named = tmp_path / "named"
    shutil.copytree(folder, named)
    config["_name_or_path"] = "meta-llama/Llama-3.2-1B"
    (named / "config.json").write_text(json.dumps(config), "utf-8")
    assert "of a meta-llama/Llama-3.2-1B, 1.24B" in invoke("estimate", "--config", str(named / "config.json"),
                                                           check=True).stdout
