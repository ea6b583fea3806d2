"""Activation bytes on the busiest device, from named parts (16-bit activations).

Per layer, bytes per token of the micro-batch (s sequence / context parallel, b micro-batch,
h d_model, q = n_heads·head_dim the query width, k = n_kv_heads·head_dim the key/value width,
f the MLP width, t tensor parallel). Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", arXiv:2205.05198, §4.1 and Table 2, term by term,
with the Q/K/V widths and the MLP generalised (their h becomes q, k or f where the tensor is
that wide):
- layer norms: 2 inputs of 2·h (§4.1, "Layer norm"): 4h, kept whole unless sequence parallel;
- attention: the QKV input 2h (whole), Q 2q, K 2k, V 2k, the output projection's input 2q,
  dropout mask h (whole): 2h + 4q + 4k + h, which is §4.1's 11h when q = k = h;
  scores a·s·(2 softmax + 1 mask + 2 dropout output) = 5·a·s (2·a·s without dropout), gone
  under selective recompute (§5) and FlashAttention (Dao et al. 2022, arXiv:2205.14135, §3.1:
  the s² matrices are never stored);
- MLP: input 2h (whole), plain (GeLU): 2f + 2f and the dropout mask h, §4.1's 19h at f = 4h;
  gated (SwiGLU, Shazeer 2020, arXiv:2002.05202): gate, up and their product, 6f;
- mixture of experts: the router input 2h, then every token runs as top_k copies, each with
  its expert input 2h and the expert's 6·f_e (gated) or 4·f_e: 2h + k·(2h + 6·f_e)
  (GShard, Lepikhin et al. 2020, arXiv:2006.16668, §2.2, the dispatched copies; Megatron-Core
  MoE's token permutation keeps them for backward); shared experts add 6·f_e each
  (DeepSeekMoE, arXiv:2401.06066, §3.2).
With q = k = h, f = 4h, a plain MLP and dropout: 34h + 5·a·s, Table 2's figure exactly.

Recompute: "selective" drops the scores (Korthikanti §5); "full" stores each layer's input
2h and, while one layer is being recomputed in backward, that layer's whole working set
(Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost", arXiv:1604.06174, §3:
checkpointed memory = the segment inputs plus one segment's recomputed activations).
"offload" is full recompute with each layer's checkpointed input kept in host memory (MaxText's
remat_policy=custom with decoder_layer_input=offload, github.com/AI-Hypercomputer/maxtext
src/MaxText/configs/base.yml; Megatron-Core's TransformerConfig.cpu_offloading): on the device only
one layer's input is in flight to or from the host, beside the layer being recomputed, the embedding
and the loss. It is counted as "full" with one layer a stage (n_layers = pipeline_parallel, at most
that many of them MoE) and one micro-batch in flight, what calc.fit counts for it.
"op" is torchtitan's op-level selective checkpointing (github.com/pytorch/torchtitan
torchtitan/parallelisms/parallelize_llama.py @ 9dec370, the commit docs/performance.md was
measured with: `_save_list` lines 213-223, `_custom_policy` lines 250-266): per layer it
keeps the outputs of aten.mm except every second one (the layer's matmuls run Q, K, V, O,
then gate, up, down, models/llama/model.py lines 189, 214, 253), the flash-attention output,
and the reduce-scatter outputs; everything else is recomputed. Per token of one layer:
the checkpointed layer input 2h (whole unless sequence parallel); Q 2q and V 2k (matmuls 1
and 3); the attention output 2q and its fp32 logsumexp 4·a (the SDPA op's outputs); the MLP's
first matmul 2f (gate, or a plain MLP's first projection; matmul 5) and, gated, the down
projection's output 2h (matmul 7; under tensor parallelism its row-parallel partial sum, full
width, before the reduce-scatter); with tensor and sequence parallelism the two
reduce-scatter outputs 2h each. A mixture of experts runs that MLP pattern on each of its
top_k (and shared) token copies (torchtitan's 2024 policy predates its MoE models: the parity
of the experts' matmuls is assumed to follow the dense MLP's). The layer being recomputed
adds its working set: the no-recompute layer less what the policy already keeps.
Under sequence parallelism the recomputed layer's working set also holds the all-gathered
inputs of the attention and MLP blocks whole, 2h each: PyTorch's ColwiseParallel (torchtitan
apply_tp) saves the gathered input for the weight gradient, and Megatron re-gathers it in
backward for the same gradient (Korthikanti §4.2.2), one at a time, so two errs safe there.

Loss: the last stage keeps the final norm and output-projection inputs 4h and, per logit
element (vocab / t of them per token; Megatron's vocab-parallel cross-entropy, Shoeybi et al.
2019, arXiv:1909.08053, §3), `LOSS_BYTES_PER_LOGIT`, at the loss's peak while every layer's
activations are still held:
- "standard" 12 B: PyTorch's F.cross_entropy on upcast logits (torchtitan train.py @ 9dec370
  lines 131-133, `pred.flatten(0, 1).float()`). The forward holds bf16 logits 2 + the fp32
  upcast 4 + the fp32 log-probabilities 4 = 10 B; the bf16 logits are dropped before backward
  (`del pred`, line 307), whose first step holds the saved log-probabilities 4, nll_loss's
  gradient 4 and log_softmax's input gradient 4 (aten _log_softmax_backward_data: grad_output,
  output and grad_input are separate fp32 tensors): 12 B, the larger.
- "parallel" 16 B: the same loss under PyTorch's loss_parallel with vocab-sharded logits
  (torch/distributed/tensor/parallel/loss.py, on by default with tensor parallelism in
  torchtitan, train.py line 57): the saved log-probabilities 4, `grad_input = zeros_like(x)` 4,
  `torch.exp(x)` 4 and their sum 4 (`_nll_loss_and_log_softmax_backward`'s
  `(grad_input + torch.exp(x)) * grad_output`); its forward, `_log_softmax`, peaks lower
  (bf16 2 + upcast 4 + shifted 4 + exp or result 4 = 14).
- "fused" 2 B: a chunked loss that keeps the bf16 logits and upcasts and differentiates one
  chunk at a time (torchtune's CEWithChunkedOutputLoss, "upcasting to fp32 in chunks"; Liger
  Kernel's fused linear cross-entropy, arXiv:2410.10989, §3.2, stores less still, so "fused"
  errs on the safe side there).

Pipeline (1F1B, Narayanan et al. 2021, arXiv:2104.04473, §2.2; Korthikanti §4.2.3): the first
stage holds min(p, micro_batches) micro-batches of L/p layers; with `virtual_stages` v > 1
(interleaved schedule) L/p·p·(1 + (p - 1)/(p·v)) layers' worth (Korthikanti §4.2.3). The first
stage also holds the embedding dropout mask h per micro-batch; the result is the larger of the
first and last stage (one stage when p = 1). Without sequence parallelism the whole terms are
not divided by t. Context parallelism splits s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from ..base.checks import choice, divides, flag, whole
from ..base.errors import agree, broadcasts, out, pick
from ..model.arch import Arch
from .recompute import RECOMPUTE_ORDER

LOSS_BYTES_PER_LOGIT = {"standard": 12.0, "parallel": 16.0, "fused": 2.0}  # sources: module doc
LOSSES = tuple(LOSS_BYTES_PER_LOGIT)
RECOMPUTE = RECOMPUTE_ORDER  # none, selective, op, full, offload (calc.physics.recompute)


@dataclass(frozen=True)
class Microbatch:
    """How one micro-batch passes through the layout (the kernel's second part, beside the model's
    Arch): `seq_len` tokens and `micro_batch` sequences; `recompute` none | selective | op | full | offload;
    `tensor_parallel`, `pipeline_parallel`, `context_parallel` degrees, `virtual_stages` (interleaved
    stages per device), `micro_batches` in flight (None: the pipeline depth); `sequence_parallel`,
    `flash_attention`, `dropout` switches; `loss` standard | parallel | fused; `moe_layers` how many
    layers are MoE (None: all, for n_experts > 1). Fields broadcast."""

    seq_len: Any
    micro_batch: Any
    recompute: str = "none"
    tensor_parallel: Any = 1
    pipeline_parallel: Any = 1
    context_parallel: Any = 1
    virtual_stages: Any = 1
    micro_batches: Any = None
    sequence_parallel: bool = False
    flash_attention: bool = False
    dropout: bool = True
    loss: str = "standard"
    moe_layers: Any = None


class _Sizes(NamedTuple):
    """A micro-batch's checked sizes: tokens sb = s·b per device, widths h, q, kv, f, heads a, the
    sequence share s, tensor degree t (t_s under sequence parallelism, else 1), switches."""

    sb: Any
    h: Any
    q: Any
    kv: Any
    f: Any
    a: Any
    s: Any
    t: Any
    t_s: Any
    sp: bool
    drop: float
    gated: bool


def _width(name: str, value: Any, default: Any) -> Any:
    return default if value is None else whole(name, value)


def _layer(z: _Sizes, mlp_split: Any, scores: bool) -> Any:
    """One layer's activation bytes: the whole (norm, inputs, masks) and split terms."""
    h, drop, t = z.h, z.drop, z.t
    whole_part = 4.0 * h + 2.0 * h + drop * h + 2.0 * h + drop * h    # norms, attn in, mask, mlp in, mask
    split_part = 4.0 * z.q + 4.0 * z.kv + mlp_split
    per = whole_part / t + split_part / t if z.sp else whole_part + split_part / t
    if scores:
        per = per + (5.0 if drop else 2.0) * z.a * z.s / t
    return z.sb * per


