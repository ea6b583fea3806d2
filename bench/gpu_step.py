"""Measure real training steps of small Llama-style transformers with torch on one GPU.

For each configuration (model shape, micro-batch, recompute none or full): a decoder (RMSNorm,
rotary embeddings, causal scaled-dot-product attention, SwiGLU MLP, untied LM head; the Llama
recipe, Touvron et al. 2023 arXiv:2302.13971 s.2.2) with fp32 master weights, BF16 autocast
matmuls, fused AdamW, random token ids; warm-up steps, then each timed step between CUDA events
(METHOD: the median of the repeats, their spread beside it). One device, so tp = pp = cp = dp = 1
and the global batch is one micro-batch (no accumulation). Full recompute checkpoints every
block (torch.utils.checkpoint, non-reentrant): each layer's forward runs again in the backward,
as Megatron's full recompute (Korthikanti et al. 2022 s.5).

Writes one CSV row per configuration (CSV in --out, flushed after each), the model's
config.json (the shape calc reads, transformers' LlamaForCausalLM field names) and prints a
table. `--quick` runs a tiny model on the CPU to check the script end to end.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: N812 (torch's own spelling)
from gpu_shapes import CONFIGS, SHAPES, config_json
from torch import nn
from torch.utils.checkpoint import checkpoint

H200_BF16_DENSE_TFLOPS = 989.5  # calc/data/devices.csv "H200 SXM, BF16 tensor core, dense" (NVIDIA datasheet)

class Block(nn.Module):
    def __init__(self, d: int, heads: int, kv: int, ffn: int) -> None:
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv, d // heads
        self.n1, self.n2 = nn.RMSNorm(d, eps=1e-5), nn.RMSNorm(d, eps=1e-5)
        self.qkv = nn.Linear(d, (heads + 2 * kv) * self.hd, bias=False)
        self.o = nn.Linear(heads * self.hd, d, bias=False)
        self.gate_up = nn.Linear(d, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).split([self.heads * self.hd, self.kv * self.hd, self.kv * self.hd], -1)
        q = rope(q.view(b, s, self.heads, self.hd).transpose(1, 2), cos, sin)
        k = rope(k.view(b, s, self.kv, self.hd).transpose(1, 2), cos, sin)
        v = v.view(b, s, self.kv, self.hd).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv != self.heads)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        g, u = self.gate_up(self.n2(x)).chunk(2, -1)
        return x + self.down(F.silu(g) * u)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding (Su et al. 2021 arXiv:2104.09864), rotate-half form."""
    x1, x2 = x.chunk(2, -1)
    return x * cos.to(x.dtype) + torch.cat((-x2, x1), -1) * sin.to(x.dtype)


class Model(nn.Module):
    def __init__(self, layers: int, d: int, heads: int, kv: int, ffn: int, vocab: int, seq: int,
                 recompute: str) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads, kv, ffn) for _ in range(layers))
        self.norm = nn.RMSNorm(d, eps=1e-5)
        self.head = nn.Linear(d, vocab, bias=False)
        self.recompute = recompute
        hd = d // heads
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        ang = torch.outer(torch.arange(seq).float(), inv)
        ang = torch.cat((ang, ang), -1)
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        cos, sin = self.cos, self.sin
        for blk in self.blocks:
            full = self.recompute == "full"
            x = checkpoint(blk, x, cos, sin, use_reentrant=False) if full else blk(x, cos, sin)
        return self.head(self.norm(x))


