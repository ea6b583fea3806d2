"""Each term of a training step, one named function each, in seconds per step on one device.

Shared notation (calc.step.layout): t, p, v, c, e, D the TP, PP, virtual-stage, CP, EP and DP
degrees; b the micro-batch, m micro-batches per step, s the sequence length, B global batch
tokens. A device's pipeline stage sees B / (D x c) tokens per step and holds L / p layers.
Bandwidths: W_up is half the scale-up figure (one direction: the catalog's is both directions,
the scaling book's convention), W_out is the NIC's Gb/s / 8. Ring collectives move
2 (g-1)/g x bytes per device for an all-reduce and half that for a reduce-scatter or all-gather
(Austin et al., "How to Scale Your Model", jax-ml/scaling-book, sharding.md). Every function takes
scalars or numpy arrays and broadcasts (calc.step.ops: plain Python for floats).
"""

from __future__ import annotations

from typing import Any

from .ops import least, most, pick

BYTES_16BIT = 2.0  # activations and gradients in BF16 (Megatron's default, Korthikanti et al. 2022 s.4)


def flops_per_token(n_active: Any, n_layers: Any, attn_dim: Any, seq_len: Any, recompute: Any,
                    trained: Any = 1.0) -> tuple[Any, Any]:
    """(FLOPs per token done, of which model FLOPs) for training.

    Model FLOPs: 6·N_active (Kaplan et al. 2020 s.2.1) plus causal attention's score and value
    matmuls, 6·L·s·attn_dim (half of 12·L·s·d without the mask: Narayanan et al. 2021 s.5.1's
    formula, PaLM App. B). Recompute adds a forward pass: full recompute all of it (2·N + 2·L·s·a),
    selective only the attention core (2·L·s·a) (Korthikanti et al. 2022 s.5, Table 2).
    `trained` the share of the weights that get gradients (1 full training): the backward's 4·N
    is 2·N for the input gradients and 2·N for the weight gradients, which frozen weights skip
    (LoRA's base, Hu et al. 2021 s.4.2: 2·N + 2·N + 2·N·trained, the adapters' share).
    """
    attention = 6.0 * n_layers * seq_len * attn_dim
    model = (4.0 + 2.0 * trained) * n_active + attention
    extra = (recompute >= 1) * attention / 3.0 + (recompute >= 2) * 2.0 * n_active
    return model + extra, model


def attention_flops(n_layers: Any, attn_dim: Any, seq_len: Any, recompute: Any) -> Any:
    """FLOPs per token of the attention core (QK^T and AV, forward and backward, causal), recompute's
    extra forward of it included: 6·L·s·a, and a third more under selective or full recompute
    (Korthikanti et al. 2022 s.5). These run in the fused flash-attention kernels (Dao 2023,
    FlashAttention-2, arXiv:2307.08691 s.4: 50-73% of A100 peak forward, lower backward), not in the
    GEMMs, so at their own achievable rate (attention_rate)."""
    attention = 6.0 * n_layers * seq_len * attn_dim
    return attention * (1.0 + (recompute >= 1) / 3.0)


def attention_rate(rate: Any, chunk: Any, tile: Any) -> Any:
    """The flash-attention kernels' achievable FLOP/s on a device whose query block and each K,V
    block are `chunk` tokens long: rate x chunk / (chunk + tile). The kernels reach much less of
    their rate on short sequences (FlashAttention-3, Shah et al. 2024, arXiv:2407.08608 Fig. 5-6,
    H100, head dim 128, 16K tokens a batch: causal forward 292, 423, 521, 579, 602 and 616 TFLOP/s at
    512 to 16K tokens, backward 316 to 561), which this one-parameter curve follows with `tile`
    tokens the length at which half the rate is reached (calc.step.calibrate's attention_tile).
    Context parallelism cuts the sequence into c blocks of s/c (Megatron-Core's load-balanced split
    gives each rank 2 chunks of s/2c, one from each end), so the blocks shrink as c grows."""
    return rate * chunk / (chunk + tile)


def unfused_attention_seconds(tokens: Any, n_layers: Any, n_heads: Any, seq_len: Any, recompute: Any,
                              memory_Bps: Any) -> Any:
    """The score traffic of attention without a fused kernel, its s x s scores through HBM: Megatron-Core's
    unfused and local backends (--attention-backend), Transformer Engine's UnfusedDotProductAttention (its one
    backend for learnable softmax sinks, GPT-OSS's, where cuDNN has no fused kernel for the shape: TE 2.17's
    support matrix, quoted in radixark/miles PR #1917; flash-attention with sinks, TE issue #2070), Hugging
    Face's eager attention. Per score element of each head, 2 bytes an access: forward S written, read by the
    softmax, P written, read by P·V (4); backward dP written, P and dP read, dS written, P read for dV, dS read
    for dQ and dK (7); recomputing the core repeats the forward (4 more); the mask applies to the whole square
    (a causal model saves nothing). The step adds this traffic to the attention's math at the fused kernels'
    rate (the roofline's two costs summed, as weight_read_seconds does), so unfused is never the faster;
    counting the math on the whole square too fits the measured rows worse (bench/bench_steptime.py, all 61 rows
    leave-one-out: 8.8% and 45 within 15%, MoE 18.4%, against 8.3%, 48 and 7.5%). `tokens` the device's query
    tokens per step (its TP share of the heads in them)."""
    accesses = pick(recompute >= 1, 15.0, 11.0)
    return tokens * n_layers * n_heads * seq_len * accesses * BYTES_16BIT / memory_Bps