def _op_kept(z: _Sizes, copies: Any, width: Any) -> tuple[Any, Any]:
    """One layer's bytes kept by torchtitan's op-level policy (recompute "op", module doc), and
    the part of them the no-recompute layer also counts (input, Q, V, attention output, the
    MLP's first matmul) so the recomputed working set is not counted twice."""
    h, q, kv, t = z.h, z.q, z.kv, z.t
    layer_input = 2.0 * h / z.t_s                # the checkpointed input
    attention = (2.0 * q + 2.0 * kv + 2.0 * q) / t   # Q and V (mm 1, 3), the SDPA output
    first = copies * 2.0 * width / t             # gate or first projection (mm 5), per token copy
    down = copies * 2.0 * h * z.gated            # gated down projection (mm 7): full width
    scatter = pick(t > 1, 4.0 * h / t, 0.0) if z.sp else 0.0   # reduce-scatter outputs (O, down)
    overlap = layer_input + attention + first
    return z.sb * (overlap + 4.0 * z.a / t + down + scatter), z.sb * overlap   # + fp32 logsumexp


# flat: one numpy-broadcasting argument per TRAIN_ACTIVATION_BYTES argument (Excel's flat call)
@broadcasts
def activation_bytes(n_layers: Any, d_model: Any, n_heads: Any, seq_len: Any, micro_batch: Any,
                     *, recompute: str = "none", tensor_parallel: Any = 1,
                     sequence_parallel: bool = False, flash_attention: bool = False,
                     pipeline_parallel: Any = 1, context_parallel: Any = 1, vocab: Any = None,
                     micro_batches: Any = None, n_kv_heads: Any = None, head_dim: Any = None,
                     ffn_dim: Any = None, gated_mlp: bool = False, dropout: bool = True,
                     n_experts: Any = 1, top_k: Any = 1, moe_ffn_dim: Any = None,
                     n_shared_experts: Any = 0, moe_layers: Any = None, loss: str = "standard",
                     virtual_stages: Any = 1) -> np.ndarray | float:
    """Activation bytes on the busiest device (terms and sources: module doc).

    Shape defaults are Korthikanti's (multi-head, head_dim d_model/n_heads, a plain 4·d_model
    MLP with dropout): 34·s·b·h + 5·a·s²·b per layer. Give `n_kv_heads`, `head_dim`,
    `ffn_dim`, `gated_mlp`, `dropout=False`, and for a mixture of experts `n_experts`, `top_k`,
    `moe_ffn_dim`, `n_shared_experts`, `moe_layers` (how many layers are MoE; default all) for
    a modern model (with n_experts 1 those four are checked, not used). `recompute`: "none",
    "selective" (Korthikanti §5), "op" (torchtitan's op-level policy), "full" or "offload" (full
    recompute, layer inputs in host memory: "full" at n_layers = pipeline_parallel, micro_batches 1). `loss`
    "standard" (12 B per logit element), "parallel" (16 B, PyTorch's loss_parallel) or "fused" (2 B).
    `virtual_stages`: interleaved pipeline stages per device (1: plain 1F1B).
    """
    # the kernel, activations_of, takes the model's Arch and the Microbatch
    arch = Arch(n_layers, d_model, n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, ffn_dim=ffn_dim,
                gated_mlp=gated_mlp, vocab=vocab, n_experts=n_experts, top_k=top_k, moe_ffn_dim=moe_ffn_dim,
                n_shared_experts=n_shared_experts)
    run = Microbatch(seq_len, micro_batch, recompute=recompute, tensor_parallel=tensor_parallel,
                     pipeline_parallel=pipeline_parallel, context_parallel=context_parallel,
                     virtual_stages=virtual_stages, micro_batches=micro_batches, sequence_parallel=sequence_parallel,
                     flash_attention=flash_attention, dropout=dropout, loss=loss, moe_layers=moe_layers)
    return activations_of(arch, run)


