"""The registry: every Excel function defined once.

Each entry names the Excel function, the calc function it calls, its arguments (unit, help,
default, optional or not; defaults are read off the calc function's signature) and its
native-Excel equivalent over the workbook's Devices table. The UDF module, the template's
formulas, the export rewriter, the README's function reference and the tests all read this.
"""

from __future__ import annotations

from ... import calc
from . import native, plan_native, step_calls
from .entry import CATEGORY as CATEGORY, LITE_TABLE as LITE_TABLE, REQUIRED as REQUIRED, Arg, ExcelFunction
from .step_registry import BUDGET_LAYOUT, BUDGET_PARAMS, BUDGET_UTILIZATION, STEP_FUNCTIONS

# Arguments, each written once and shared by the functions that take it.
PARAMS = Arg("params", "parameters", "Model parameters, e.g. 7E9")
TOKENS = Arg("tokens", "tokens", "Training tokens, e.g. 1E12")
DEVICE = Arg("device", "name or TFLOP/s", "A Devices-sheet name, or a number of TFLOP/s", kind="device")
UTILIZATION = Arg("utilization", "fraction, 0-1", "Share of the device's rate reached: far below 1 (the Runs "
                  "sheet: what published runs reached; the Budget sheet: the job's own prior)")
DEVICES = Arg("devices", "count", "Devices training together")
PRICE = Arg("usd_per_device_hour", "USD per device-hour", "Your price per device-hour",
            native_default="{device:usd_per_device_hour}", default_text="the device row's price")
PUE = Arg("pue", "ratio >= 1", "Data-centre power usage effectiveness")
METHOD = Arg("method", "full / lora / qlora / inference", "Method: full trains every weight (6 FLOPs per "
             "parameter-token); lora or qlora train adapters over frozen weights (4); inference is weights "
             "only, a forward pass (2)", kind="text")
OPTIMIZER = Arg("optimizer", " | ".join(calc.OPTIMIZERS), "Optimizer")
ZERO = Arg("zero_stage", "0-3", "ZeRO stage sharding states over the devices")
TRAINABLE = Arg("trainable", "count, or fraction <= 1", "LoRA/QLoRA adapter parameters",
                native_default=repr(calc.LORA_TRAINABLE),
                default_text=f"{calc.LORA_TRAINABLE!r} (1% of params)")
# A mixture of experts: FLOPs (and so hours, cost, energy) follow the parameters one token runs
# through (calc.train_flops' active_params; Fedus et al. 2022, arXiv:2101.03961, section 2); memory
# follows the total. Omitted or blank: all parameters (dense).
ACTIVE = Arg("active_params", "parameters", "Parameters one token runs through (MoE: the active ones), "
             "e.g. 12.9E9 of Mixtral's 46.7E9", native_default="{params}", default_text="params (dense)")
ACTIVATIONS = Arg("activations", "bytes per device", "Activation memory (see TRAIN_ACTIVATION_BYTES)")
RECOMPUTE = Arg("recompute", " / ".join(calc.RECOMPUTE), "Activation recomputation (offload: full, with each layer's "
                "input in host memory)", kind="text")
# "offload" recomputes the whole forward as "full" does (calc.physics.flops, calc.physics.activations)
_FULL_NAMES = '{recompute}="full",{recompute}="offload"'
_FULL_FORWARD = "OR(" + _FULL_NAMES + ")"

_NO_SHAPE = "none (no attention term)"
N_LAYERS = Arg("n_layers", "layers", "Transformer layers", native_default="0", default_text=_NO_SHAPE)
D_MODEL = Arg("d_model", "width", "Hidden size", native_default="0", default_text=_NO_SHAPE)
SEQ_LEN = Arg("seq_len", "tokens", "Sequence length", native_default="0", default_text=_NO_SHAPE)
N_HEADS = Arg("n_heads", "heads", "Attention heads")
MICRO_BATCH = Arg("micro_batch", "sequences", "Micro-batch size per device")
TP = Arg("tensor_parallel", "ways", "Tensor-parallel size")
SP = Arg("sequence_parallel", "TRUE/FALSE", "Sequence parallelism on", kind="flag")
FLASH = Arg("flash_attention", "TRUE/FALSE", "FlashAttention (no stored attention scores)",
            kind="flag")

