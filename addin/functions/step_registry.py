"""The step model's registry entries: TRAIN_STEP (the breakdown as a two-column table that spills),
TRAIN_STEP_SECONDS and TRAIN_MFU, over a preset model on a layout, and TRAIN_STEP_DEVICES_FOR_DAYS,
the devices that layout needs for a deadline (step_calls, through calc).

Arguments in Megatron-LM's words (--tensor-model-parallel-size as tp, --pipeline-model-parallel-size
as pp, --num-layers-per-virtual-pipeline-stage's virtual stages as vpp, --context-parallel-size as
cp, --expert-model-parallel-size as ep, --seq-length, --global-batch-size and --micro-batch-size in
sequences, --recompute-granularity; flash_attention for --attention-backend flash or unfused). No native
form: the model is a preset's name, whose shape a formula cannot read; the Budget sheet's step block
gives the same step as native formulas over its architecture block (template.step_block, pieces in
step_native).
"""

from __future__ import annotations

from ... import calc
from . import step_calls
from .entry import Arg, ExcelFunction

MODEL = Arg("model", "preset name", "A preset model: " + ", ".join(p.name for p in calc.model_presets().values()),
            kind="text")
STEP_DEVICE = Arg("device", "name", "A Devices-sheet name (its topology: the catalog's rows of the same hardware)",
                  kind="device")
STEP_DEVICES = Arg("devices", "count", "Devices in the whole job (data parallel = devices / (tp*pp*cp))")
STEP_TP = Arg("tp", "ways", "Tensor-parallel size", default_text="1")
STEP_PP = Arg("pp", "ways", "Pipeline-parallel stages", default_text="1")
STEP_VPP = Arg("vpp", "stages", "Virtual (interleaved) pipeline stages per device", default_text="1")
STEP_CP = Arg("cp", "ways", "Context-parallel size", default_text="1")
STEP_EP = Arg("ep", "ways", "Expert-parallel size (within data x context parallel)", default_text="1")
STEP_SEQ = Arg("seq_len", "tokens", "Sequence length", default_text=f"{calc.DEFAULT_SEQ_LEN:g}")
STEP_BATCH = Arg("global_batch", "sequences", "Sequences per optimizer step",
                 default_text="1024 (Llama 2's pretraining batch, arXiv:2307.09288 s.2.2)")
STEP_MICRO = Arg("micro_batch", "sequences", "Micro-batch size per device", default_text="1")
STEP_RECOMPUTE = Arg("recompute", " / ".join(calc.RECOMPUTE),
                     "Activation recomputation (op timed as selective, offload as full)", kind="text",
                     default_text="selective")
STEP_ZERO = Arg("zero_stage", "0-3", "ZeRO stage (3: FSDP)", default_text="0")
STEP_FLASH = Arg("flash_attention", "TRUE/FALSE", "Attention in a fused kernel (FALSE: unfused, its scores through "
                 "memory: Megatron's unfused backend, Hugging Face's eager)", kind="flag", default_text="TRUE")
STEP_ARGS = (MODEL, STEP_DEVICE, STEP_DEVICES, STEP_TP, STEP_PP, STEP_VPP, STEP_CP, STEP_EP, STEP_SEQ, STEP_BATCH,
             STEP_MICRO, STEP_RECOMPUTE, STEP_ZERO, STEP_FLASH)
_EXAMPLE = ('"Llama 3.1 8B"', '"H100 SXM, BF16 tensor core, dense"', "64", "2", "1", "1", "1", "1", "8192", "512")
# TRAIN_BUDGET's arguments that reach the step model (registry): its model as `params` (a count, or
# a preset's name), "step" as its utilization, and the layout and batch after its own arguments
BUDGET_PARAMS = Arg("params", "parameters or preset name", 'Model parameters, e.g. 7E9, or a preset\'s name, e.g. '
                    '"Llama 3.1 70B" (utilization "step" times a preset)')
BUDGET_UTILIZATION = Arg("utilization", 'fraction, 0-1, or "step"', "Share of the device's rate reached (far below "
                         '1), or "step": the step model on the layout and batch that follow')
BUDGET_LAYOUT = (STEP_TP, STEP_PP, STEP_VPP, STEP_CP, STEP_EP, STEP_SEQ, STEP_BATCH, STEP_MICRO, STEP_RECOMPUTE,
                 STEP_FLASH)
STEP_TOKENS = Arg("tokens", "tokens", "Training tokens, e.g. 1E12")
STEP_DAYS = Arg("days", "days", "Deadline: days of wall-clock training")
DEADLINE_ARGS = (MODEL, STEP_DEVICE, STEP_TOKENS, STEP_DAYS, *STEP_ARGS[3:])
_DEADLINE_EXAMPLE = ('"Llama 3.1 70B"', '"H100 SXM, BF16 tensor core, dense"', "2E12", "60", "8", "4", "1", "1", "1",
                     "8192", "2048")

STEP_FUNCTIONS: tuple[ExcelFunction, ...] = (
    ExcelFunction("TRAIN_STEP", "One training step on a layout as a two-column label/value table that spills: "
                  "seconds, tokens/s per device, MFU, HFU, seconds by part (compute, TP, CP, EP, bubble, exposed "
                  "DP, optimizer)", "table", step_calls.train_step, STEP_ARGS, None, _EXAMPLE),
    ExcelFunction("TRAIN_STEP_SECONDS", "Seconds per optimizer step on a layout (the step model: compute, "
                  "collectives, pipeline bubble, exposed data-parallel traffic, optimizer)", "seconds",
                  step_calls.train_step_seconds, STEP_ARGS, None, _EXAMPLE),
    ExcelFunction("TRAIN_MFU", "Model FLOPs utilization of a step on a layout: 6*N_active plus attention per "
                  "token against the device row's dense peak", "fraction, 0-1", step_calls.train_mfu, STEP_ARGS,
                  None, _EXAMPLE),
    ExcelFunction("TRAIN_STEP_DEVICES_FOR_DAYS", "Fewest devices on which a layout trains the tokens within the "
                  "days at the step model's expected hours (goodput included; each count timed with its own data "
                  "parallel, so communication counts; a multiple of tp*pp*cp and ep that fits memory)", "devices",
                  step_calls.train_step_devices_for_days, DEADLINE_ARGS, None, _DEADLINE_EXAMPLE),
)