def activations_of(arch: Arch, run: Microbatch) -> np.ndarray | float:
    """Activation bytes on the busiest device for `arch` run as `run` (terms and sources: module doc;
    `arch.vocab` None leaves out the loss and embedding terms)."""
    mode = choice("recompute", run.recompute, RECOMPUTE)
    lossk = choice("loss", run.loss, LOSSES)
    z, L, p, v_st = _sizes(arch, run)
    if mode == "offload":  # "full" with one layer a stage and one micro-batch on the device (module doc)
        mode, L, run = "full", p, _offloaded(run, p)
    base, kept, overlap = _stack(arch, run, z, L)
    scores = 0.0 if flag("flash_attention", run.flash_attention) else (5.0 if z.drop else 2.0) * z.a * z.s / z.t * z.sb
    gathered = 4.0 * z.sb * z.h * (1.0 - 1.0 / z.t) if z.sp else 0.0   # attention and MLP inputs, whole
    if mode == "full":
        per_layer = 2.0 * z.sb * z.h / z.t_s
        working = base + scores + gathered   # one layer recomputed in backward (Chen et al. 2016)
    elif mode == "op":
        per_layer = kept
        working = np.maximum(base - overlap, 0.0) + scores + gathered
    else:
        per_layer = base + (0.0 if mode == "selective" else scores)
        working = 0.0
    m = p if run.micro_batches is None else np.minimum(whole("micro_batches", run.micro_batches), p)
    interleave = pick(v_st > 1, 1.0 + (p - 1.0) / (p * v_st), 1.0)
    first = (L / p) * m * interleave * per_layer + working
    if arch.vocab is None:
        return out(first)
    V = whole("vocab", arch.vocab)
    embedding = z.sb * z.h * m / z.t_s                                   # dropout mask, 1 B
    logits = 4.0 * z.sb * z.h / z.t_s + LOSS_BYTES_PER_LOGIT[lossk] * z.sb * V / z.t
    last = (L / p) * per_layer + working + logits
    return out(pick(p == 1, first + embedding + logits, np.maximum(first + embedding, last)))