CAPEX = Arg("capex_usd", "USD per device", "Purchase price per device")
WATTS = Arg("watts", "W per device", "Board power")
USD_PER_KWH = Arg("usd_per_kwh", "USD per kWh", "Electricity tariff")
LIFE_YEARS = Arg("life_years", "years", "Depreciation life (presets 3, 5, 6)")
RESIDUAL = Arg("residual", "fraction of capex", "Value recovered at the end of life")
PUE_OWNED = Arg("pue", "ratio >= 1", "Data-centre PUE (Uptime Institute 2023 average: 1.58)")
OCCUPANCY = Arg("occupancy", "fraction, 0-1", "Share of the year's hours the devices train")

# FLOPs per parameter-token: native.FLOPS_PER_PARAM_TOKEN, the training step's 6 (calc.physics.flops) in
# these functions, which take no method; a sheet that knows its job's method gives its own row
# (the Budget's FLOPs_per_token: 2 for inference), so its FLOPs, hours, cost and energy follow it.
_K = native.FLOPS_PER_PARAM_TOKEN
_FLOPS = ("(IF(" + _FULL_FORWARD + ',8,IF({recompute}="op",7,' + _K + '))*{active_params}'
          '+IF(OR({recompute}="none",{recompute}="op"),12,16)*{n_layers}*{d_model}*{seq_len})*{tokens}')
# 6*params*tokens FLOPs at TFLOP/s*1E12*utilization per device, 3600 s an hour: written so that
# the known factors fold into one number.
_GPU_HOURS = native.JOB_FLOPS + "/(3600E12*{utilization}*{device:tflops})"  # JOB_FLOPS: K*active*tokens
_HOURS = f"{_GPU_HOURS}/{{devices}}"
# kWh: watts * device-hours * PUE / 1000, the 1000 folded in with the hour: 3600E12*1000 = 3.6E18.
_ENERGY = "{pue}*{device:watts}*" + native.JOB_FLOPS + "/(3.6E18*{utilization}*{device:tflops})"
_SB = "{seq_len}*{micro_batch}*{d_model}"

# TRAIN_ACTIVATION_BYTES (calc.activation_bytes, Korthikanti et al. 2022 Table 2 and §4.2.3/§4.3):
# s = seq_len / context_parallel; the 1F1B first stage holds M = MIN(micro_batches, p) micro-batches
# of L/p layers; with vocab, the first stage adds the embedding mask and the last the logits. Recompute
# "offload" counts as "full" with one layer a stage and one micro-batch in flight (the layer inputs are in
# host memory; calc.physics.activations).
_ACT_OFFLOAD = '{recompute}="offload"'
_ACT_STAGE_LAYERS = "IF(" + _ACT_OFFLOAD + ",1,{n_layers}/{pipeline_parallel})"
_ACT_SBH = "{seq_len}/{context_parallel}*{micro_batch}*{d_model}"
_ACT_TS = "IF({sequence_parallel},{tensor_parallel},1)"
_ACT_BASE = "IF({sequence_parallel},34/{tensor_parallel},10+24/{tensor_parallel})"
_ACT_SCORES = "5*{n_heads}*{seq_len}/({context_parallel}*{d_model}*{tensor_parallel})"
# recompute "op" (torchtitan's op-level policy, calc.physics.activations): the layer input, Q, V, the
# attention output, the first MLP matmul (14/t with this shape), the fp32 logsumexp and, with
# tensor and sequence parallelism, the two reduce-scatter outputs
_ACT_OP_OVERLAP = "2/" + _ACT_TS + "+14/{tensor_parallel}"
_ACT_OP = (_ACT_OP_OVERLAP + "+4*{n_heads}/({d_model}*{tensor_parallel})"
           "+IF(AND({sequence_parallel},{tensor_parallel}>1),4/{tensor_parallel},0)")
_ACT_LAYER = ("IF(" + _FULL_FORWARD + ",2*" + _ACT_SBH + "/" + _ACT_TS + "," + _ACT_SBH
              + '*IF({recompute}="op",' + _ACT_OP + "," + _ACT_BASE
              + '+IF(OR({recompute}="selective",{flash_attention}),0,' + _ACT_SCORES + ")))")