def compute_seconds(tokens: Any, flops_low: Any, flops_16: Any, rate_low: Any, rate_16: Any) -> Any:
    """Matmul time: FLOPs that run at the low-precision (FP8) rate plus those at the 16-bit rate,
    each at its achievable rate (FLOP/s) per device; `tokens` the device's tokens per step."""
    return tokens * (flops_low / rate_low + flops_16 / rate_16)


def vector_seconds(tokens: Any, layers: Any, d_model: Any, tp: Any, recompute: Any, bytes_per_element: Any,
                   memory_Bps: Any) -> Any:
    """Memory-bound elementwise work (norms, activations, residuals, softmax, dropout): about
    `bytes_per_element` bytes of HBM traffic per hidden element per layer and token, split by TP
    (sequence parallelism, Korthikanti et al. 2022 s.4.2.2); full recompute repeats the forward's
    third. Calculon models these vector ops by memory bandwidth the same way (Isaev et al. SC'23 s.3)."""
    again = pick(recompute >= 2, 4.0 / 3.0, 1.0)
    return tokens * layers * d_model / tp * bytes_per_element * again / memory_Bps


def tp_seconds(tokens: Any, layers: Any, d_model: Any, tp: Any, recompute: Any, link_Bps: Any) -> Any:
    """Tensor-parallel collectives on the critical path: per layer 2 all-reduces of the b·s·d
    activations in the forward and 2 in the backward (sequence parallelism swaps each for a
    reduce-scatter + all-gather of the same volume), 2 more when full recompute repeats the forward
    (Shoeybi et al. 2019 s.3, Fig. 4; Korthikanti et al. 2022 s.4.2.2)."""
    collectives = pick(recompute >= 2, 6.0, 4.0)
    moved = 2.0 * (tp - 1.0) / tp * d_model * BYTES_16BIT
    return tokens * layers * collectives * moved / link_Bps


def cp_seconds(tokens: Any, layers: Any, kv_dim: Any, tp: Any, cp: Any, recompute: Any, attention_seconds: Any,
               link_Bps: Any) -> Any:
    """Context parallelism's exposed ring exchange: c-1 ring steps, in each of which every device
    sends its current K,V block (its tokens' kv_dim/t values each: TP splits the heads) to the next
    rank while it computes attention against the block it holds; the backward sends K,V and dK,dV
    (twice the forward's bytes), and recompute's extra forward of the attention core sends K,V
    again (Liu et al. 2023, Ring Attention, arXiv:2310.01889 s.3; Megatron-Core's context parallel
    is this P2P ring through Transformer Engine, overlapped with the block attention). Each ring
    step's send hides behind that step's block of attention, `attention_seconds` / c, and only the
    excess shows, per step: (c-1) x max(send - attention / c, 0)."""
    passes = 3.0 + (recompute >= 1)  # forward, backward (K,V and dK,dV), recompute's forward again
    send = tokens * layers * passes * 2.0 * kv_dim / tp * BYTES_16BIT / link_Bps
    return (cp - 1.0) * most(send - attention_seconds / cp, 0.0)


def ep_seconds(tokens: Any, layers: Any, d_model: Any, top_k: Any, ep: Any, recompute: Any,
               links: tuple[Any, Any, Any]) -> Any:
    """Expert-parallel all-to-all: a dispatch and a combine in the forward and both again in the
    backward (2 more with full recompute), each carrying d values per routed copy of a token
    (Lepikhin et al. 2020, GShard s.2; DeepSeek-V3 report arXiv:2412.19437 s.3.2). Over the
    scale-up link every one of the top_k copies not kept on the device moves once, (e-1)/e of
    them. Across the network a token goes once to each remote scale-up domain holding one of its
    experts and is forwarded inside it over the scale-up link (DeepSeek-V3 s.3.2.2: "first
    transmitted via IB to the GPUs with the same in-node index on their target nodes ... then
    forwarded via NVLink"; DeepEP's internode kernels): with the EP group over `domains` domains
    and experts placed uniformly, (G-1)(1-(1-1/G)^k) remote domains per token. The two links run
    at once, so the slower one sets the time. `links`: (the scale-up domains the EP group spans, the
    scale-up and the scale-out bytes/s)."""
    domains, up_Bps, out_Bps = links
    passes = pick(recompute >= 2, 6.0, 4.0)
    per_copy = tokens * layers * passes * d_model * BYTES_16BIT
    remote = (domains - 1.0) * (1.0 - (1.0 - 1.0 / domains) ** top_k)
    return most(per_copy * top_k * (ep - 1.0) / ep / up_Bps, per_copy * remote / out_Bps)