def _offloaded(run: Microbatch, p: Any) -> Microbatch:
    """`run` as "offload" counts it on a stack of `p` layers (one a stage): one micro-batch in flight,
    at most p of the layers MoE; the given micro_batches and moe_layers are checked first."""
    if run.micro_batches is not None:
        whole("micro_batches", run.micro_batches)
    moe = None if run.moe_layers is None else np.minimum(whole("moe_layers", run.moe_layers, minimum=0), p)
    return replace(run, micro_batches=1.0, moe_layers=moe)


def _sizes(arch: Arch, run: Microbatch) -> tuple[_Sizes, Any, Any, Any]:
    """The checked sizes, the layer count, the pipeline depth and the virtual stages."""
    L = whole("n_layers", arch.n_layers)
    h = whole("d_model", arch.d_model)
    a = whole("n_heads", arch.n_heads)
    t = whole("tensor_parallel", run.tensor_parallel)
    p = whole("pipeline_parallel", run.pipeline_parallel)
    c = whole("context_parallel", run.context_parallel)
    v_st = whole("virtual_stages", run.virtual_stages)
    divides("tensor_parallel", t, "n_heads", a)
    divides("pipeline_parallel", p, "n_layers", L)
    s = whole("seq_len", run.seq_len) / c
    b = whole("micro_batch", run.micro_batch)
    sp = flag("sequence_parallel", run.sequence_parallel)
    flag("flash_attention", run.flash_attention)
    drop = 1.0 if flag("dropout", run.dropout) else 0.0
    gated = flag("gated_mlp", arch.gated_mlp)
    hd = _width("head_dim", arch.head_dim, h / a)
    n_kv = _width("n_kv_heads", arch.n_kv_heads, a)
    if arch.n_kv_heads is not None:
        divides("n_kv_heads", n_kv, "n_heads", a)
    f = _width("ffn_dim", arch.ffn_dim, 4.0 * h)
    z = _Sizes(sb=s * b, h=h, q=a * hd, kv=n_kv * hd, f=f, a=a, s=s, t=t, t_s=t if sp else 1.0, sp=sp, drop=drop,
               gated=gated)
    return z, L, p, v_st