_ACT_M = "IF(" + _ACT_OFFLOAD + ",1,MIN({micro_batches},{pipeline_parallel}))"
# full (offload too) and op recompute: the rest of one layer's working set while it is recomputed, its attention
# and MLP inputs all-gathered whole under sequence parallelism (calc.physics.activations)
_ACT_WORK = ("IF(OR(" + _FULL_NAMES + ',{recompute}="op"),' + _ACT_SBH + "*(" + _ACT_BASE
             + '-IF({recompute}="op",' + _ACT_OP_OVERLAP + ",0)"
             "+IF({flash_attention},0," + _ACT_SCORES + ")+IF({sequence_parallel},4-4/{tensor_parallel},0)),0)")
# the loss: 12 B per logit element (fp32 log-probabilities, their gradient and the input gradient;
# calc.physics.activations)
_ACT_LOGITS = ("IF({vocab}>0,4*" + _ACT_SBH + "/" + _ACT_TS
               + f"+{calc.LOSS_BYTES_PER_LOGIT['standard']!r}*" + _ACT_SBH
               + "*{vocab}/({d_model}*{tensor_parallel}),0)")
_ACTIVATIONS = ("MAX(" + _ACT_STAGE_LAYERS + "*" + _ACT_M + "*" + _ACT_LAYER + "+" + _ACT_WORK
                + "+IF({vocab}>0," + _ACT_SBH + "*" + _ACT_M + "/" + _ACT_TS + ",0)+IF({pipeline_parallel}=1,"
                + _ACT_LOGITS + ",0)," + _ACT_STAGE_LAYERS + "*" + _ACT_LAYER + "+" + _ACT_WORK
                + "+" + _ACT_LOGITS + ")")

# --- parameters from a shape, memory on a tensor/pipeline/expert layout ------------
# (defined before FUNCTIONS and spliced in at its end; sources in calc.model.shapes and calc.physics.memory)
SHAPE_LAYERS = Arg("n_layers", "layers", "Transformer layers")
SHAPE_WIDTH = Arg("d_model", "width", "Hidden size")
KV_HEADS = Arg("n_kv_heads", "heads", "Key/value heads (grouped-query attention)",
               native_default="{n_heads}", default_text="n_heads")
HEAD_DIM = Arg("head_dim", "width", "Width of one attention head",
               native_default="{d_model}/{n_heads}", default_text="d_model / n_heads")
FFN_DIM = Arg("ffn_dim", "width", "Dense MLP width", native_default="4*{d_model}",
              default_text="4 * d_model")
VOCAB = Arg("vocab", "tokens", "Vocabulary size")
N_EXPERTS = Arg("n_experts", "experts", "Routed experts per MoE layer (1: dense)")
TOP_K = Arg("top_k", "experts", "Routed experts each token runs through")
MOE_FFN = Arg("moe_ffn_dim", "width", "Width of one expert's MLP", native_default="{ffn_dim}",
              default_text="ffn_dim")
SHARED = Arg("n_shared_experts", "experts", "Always-on shared experts per MoE layer")
DENSE_LAYERS = Arg("dense_layers", "layers", "Leading layers that keep a dense MLP")
GATED = Arg("gated_mlp", "TRUE/FALSE", "Gated (SwiGLU) MLP: 3 matrices, else 2", kind="flag")
TIED = Arg("tied_embeddings", "TRUE/FALSE", "Output projection shares the input embedding", kind="flag")
_SHAPE_ARGS = (SHAPE_LAYERS, SHAPE_WIDTH, N_HEADS, KV_HEADS, HEAD_DIM, FFN_DIM, VOCAB, N_EXPERTS,
               TOP_K, MOE_FFN, SHARED, DENSE_LAYERS, GATED, TIED)
