"""The shapes and configurations bench/gpu_step.py measures, without torch (bench/gpu_compare.py
reads them to put the step model's predictions beside the measured steps)."""

from __future__ import annotations

SHAPES = {  # name: layers, d_model, heads, kv heads, ffn, vocab
    "llama-1b": (16, 2048, 16, 16, 5632, 32000),
    "llama-400m": (24, 1024, 16, 16, 2816, 32000),
    "tiny": (2, 128, 4, 4, 352, 512),
}
# (shape, micro-batch, recompute): two micro-batches at each recompute for the 1B, two for the 400M
# and last, if time is left, the 1B at micro-batch 8 compiled (torch.compile fuses the elementwise work)
CONFIGS = [("llama-1b", 4, "none", False), ("llama-1b", 8, "none", False), ("llama-1b", 4, "full", False),
           ("llama-1b", 8, "full", False), ("llama-400m", 8, "none", False), ("llama-400m", 16, "none", False),
           ("llama-1b", 8, "none", True)]


def config_json(name: str, seq: int) -> dict:
    """The shape as a Hugging Face LlamaForCausalLM config.json (what calc.load_config reads)."""
    layers, d, heads, kv, ffn, vocab = SHAPES[name]
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "_name_or_path": name,
            "num_hidden_layers": layers, "hidden_size": d, "num_attention_heads": heads,
            "num_key_value_heads": kv, "head_dim": d // heads, "intermediate_size": ffn, "vocab_size": vocab,
            "tie_word_embeddings": False, "max_position_embeddings": seq, "rms_norm_eps": 1e-5,
            "hidden_act": "silu", "torch_dtype": "bfloat16"}