def weight_read_seconds(held: Any, micro_batches: Any, recompute: Any, memory_Bps: Any, trained: Any = 1.0) -> Any:
    """The matmuls' weight traffic: every micro-batch reads the device's weights from HBM in the
    forward and twice in the backward (the input gradient reads W, the weight gradient writes dW),
    once more under full recompute, 2 bytes each. Added to the matmuls' math (the roofline's two
    costs, Williams et al. 2009, CACM 52(4), summed rather than maxed: a GEMM of M tokens then runs
    at M / (M + ridge) of its rate, the ridge being FLOP/s over HBM bytes/s, about 180 tokens on an
    H100 at its achievable rate; the scaling book's "a matmul is compute-bound only when its batch
    exceeds" that ratio). It grows when a micro-batch has few tokens per weight: a context-parallel
    chunk, or an MoE that keeps every expert on each device (expert parallel 1). Frozen weights
    (1 - `trained` of them) write no weight gradient."""
    reads = pick(recompute >= 2, 3.0 + trained, 2.0 + trained)
    return micro_batches * held * BYTES_16BIT * reads / memory_Bps


def bubble_fraction(pp: Any, vpp: Any, micro_batches: Any) -> Any:
    """Pipeline bubble as a share of the step, (p-1) / (v·m + p - 1) for 1F1B with v interleaved
    stages per device (Narayanan et al. 2021 s.2.2, eq. for the interleaved schedule)."""
    return (pp - 1.0) / (vpp * micro_batches + pp - 1.0)


def dp_seconds(params: Any, dp: Any, zero_stage: Any, inside: Any, up_Bps: Any, out_Bps: Any,
               trained: Any = 1.0) -> Any:
    """Data-parallel traffic per pass: gradients reduced as an all-reduce (ZeRO 0-2: reduce-scatter +
    all-gather of the same volume; Rajbhandari et al. 2020 s.5) or, for ZeRO-3/FSDP, weights
    all-gathered in the forward and the backward plus the gradients' reduce-scatter (1.5x). `params`
    each device holds before DP sharding; `dp` the ranks that hold the same weights (data x context
    parallel: Megatron-Core reduces gradients over the DP-CP group); `inside` of them share one
    scale-up domain: a hierarchical ring moves the full volume over it and 1/inside of it over each
    device's NIC (NCCL's rings run one per NIC, scaling book s. "DCN"). Only the `trained` share
    has gradients to reduce (LoRA: the adapters); ZeRO-3 gathers every weight all the same."""
    volume = pick(zero_stage >= 3, 2.0 + trained, 2.0 * trained) * params * BYTES_16BIT
    g_in = least(inside, dp)
    g_out = dp / g_in
    return volume * ((g_in - 1.0) / g_in / up_Bps + (g_out - 1.0) / g_out / (g_in * out_Bps))


def dp_exposed_seconds(comm: Any, compute: Any, micro_batches: Any, layers: Any, zero_stage: Any,
                       overlap: Any) -> Any:
    """The DP traffic the compute does not hide, from how each kind overlaps (`comm` one pass of
    dp_seconds, `compute` the step's work on the device, m micro-batches, `layers` per device):
    ZeRO 0-2 reduce the gradients once a step, bucket by bucket behind the backward of the last
    micro-batch, and gather the updated weights behind the forward of the first (Megatron-Core's
    overlap_grad_reduce and overlap_param_gather): one micro-batch's compute hides them.
    ZeRO-3/FSDP gathers each layer's weights while the previous layer computes and reduce-scatters
    its gradients while the next one does, every micro-batch (PyTorch FSDP's prefetch, Zhao et al.
    2023, arXiv:2304.11277 s.3.3-4.3; torchtitan's FSDP2): per micro-batch the exposed part is
    max(0, comm - compute) plus the first layer's gather, which nothing precedes. `overlap` the
    share of the window the transfer actually gets (kernels share SMs and HBM)."""
    per_mb = compute / micro_batches
    zero3 = micro_batches * (exposed(comm, per_mb, overlap) + comm / (3.0 * most(layers, 1.0)))
    return pick(zero_stage >= 3, zero3, exposed(comm, per_mb, overlap))


def exposed(comm: Any, window: Any, overlap: Any) -> Any:
    """The part of an overlappable transfer that the compute it can hide behind does not cover:
    max(T_comm - overlap x T_window, 0) (the scaling book's max(T_math, T_comm) roofline with an
    overlap efficiency)."""
    return most(comm - overlap * window, 0.0)


def optimizer_seconds(params: Any, dp: Any, zero_stage: Any, memory_Bps: Any) -> Any:
    """Adam's update, memory-bound: about 32 bytes of HBM traffic per parameter (FP32 master weight,
    two moments and gradient read, the three written back, BF16 copy written: Rajbhandari et al.
    2020 s.3's 16 bytes of state, read and written), sharded over the ranks holding the same
    weights (data x context parallel) from ZeRO-1 on."""
    shard = pick(zero_stage >= 1, dp, 1.0)
    return params / shard * 32.0 / memory_Bps