_MOE_LAYERS = "IF({n_experts}>1,{n_layers}-{dense_layers},0)"
_EXPERT = "IF({gated_mlp},3,2)*{d_model}*{moe_ffn_dim}"
# Named pieces (the Budget's architecture block gives each a helper row): attention projections and
# the two norms of one layer; one layer's dense MLP.
ATTENTION_PARAMS = "2*{d_model}*{n_heads}*{head_dim}+2*{d_model}*{n_kv_heads}*{head_dim}+2*{d_model}"
MLP_PARAMS = "IF({gated_mlp},3,2)*{d_model}*{ffn_dim}"
_PARAMS_TOTAL = ("{vocab}*{d_model}*IF({tied_embeddings},1,2)"
                 "+{n_layers}*(" + ATTENTION_PARAMS + ")+{d_model}"
                 "+({n_layers}-" + _MOE_LAYERS + ")*" + MLP_PARAMS
                 + "+" + _MOE_LAYERS + "*(({n_experts}+{n_shared_experts})*" + _EXPERT
                 + "+{d_model}*{n_experts})")
# active, as DeepSeek and OpenAI publish it: without the untied input table (calc.model.shapes)
# the untied input table: out of the published active count, in the FLOPs' N (calc.model.shapes, calc.physics.flops)
INPUT_TABLE = "IF({tied_embeddings},0,{vocab}*{d_model})"
_PARAMS_ACTIVE = (_PARAMS_TOTAL + "-" + _MOE_LAYERS + "*({n_experts}-{top_k})*" + _EXPERT
                  + "-" + INPUT_TABLE)
_LLAMA_8B = ("32", "4096", "32", "8", "128", "14336", "128256")
_MIXTRAL = ("32", "4096", "32", "8", "128", "14336", "32000", "8", "2")

PP = Arg("pipeline_parallel", "ways", "Pipeline-parallel size")
ACT_VOCAB = Arg("vocab", "tokens", "Vocabulary size: adds embedding and logits activations",
                native_default="0", default_text="none (no embedding or logits terms)")
MICRO_BATCHES = Arg("micro_batches", "count", "Micro-batches per pipeline flush (1F1B in flight)",
                    native_default="{pipeline_parallel}", default_text="pipeline_parallel")
EP = Arg("expert_parallel", "ways", "Expert-parallel size (within data parallel)")
CP = Arg("context_parallel", "ways", "Context-parallel size")
LAYOUT_DEVICES = Arg("devices", "count", "Devices in the whole job (data parallel = devices / (TP*PP*CP))")
EXPERT_PARAMS = Arg("expert_params", "parameters", "Routed-expert parameters among params")
STAGE_PARAMS = Arg("stage_params", "parameters", "Parameters the first pipeline stage keeps whole")
GRAD_BYTES = Arg("grad_bytes", "bytes per parameter", "Gradient bytes (4: fp32 gradients, 18 B/param)")
_DP = "{devices}/({tensor_parallel}*{pipeline_parallel}*{context_parallel})"
_ZERO = "{devices}/({tensor_parallel}*{pipeline_parallel})"  # the ranks ZeRO shards over: data x context
_DENSE_DEV = ("(({params}-{expert_params}-{stage_params})/{pipeline_parallel}+{stage_params})"
              "/{tensor_parallel}")
_EXPERT_DEV = "{expert_params}/({tensor_parallel}*{pipeline_parallel}*{expert_parallel})"


def _layout_part(stage: int) -> str:
    """Parameters per device that ZeRO from `stage` on shards over data x context ranks (expert: over
    those / expert), as calc.physics.memory's Shards."""
    return (f"({_DENSE_DEV}/IF({{zero_stage}}>={stage},{_ZERO},1)"
            f"+{_EXPERT_DEV}/IF({{zero_stage}}>={stage},{_ZERO}/{{expert_parallel}},1))")


_LAYOUT_BYTES = (f"{calc.WEIGHT_BYTES!r}*{_layout_part(3)}+{{grad_bytes}}*{_layout_part(2)}"
                 f"+({{_optimizer_bytes}}"
                 f"+{calc.MASTER_BYTES!r})*{_layout_part(1)}+{{activations}}")