def _stack(arch: Arch, run: Microbatch, z: _Sizes, L: Any) -> tuple[Any, Any, Any]:
    """One layer's bytes with no recompute, and under the op-level policy (kept, overlap), as the
    mean over the stack when some layers are MoE; the MoE fields are checked for a dense model too."""
    inner = 6.0 if z.gated else 4.0
    dense_layer = _layer(z, inner * z.f, scores=False)
    E = whole("n_experts", arch.n_experts)
    kept, overlap = _op_kept(z, 1.0, z.f)
    k = whole("top_k", arch.top_k)
    fe = _width("moe_ffn_dim", arch.moe_ffn_dim, z.f)
    shared = whole("n_shared_experts", arch.n_shared_experts, minimum=0)
    moe_l = L if run.moe_layers is None else whole("moe_layers", run.moe_layers, minimum=0)
    if type(E) is float and E == 1.0:
        agree(("n_layers", "d_model", "n_heads", "seq_len", "micro_batch", "top_k", "moe_ffn_dim",
               "n_shared_experts", "moe_layers"),
              (arch.n_layers, arch.d_model, arch.n_heads, run.seq_len, run.micro_batch, arch.top_k, arch.moe_ffn_dim,
               arch.n_shared_experts, run.moe_layers))
        return dense_layer, kept, overlap
    n_moe = pick(E > 1, moe_l, 0.0)
    moe_layer = _layer(z, k * (2.0 * z.h + inner * fe) + shared * inner * fe, scores=False)
    moe_kept, moe_overlap = _op_kept(z, k + shared, fe)

    def mean(moe: Any, dense: Any) -> Any:  # over the stack: n_moe MoE layers, the rest dense
        return (n_moe * moe + (L - n_moe) * dense) / L

    return mean(moe_layer, dense_layer), mean(moe_kept, kept), mean(moe_overlap, overlap)