def run_config(name: str, mb: int, recompute: str, compiled: bool, seq: int, dev: str, warmup: int,
               steps: int) -> dict:
    layers, d, heads, kv, ffn, vocab = SHAPES[name]
    torch.manual_seed(0)
    model = Model(layers, d, heads, kv, ffn, vocab, seq, recompute).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    fwd = torch.compile(model) if compiled else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev == "cuda")
    ids = torch.randint(0, vocab, (mb, seq + 1), device=dev)
    x, y = ids[:, :-1], ids[:, 1:]
    amp = torch.bfloat16

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev, dtype=amp):
            logits = fwd(x)
        loss = F.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t_first = time.perf_counter()
    first_loss = float(step().detach())
    first_seconds = time.perf_counter() - t_first  # compile time included when compiled
    for _ in range(warmup - 1):
        step()
    times = []
    for _ in range(steps):
        if dev == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            loss = step()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t0 = time.perf_counter()
            loss = step()
            times.append(time.perf_counter() - t0)
    last_loss = float(loss.detach())
    if not (math.isfinite(first_loss) and math.isfinite(last_loss)):
        raise RuntimeError(f"{name} mb={mb} {recompute}: loss is not finite ({first_loss}, {last_loss})")
    med = statistics.median(times)
    q1, _, q3 = statistics.quantiles(times, n=4, method="inclusive")
    tokens = mb * seq
    tps = tokens / med
    flops6n = 6.0 * n_params  # calc's convention: N with the embedding (calc.step.shape.Shape)
    attn = 6.0 * layers * seq * heads * (d // heads)  # calc.step.terms.flops_per_token's causal attention
    peak = torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else float("nan")
    return {"model": name, "params": n_params, "n_layers": layers, "d_model": d, "heads": heads, "kv_heads": kv,
            "ffn": ffn, "vocab": vocab, "tp": 1, "pp": 1, "dp": 1, "micro_batch": mb, "seq_len": seq,
            "global_batch_tokens": tokens, "recompute": recompute, "compiled": compiled, "steps_timed": steps,
            "step_seconds": round(med, 5), "step_spread": round((q3 - q1) / med, 4),
            "tokens_per_second_per_device": round(tps, 1),
            "mfu_6n_attn": round(tps * (flops6n + attn) / (H200_BF16_DENSE_TFLOPS * 1e12), 4),
            "peak_memory_gib": round(peak, 2), "loss_first": round(first_loss, 3), "loss_last": round(last_loss, 3),
            "first_step_seconds": round(first_seconds, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true", help="tiny model on the CPU (checks the script)")
    ap.add_argument("--deadline", type=float, default=240.0, help="seconds: configurations past it are skipped")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if args.quick:
        dev, seq, configs, warmup, steps = "cpu", 64, [("tiny", 2, "none", False), ("tiny", 2, "full", False)], 1, 3
    else:
        dev, seq, configs, warmup, steps = "cuda", 2048, CONFIGS, 3, 10
        torch.backends.cuda.matmul.allow_tf32 = True
    hw = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    for name in sorted({c[0] for c in configs}):
        (args.out / f"config_{name}.json").write_text(json.dumps(config_json(name, seq), indent=1))
    path = args.out / "gpu_step.csv"
    with path.open("w", newline="") as f:
        w = None
        for name, mb, rec, compiled in configs:
            if time.perf_counter() - start > args.deadline:
                print(f"skipped {name} mb={mb} {rec} compiled={compiled}: past the deadline", flush=True)
                continue
            try:
                row = run_config(name, mb, rec, compiled, seq, dev, warmup, steps)
                if dev == "cuda":
                    torch.cuda.empty_cache()
            except Exception as e:  # out of memory, a compile failure: say so, measure the rest
                print(f"{name} mb={mb} {rec} compiled={compiled}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                if dev == "cuda":
                    torch.cuda.empty_cache()
                continue
            row |= {"hardware": hw, "torch": torch.__version__, "date": dt.date.today().isoformat()}
            if w is None:
                w = csv.DictWriter(f, fieldnames=list(row))
                w.writeheader()
            w.writerow(row)
            f.flush()
            label = f"{name:>10} mb={mb:>2} {rec:>4}{' compiled' * compiled}"
            print(f"{label}: {row['step_seconds']:.4f} s (spread {row['step_spread']:.1%}), "
                  f"{row['tokens_per_second_per_device']:>9.0f} tok/s, MFU {row['mfu_6n_attn']:.1%}, "
                  f"peak {row['peak_memory_gib']} GiB, loss {row['loss_first']}->{row['loss_last']} "
                  f"[{time.perf_counter() - start:.0f} s]", flush=True)


if __name__ == "__main__":
    main()