_MODEL_FUNCTIONS: tuple[ExcelFunction, ...] = (
    ExcelFunction("MODEL_PARAMS", "Parameters of a transformer from its shape (embeddings, GQA, gated MLP, experts)",
                  "parameters", calc.params_total, _SHAPE_ARGS, _PARAMS_TOTAL, _LLAMA_8B),
    ExcelFunction("MODEL_ACTIVE_PARAMS",
                  "Parameters one token runs through (top-k of the experts), without the input embedding",
                  "parameters", calc.params_active, _SHAPE_ARGS, _PARAMS_ACTIVE, _MIXTRAL),
    ExcelFunction("TRAIN_LAYOUT_BYTES",
                  "Bytes per device on a tensor/pipeline/expert/data layout with ZeRO over data parallel",
                  "bytes", calc.train_bytes, (PARAMS, LAYOUT_DEVICES, TP, PP, EP, ZERO, EXPERT_PARAMS,
                                              STAGE_PARAMS, OPTIMIZER, GRAD_BYTES, ACTIVATIONS, CP),
                  _LAYOUT_BYTES, ("70.6E9", "64", "8", "2", "1", "1")),
)

# --- the planner's questions the other way round (calc.planning.rank; native pieces in plan_native) ---
DAYS = Arg("days", "days", "Deadline: days of wall-clock training")
USD = Arg("usd", "USD", "Money to spend on device-hours")
_PLAN_FUNCTIONS: tuple[ExcelFunction, ...] = (
    ExcelFunction("TRAIN_DEVICES_FOR_DAYS",
                  "Fewest devices that finish training (6*params*tokens FLOPs) within the days (memory: see "
                  "TRAIN_DEVICES_NEEDED)", "devices",
                  calc.devices_for_days, (PARAMS, TOKENS, DEVICE, DAYS, UTILIZATION, ACTIVE),
                  plan_native.devices_for_days(_GPU_HOURS),
                  ("70.6E9", "15E12", '"H200 SXM, BF16 tensor core, dense"', "90", "0.4")),
    ExcelFunction("TRAIN_TOKENS_FOR_BUDGET", "Most whole training tokens (6 FLOPs per parameter each) the money buys",
                  "tokens",
                  calc.tokens_for_budget, (PARAMS, DEVICE, USD, PRICE, UTILIZATION, DEVICES, ACTIVE),
                  plan_native.tokens_for_budget(  # device-hours per token: the FLOPs inlined, one token
                      _GPU_HOURS.replace(native.JOB_FLOPS, native.JOB_FLOPS_EXPR).replace("{tokens}", "1")),
                  ("70.6E9", '"H200 SXM, BF16 tensor core, dense"', "2E6", "2.5", "0.4", "1024")),
)

FUNCTIONS: tuple[ExcelFunction, ...] = (
    ExcelFunction("TRAIN_FLOPS",
                  "Training FLOPs: 6*params*tokens (MoE: active params), plus attention when the shape is given",
                  "FLOPs", calc.train_flops, (PARAMS, TOKENS, N_LAYERS, D_MODEL, SEQ_LEN, RECOMPUTE, ACTIVE),
                  _FLOPS, ("7E9", "1E9")),
    ExcelFunction("TRAIN_BYTES",
                  "Bytes per device: weights, grads, optimizer, master (16 B/param: bf16 + Adam) + activations",
                  "bytes", calc.train_bytes, (PARAMS, METHOD, OPTIMIZER, ZERO, DEVICES, TRAINABLE,
                                              ACTIVATIONS),
                  "+".join(native.per_device(p) for p in native.PARTS) + "+{activations}",
                  ("7E9",)),
    ExcelFunction("TRAIN_HOURS", "Wall-clock training hours (6*params*tokens FLOPs) at the given utilization",
                  "hours",
                  calc.train_hours, (PARAMS, TOKENS, DEVICE, UTILIZATION, DEVICES, ACTIVE), _HOURS,
                  ("7E9", "1E9", '"H100 SXM, BF16 tensor core, dense"')),
    ExcelFunction("TRAIN_GPU_HOURS", "Training device-hours (GPU-hours, 6*params*tokens FLOPs): hours times devices",
                  "device-hours",
                  calc.gpu_hours, (PARAMS, TOKENS, DEVICE, UTILIZATION, DEVICES, ACTIVE), _GPU_HOURS,
                  ("7E9", "1E12", '"H100 SXM, BF16 tensor core, dense"', "0.4", "64")),
    ExcelFunction("TRAIN_COST", "Training cost (6*params*tokens FLOPs): device-hours times price per device-hour",
                  "USD",
                  calc.train_cost, (PARAMS, TOKENS, DEVICE, PRICE, UTILIZATION, DEVICES, ACTIVE),
                  f"{_GPU_HOURS}*{{usd_per_device_hour}}",
                  ("7E9", "1E12", '"H100 SXM, BF16 tensor core, dense"', "2.5", "0.4", "64")),
    ExcelFunction("TRAIN_ENERGY_KWH",
                  "Training energy (6*params*tokens FLOPs): board watts * device-hours * PUE / 1000", "kWh",
                  calc.train_energy_kwh, (PARAMS, TOKENS, DEVICE, PUE, UTILIZATION, DEVICES, ACTIVE),
                  _ENERGY, ("7E9", "1E9", '"L40S, FP32"')),
    ExcelFunction("TRAIN_DEVICES_NEEDED", "Smallest device count that holds the job, counted against usable "
                  f"memory: capacity less max({calc.RESERVE_GIB:g} GiB, {calc.RESERVE_SHARE:.0%})",
                  "devices",
                  calc.devices_needed, (PARAMS, DEVICE, METHOD, OPTIMIZER, ZERO, TRAINABLE, ACTIVATIONS),
                  "{_devices_needed}",  # a short device name keeps the example's native form under 200 characters
                  ("7E9", '"L40S, FP32"', '"full"', '"adamw"', "3")),
    ExcelFunction("TRAIN_ACTIVATION_BYTES", "Activation bytes per device (Korthikanti et al. 2022, Table 2)",
                  "bytes", calc.activation_bytes, (N_LAYERS, D_MODEL, N_HEADS, SEQ_LEN, MICRO_BATCH,
                                                   RECOMPUTE, TP, SP, FLASH, PP, CP, ACT_VOCAB,
                                                   MICRO_BATCHES),
                  _ACTIVATIONS, ("80", "8192", "64", "4096", "1", '"selective"', "8", "TRUE", "FALSE",
                                 "4", "1", "128256")),
    ExcelFunction("CHINCHILLA_TOKENS", "Compute-optimal tokens: about 20 per parameter (Hoffmann 2022)",
                  "tokens", calc.chinchilla_tokens, (PARAMS,),
                  f"{calc.CHINCHILLA_TOKENS_AT_1B!r}*({{params}}/1E9)"
                  f"^{calc.CHINCHILLA_EXPONENT!r}", ("7E9",)),
    ExcelFunction("DEVICE_TFLOPS", "A device's rate from the Devices sheet, else the catalog", "TFLOP/s",
                  calc.device_tflops, (DEVICE,), "{device:tflops}",
                  ('"H100 SXM, BF16 tensor core, dense"',)),
    ExcelFunction("TRAIN_BUDGET", "The whole budget as a two-column label/value table that spills (FLOPs "
                  "per parameter-token by method: full 6, lora and qlora 4, inference 2, a forward pass); "
                  'utilization "step" times a preset model\'s step on the layout and adds the step\'s rows',
                  "table", step_calls.train_budget, (BUDGET_PARAMS, TOKENS, DEVICE, BUDGET_UTILIZATION, DEVICES,
                                                     PRICE, PUE, METHOD, OPTIMIZER, ZERO, ACTIVE, *BUDGET_LAYOUT),
                  None, ("7E9", "1E12", '"H100 SXM, BF16 tensor core, dense"', "0.4", "64", "2.5")),
    # Owned-hardware price (calc/money/owned.py).
    ExcelFunction("OWNED_PRICE", "Owned hardware: USD per device-hour from capex, life and energy",
                  "USD per device-hour", calc.owned_price,
                  (CAPEX, WATTS, USD_PER_KWH, LIFE_YEARS, RESIDUAL, PUE_OWNED, OCCUPANCY),
                  "{capex_usd}*(1-{residual})/({life_years}*8760*{occupancy})+{watts}/1000*{pue}*{usd_per_kwh}",
                  ("33819", "700", "0.1", "5", "0", "1.58", "0.8")),
    *_MODEL_FUNCTIONS,
    *_PLAN_FUNCTIONS,
    *STEP_FUNCTIONS,
)

BY_NAME = {f.name: f for f in FUNCTIONS}
