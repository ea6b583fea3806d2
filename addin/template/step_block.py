"""The Budget sheet's step block, below the layout block: one training step of the architecture
above on its layout (TP, PP, EP there; CP, virtual stages, batch and recompute here), term by term
as native formulas over named helper rows, as calc.step_time composes it (calc/step/step.py and
terms.py, each term's source there):

step = (compute + weight reads + vector + TP + exposed CP + EP) x (1 + (p-1)/(v·m)) + exposed DP
+ optimizer; DP and the optimizer over the ranks holding the same weights (data x context);
attention at a rate that falls with its tile, s / CP tokens, and CP's ring send per step exposed
beyond that step's block of attention. Below the step, the whole run of the Budget's tokens at it, as
calc.run_hours gives it: steps x step seconds / goodput (fitted on the published whole runs), low
and high from the step time's leave-one-out band (calc.STEP_RESIDUAL) and goodput's spread.

The device's topology (scale-up GB/s and domain, scale-out Gb/s, a TP/CP group's GB/s along one torus
axis) and its generation's fitted matmul fraction come from a table of the catalog's hardware written
below the block (calc.step_hardware, calc.STEP_CONSTANTS); a hardware not in it takes calc's stated
fallback topology and Hopper's fraction (calc matches a family by name too: a user's "A100 ..." row gets
Ampere's there). The model is the architecture block's counted parameters (calc takes a preset's
published count; for Llama 3.1 8B they differ by 0.003%). Cached values come from calc.step_time on the
same inputs.
"""

from __future__ import annotations

from typing import Any

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import layout_pieces, native
from . import model_block, step_deadline, step_hardware_table, styles
from .cached_cells import CachedCells, style, text
from .input_checks import DAYS_DEFAULT
from .row_formulas import evaluate

# name, label, default, number format, note
STEP_INPUTS = (
    ("Step_seq_len", "Sequence length (tokens)", 8192, styles.COUNT, "Megatron's --seq-length"),
    ("Step_batch", "Global batch (sequences)", 512, styles.COUNT, "--global-batch-size: sequences per step"),
    ("Step_micro_batch", "Micro-batch (sequences)", 1, styles.COUNT, "--micro-batch-size, per device"),
    ("Step_vpp", "Virtual pipeline stages (VPP)", 1, styles.COUNT, "interleaved stages per device; 1 without PP"),
    ("Step_cp", "Context parallel (CP)", 1, styles.COUNT, "--context-parallel-size; must divide the sequence"),
    ("Step_recompute", "Recompute", "selective", None, " | ".join(calc.RECOMPUTE)),
    ("Step_flash", "Flash attention (TRUE / FALSE)", True, None, "FALSE: unfused, its scores through memory "
     "(Megatron's unfused backend, Hugging Face's eager); blank: TRUE"),
)
_HOPPER = 1  # calc.step's FAMILIES index of the family borrowed by a hardware without one
_SECONDS = '0.000 "s"'
_RATE = "0.00E+00"


def _found(column: str, fallback: float) -> str:
    return f"IFERROR(INDEX({column},MATCH(Hardware,Step_hw_names,0)),{fallback!r})"


def _pieces() -> dict[str, str]:
    """The rows' looked-up figures as Excel expressions, by placeholder: the device's, its 16-bit
    row's (the ranges' Prior_device: the same hardware's BF16/FP16 row) and its hardware's."""
    up, dom, out, axis = step_hardware_table.fallback()
    return {"fp8": 'IF(ISNUMBER(SEARCH("fp8",Precision_of_device)),1,0)',
            "fraction": _found("Step_hw_fraction", calc.STEP_CONSTANTS.matmul_fraction[_HOPPER]),
            "peak16": native.lookup("Prior_device", "tflops"), "memory_tbps": native.lookup("Device", "memory_tbps"),
            "up": _found("Step_hw_up", up), "domain": _found("Step_hw_domain", dom), "out": _found("Step_hw_out", out),
            "axis": _found("Step_hw_axis", axis),
            **{k: repr(x) for k, x in _run_constants().items()}}


def _run_constants() -> dict[str, float]:
    """A whole run's constants (calc.run_hours): goodput fitted on the published whole runs
    (calc.fit_goodput: expected, low, high) and the step time's band (calc.STEP_RESIDUAL, p10-p90 of
    the step model's leave-one-out residuals)."""
    g = calc.fit_goodput()
    fast, slow = calc.STEP_RESIDUAL
    return {"goodput": g.expected, "goodput_low": g.low, "goodput_high": g.high, "fast": fast, "slow": slow}


Row = tuple[str, str, str, str]


def _rows() -> list[Row]:
    """(name, label, formula with {placeholders} of _pieces, number format): the step's helper rows
    and results, in order: compute, then communication, then the step's totals."""
    return _compute_rows() + _communication_rows() + _total_rows() + _run_rows()


def _recompute_code() -> str:
    """Step_recompute's timing code as nested IFs over calc.RECOMPUTE_CODES, highest code first (names
    sharing a code under one OR; a name none of them: #N/A)."""
    formula = "NA()"
    for code in sorted(set(calc.RECOMPUTE_CODES.values())):
        names = [f'Step_recompute="{n}"' for n, c in calc.RECOMPUTE_CODES.items() if c == code]
        test = names[0] if len(names) == 1 else f"OR({','.join(names)})"
        formula = f"IF({test},{code:g},{formula})"
    return formula


def _compute_rows() -> list[Row]:
    """The step's sizes, FLOPs and rates, and the compute seconds' parts (calc.step.terms)."""
    k = calc.STEP_CONSTANTS
    r = "Step_rec"
    return [
        ("Step_dp", "Data parallel (devices / (TP x PP x CP))",
         "Devices_count/(Tensor_parallel*Pipeline_parallel*Step_cp)", "0.##"),
        (r, "Recompute code (0 none, 1 selective or op, 2 full or offload)", _recompute_code(), "0"),
        ("Step_tokens", "Tokens per pipeline stage per step", "Step_batch*Step_seq_len/(Step_dp*Step_cp)",
         styles.COUNT),
        ("Step_layers", "Layers on the busiest stage (the pipeline runs at its pace)",
         "ROUNDUP(Arch_layers/Pipeline_parallel,0)", "0"),
        ("Step_share", "Busiest stage's work over the average stage's", "Step_layers*Pipeline_parallel/Arch_layers",
         "0.000"),
        ("Step_dev_tokens", "Tokens of matmul work on the busiest device",
         "Step_tokens/(Tensor_parallel*Pipeline_parallel)*Step_share", styles.COUNT),
        ("Step_attn", "Attention FLOPs per token (6·L·s·heads·width)",
         "6*Arch_layers*Step_seq_len*Arch_heads*Arch_head_dim", _RATE),
        ("Step_model_flops", "Model FLOPs per token (6·N + attention)", "6*Arch_active_flops+Step_attn", _RATE),
        ("Step_core", "Attention core FLOPs done (recompute's third)", f"Step_attn*IF({r}>=1,4/3,1)", _RATE),
        ("Step_done", "FLOPs per token done", f"Step_model_flops+Step_core-Step_attn+IF({r}>=2,2*Arch_active_flops,0)",
         _RATE),
        ("Step_fp8", "FP8 row (1: matmuls at its FP8 rate)", "{fp8}", "0"),
        ("Step_low", "FLOPs/token at FP8 (lm head: 16-bit)",
         f"Step_fp8*IF({r}>=2,8,6)*MAX(Arch_active_flops-2*Arch_vocab*Arch_width,0)", _RATE),
        ("Step_fraction", "Achievable share of the peak (device generation)",
         "{fraction}", "0.000"),
        ("Step_rate16", "Achievable FLOP/s (16-bit on FP8 rows)", "IF(Step_fp8=1,{peak16},Rate_TFLOPS)*1E12"
         "*Step_fraction", _RATE),
        ("Step_rate_low", "Achievable FP8 FLOP/s", f"IF(Step_fp8=1,Rate_TFLOPS*1E12*Step_fraction*{k.fp8_gain!r},"
         "Step_rate16)", _RATE),
        ("Step_rate_attn", "Attention FLOP/s (tile s/CP)", f"Step_rate16*{k.attention_ratio!r}*(Step_seq_len/Step_cp)"
         f"/(Step_seq_len/Step_cp+{k.attention_tile!r})", _RATE),
        ("Step_mem_Bps", "HBM bytes/s", "{memory_tbps}*1E12", _RATE),
        # unfused: the fused kernels' math plus each head's s x s scores through HBM, 2 bytes an access, 11
        # a pass and 4 more when the core is recomputed (calc.step.terms.unfused_attention_seconds)
        ("Step_attn_s", "Attention seconds (unfused: plus its scores' traffic)",
         f"Step_dev_tokens*Step_core/Step_rate_attn+IF({layout_pieces.flash_on('Step_flash')},0,"
         "Step_dev_tokens*Arch_layers*Arch_heads"
         f"*Step_seq_len*IF({r}>=1,15,11)*2/Step_mem_Bps)", _SECONDS),
        ("Step_matmul", "Matmul seconds", "Step_dev_tokens*(Step_low/Step_rate_low+(Step_done-Step_low-Step_core)"
         "/Step_rate16)", _SECONDS),
        ("Step_dense", "Dense parameters the busiest device holds (every EP rank's copy)",
         "(Arch_params-Arch_expert_params)/(Tensor_parallel*Pipeline_parallel)*Step_share", styles.COUNT),
        ("Step_expert", "Routed-expert parameters the busiest device holds", "Arch_expert_params/(Expert_parallel*"
         "Tensor_parallel*Pipeline_parallel)*Step_share", styles.COUNT),
        ("Step_held", "Parameters a device holds before DP sharding", "Step_dense+Step_expert", styles.COUNT),
        ("Step_micro", "Micro-batches per step (m)", "Step_tokens*Step_cp/(Step_seq_len*Step_micro_batch)", "0.##"),
        ("Step_weights_s", "Weight reads from HBM, seconds",
         f"Step_micro*Step_held*2*IF({r}>=2,4,3)/Step_mem_Bps", _SECONDS),
        ("Step_vector", "Memory-bound vector seconds",
         f"Step_tokens*Step_layers*Arch_width/Tensor_parallel*{k.vector_bytes!r}*IF({r}>=2,4/3,1)/Step_mem_Bps",
         _SECONDS),
    ]


def _communication_rows() -> list[Row]:
    """The links and the exposed seconds of each collective (TP, CP, EP) on the link it crosses."""
    r = "Step_rec"
    return [
        ("Step_up", "Scale-up bytes/s, one way", "{up}*0.5E9", _RATE),
        ("Step_axis", "TP/CP bytes/s along one torus axis, one way", "{axis}*0.5E9", _RATE),
        ("Step_domain", "Scale-up domain (devices)", "{domain}", "0"),
        ("Step_out", "Scale-out bytes/s", "{out}*0.125E9", _RATE),
        ("Step_inside", "DP x CP ranks per scale-up domain", "MAX(INT(Step_domain/Tensor_parallel),1)", "0"),
        ("Step_tp_s", "TP seconds", f"IF(Tensor_parallel>1,Step_tokens*Step_layers*IF({r}>=2,6,4)*4*"
         "(Tensor_parallel-1)/Tensor_parallel*Arch_width/IF(Tensor_parallel<=Step_domain,Step_axis,Step_out),0)",
         _SECONDS),
        ("Step_cp_send", "CP send per ring step, seconds", f"Step_tokens*Step_layers*IF({r}>=1,4,3)*4*Arch_kv_heads"
         "*Arch_head_dim/Tensor_parallel/IF(Tensor_parallel*Step_cp<=Step_domain,Step_axis,Step_out)", _SECONDS),
        ("Step_cp_s", "CP seconds, exposed", "IF(Step_cp>1,(Step_cp-1)*MAX(Step_cp_send-Step_attn_s/Step_cp,0),0)",
         _SECONDS),
        ("Step_ep_copy", "EP bytes per routed copy of the step's tokens",
         f"IF(Arch_experts>1,Step_tokens*Step_layers*IF({r}>=2,6,4)*Arch_width*2,0)", _RATE),
        ("Step_ep_domains", "Scale-up domains the EP group spans", "Expert_parallel/MIN(Expert_parallel,Step_inside)",
         "0.##"),
        ("Step_ep_s", "EP seconds", "MAX(Step_ep_copy*Arch_top_k*(Expert_parallel-1)/Expert_parallel/Step_up,"
         "Step_ep_copy*(Step_ep_domains-1)*(1-POWER(1-1/Step_ep_domains,Arch_top_k))/Step_out)", _SECONDS),
    ]


def _total_rows() -> list[Row]:
    """Compute and communication into the step: the bubble, exposed DP, the optimizer; the results."""
    k = calc.STEP_CONSTANTS
    return [
        ("Step_compute_s", "Compute seconds (matmuls, weight reads, vector work)",
         "Step_matmul+Step_weights_s+Step_attn_s+Step_vector", _SECONDS),
        ("Step_work", "Pipelined work seconds", "Step_compute_s+Step_tp_s+Step_cp_s+Step_ep_s", _SECONDS),
        ("Step_bubble", "Pipeline bubble seconds", "Step_work*(Pipeline_parallel-1)/(Step_vpp*Step_micro)", _SECONDS),
        ("Step_group", "Ranks holding the same weights (DP x CP)", "Step_dp*Step_cp", "0"),
        ("Step_g_in", "Of them inside one domain", "MIN(Step_inside,Step_group)", "0"),
        ("Step_dp_dense", "Dense weights' DP traffic seconds, one pass", "IF(ZeRO_stage>=3,3,2)*Step_dense*2*("
         "(Step_g_in-1)/Step_g_in/Step_up+(Step_group/Step_g_in-1)/(Step_group/Step_g_in)/(Step_g_in*Step_out))",
         _SECONDS),
        ("Step_e_group", "Ranks holding the same experts (DP x CP / EP)", "Step_group/Expert_parallel", "0"),
        ("Step_e_in", "Of them inside one domain (EP apart)", "MIN(MAX(INT(Step_inside/Expert_parallel),1),"
         "Step_e_group)", "0"),
        ("Step_dp_expert", "Experts' DP traffic seconds, one pass", "IF(ZeRO_stage>=3,3,2)*Step_expert*2*((Step_e_in"
         "-1)/Step_e_in/Step_up+(Step_e_group/Step_e_in-1)/(Step_e_group/Step_e_in)/(Step_e_in*Step_out))", _SECONDS),
        ("Step_dp_comm", "DP traffic seconds, one pass", "Step_dp_dense+Step_dp_expert", _SECONDS),
        ("Step_dp_hid", "DP seconds one micro-batch's compute leaves exposed",
         f"MAX(Step_dp_comm-{k.overlap!r}*Step_compute_s/Step_micro,0)", _SECONDS),
        ("Step_dp_s", "Exposed DP seconds (ZeRO-3: every micro-batch, plus a layer's gather)",
         "IF(ZeRO_stage>=3,Step_micro*(Step_dp_hid+Step_dp_comm/(3*MAX(Step_layers,1))),Step_dp_hid)", _SECONDS),
        ("Step_opt_s", "Optimizer seconds", "(Step_dense/IF(ZeRO_stage>=1,Step_group,1)+Step_expert/IF(ZeRO_stage"
         ">=1,Step_e_group,1))*32/Step_mem_Bps", _SECONDS),
        # #N/A where calc's step model refuses the layout (the ranges block's check), as calc.step_time raises
        ("Step_seconds", "Step seconds", f"IF({layout_pieces.LAYOUT_OK},Step_work+Step_bubble+Step_dp_s+Step_opt_s,"
         "NA())", _SECONDS),
        ("Step_tps", "Tokens/s per device", "Step_batch*Step_seq_len/(Devices_count*Step_seconds)", styles.COUNT),
        ("Step_MFU", "MFU (the row's dense peak)", "Step_tps*Step_model_flops/(Rate_TFLOPS*1E12)", "0.0%"),
        ("Step_HFU", "HFU", "Step_tps*Step_done/(Rate_TFLOPS*1E12)", "0.0%"),
    ]


def _run_rows() -> list[Row]:
    """The whole run of the Budget's tokens at this step (calc.run_hours): steps x step seconds /
    goodput, low / expected / high from the step time's band and goodput's spread."""
    base = "Step_steps*Step_seconds/3600"
    return [
        ("Step_steps", "Optimizer steps in the run (tokens / global batch)", "Tokens/(Step_batch*Step_seq_len)",
         styles.COUNT),
        ("Step_goodput", "Goodput (published whole runs)", "{goodput}", "0.00"),
        ("Step_run_hours", "Whole run, hours (expected)", f"{base}/Step_goodput", styles.HOURS),
        ("Step_run_low", "Whole run, hours, low", f"{base}*{{fast}}/{{goodput_high}}", styles.HOURS),
        ("Step_run_high", "Whole run, hours, high", f"{base}*{{slow}}/{{goodput_low}}", styles.HOURS),
        ("Step_run_days", "Whole run, days (expected)", "Step_run_hours/24", "#,##0.0"),
        ("Step_run_device_hours", "Device-hours (expected)", "Step_run_hours*Devices_count", styles.HOURS),
        # the deadline's search needs a layout some count takes (its split, CP, VPP with PP, the batch)
        (step_deadline.COUNT_OK, "Layout taken at some device count (TRUE / FALSE)",
         layout_pieces.step_count_free_taken(layout_pieces.SPLIT_OK, layout_pieces.CP_OK, "Pipeline_parallel",
                                             "Step_vpp", "Step_batch", "Expert_parallel", "Step_micro_batch"),
         styles.BOOLEAN),
    ]


def at_defaults(v: dict[str, Any], table: calc.DeviceTable) -> tuple[Any, ...]:
    """_values at the block's default inputs for the Budget's inputs `v`: (rows, Step, RunHours, the
    deadline's devices by case: calc.deadline_devices at the deadline block's default days, inf where none)."""
    return _values(v, table, {name: default for name, _, default, _, _ in STEP_INPUTS})


def _values(v: dict[str, Any], table: calc.DeviceTable, inputs: dict[str, Any]) -> tuple[Any, ...]:
    """Every row's value for the Budget's inputs `v` and the block's `inputs` (calc.step_time's for
    the results), calc's Step, calc's RunHours of the Budget's tokens and calc.deadline_devices at
    the deadline block's default days, by case."""
    shape = calc.model_preset(model_block.PRESET).shape
    p = model_block.arch_params()
    layout = {n: d for n, _, _, d, _ in model_block.LAYOUT_INPUTS}
    hw = calc.step_hardware(v["device"], table)
    head = shape["d_model"] / shape["n_heads"]
    vals: dict[str, Any] = {
        **inputs, **layout, "Devices_count": v["devices"], "ZeRO_stage": v["zero_stage"], "Rate_TFLOPS": hw.tflops,
        "Tokens": v["tokens"],
        "Arch_layers": shape["n_layers"], "Arch_width": shape["d_model"], "Arch_heads": shape["n_heads"],
        "Arch_kv_heads": shape["n_kv_heads"], "Arch_head_dim": head, "Arch_vocab": shape["vocab"],
        "Arch_experts": shape["n_experts"], "Arch_top_k": shape["top_k"], "Arch_params": float(p.total),
        "Arch_expert_params": float(p.experts),
        "Arch_active_flops": float(p.active_with_embedding)}
    # calc.step_time below takes the layout (it raises on one it refuses): the ranges block's checks hold
    vals.update(dict.fromkeys((layout_pieces.SPLIT_OK, layout_pieces.CP_OK, layout_pieces.LAYOUT_OK), True))
    pieces = {"fp8": 1 if hw.fp8 else 0, "fraction": calc.STEP_CONSTANTS.matmul_fraction[hw.family],
              "peak16": hw.tflops_16bit, "memory_tbps": hw.memory_tbps, "up": hw.scale_up_GBps,
              "axis": hw.scale_up_axis_GBps,
              "domain": hw.scale_up_domain, "out": hw.scale_out_Gbps, **_run_constants()}
    for name, _, formula, _ in _rows():
        vals[name] = evaluate(formula.format(**{k: repr(x) for k, x in pieces.items()}), vals)
    sh = calc.StepShape(params_active=float(p.active_with_embedding), params_total=float(p.total),
                        n_layers=shape["n_layers"], d_model=shape["d_model"], attn_dim=shape["n_heads"] * head,
                        kv_dim=shape["n_kv_heads"] * head, vocab=shape["vocab"],
                        top_k=shape["top_k"] if shape["n_experts"] > 1 else 0, params_expert=float(p.experts),
                        n_heads=shape["n_heads"])
    lay = calc.StepLayout(devices=v["devices"], seq_len=inputs["Step_seq_len"],
                          global_batch_tokens=inputs["Step_batch"] * inputs["Step_seq_len"],
                          tp=layout["Tensor_parallel"], pp=layout["Pipeline_parallel"], vpp=inputs["Step_vpp"],
                          cp=inputs["Step_cp"], ep=layout["Expert_parallel"], zero_stage=v["zero_stage"],
                          micro_batch=inputs["Step_micro_batch"], recompute=inputs["Step_recompute"],
                          flash_attention=inputs["Step_flash"])
    want = {c: calc.deadline_devices(sh, lay, hw, v["tokens"], DAYS_DEFAULT, case=c) for c in step_deadline.CASES}
    return vals, calc.step_time(sh, lay, hw), calc.run_hours(sh, lay, hw, v["tokens"]), want


# beside the step seconds: why the step's results are #N/A where calc's step model refuses the layout
REFUSED = (f'IF({layout_pieces.LAYOUT_OK},"","calc\'s step model refuses this layout (Step layout taken, above, '
           'is FALSE): no step time")')

# The results' rows and calc.Step's figure for each (the cached value is calc's)
RESULTS = {"Step_compute_s": ("breakdown", "compute"), "Step_tp_s": ("breakdown", "tp"),
           "Step_cp_s": ("breakdown", "cp"), "Step_ep_s": ("breakdown", "ep"),
           "Step_bubble": ("breakdown", "bubble"), "Step_dp_s": ("breakdown", "dp_exposed"),
           "Step_opt_s": ("breakdown", "optimizer"), "Step_seconds": ("step_seconds", None),
           "Step_tps": ("tokens_per_second_per_device", None), "Step_MFU": ("mfu", None), "Step_HFU": ("hfu", None)}


# The whole run's rows and calc.RunHours's figure for each (attribute, divided by)
RUN_RESULTS = {"Step_steps": ("steps", 1.0), "Step_goodput": ("goodput", 1.0), "Step_run_hours": ("expected", 1.0),
               "Step_run_low": ("low", 1.0), "Step_run_high": ("high", 1.0), "Step_run_days": ("expected", 24.0),
               "Step_run_device_hours": ("device_hours", 1.0)}


def figure(st: Any, name: str) -> float:
    """calc.Step's figure for a result row of RESULTS."""
    attr, part = RESULTS[name]
    value = getattr(st, attr)
    return float(value[part] if part else value)


def run_figure(run: Any, name: str) -> float:
    """calc.RunHours's figure for a whole-run row of RUN_RESULTS."""
    attr, per = RUN_RESULTS[name]
    return float(getattr(run, attr)) / per


def write(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable, v: dict[str, Any]) -> None:
    """The step block below the layout block (printed with it), and its hardware table after it."""
    top = model_block.first_free_row(ws)
    ws.row_breaks.append(Break(id=top - 1))
    area = ws.print_area.split("!")[-1].split(":")[0].replace("$", "")
    text(ws, f"A{top}", "Step time: one training step of the architecture on the layout above", styles.HEADING)
    text(ws, f"C{top}", "calc's step model (trainbudget estimate --step), term by term; TP, PP, EP above",
         styles.NOTE)
    inputs = {name: default for name, _, default, _, _ in STEP_INPUTS}
    for r, (name, label, default, fmt, note) in enumerate(STEP_INPUTS, start=top + 1):
        text(ws, f"A{r}", label)
        cell = style(ws[f"B{r}"], fmt, styles.INPUT_FONT, styles.INPUT_FILL)
        cell.value, cell.protection, cell.border = default, styles.UNLOCKED, styles.BOX
        text(ws, f"C{r}", note, styles.NOTE)
        _name(ws, name, f"B{r}")
    first = top + 1 + len(STEP_INPUTS)
    _validations(ws, top + 1, first - 3, first - 2)
    values, st, run, want = _values(v, table, inputs)
    pieces = _pieces()
    for r, (name, label, formula, fmt) in enumerate(_rows(), start=first):
        result = name in RESULTS or name in RUN_RESULTS
        value = (figure(st, name) if name in RESULTS else run_figure(run, name) if result else values[name])
        if result and abs(value - values[name]) > 1e-9 * max(abs(value), 1e-30):
            raise AssertionError(f"step block: {name} is {values[name]!r}, calc says {value!r}")
        font = styles.BOLD if result and name not in ("Step_steps", "Step_goodput") else styles.BODY
        text(ws, f"A{r}", label, font)
        cached.formula(ws, f"B{r}", formula.format(**pieces), value, fmt, font)
        _name(ws, name, f"B{r}")
    end = first + len(_rows())  # and the deadline's row
    at = {name: r for r, (name, *_) in enumerate(_rows(), start=first)}
    for name, note in _notes().items():
        text(ws, f"C{at[name]}", note, styles.NOTE)
    cached.formula(ws, f"C{at['Step_seconds']}", REFUSED, "", font=styles.NOTE, fill=None)
    ws.print_area = f"{area}:K{end}"
    hardware_end = step_hardware_table.write(ws, end + 2, table)
    step_deadline.write(ws, cached, {**values, "Deadline_days": DAYS_DEFAULT}, end, hardware_end + 2, want)


def _notes() -> dict[str, str]:
    """Column C's notes, by the row they sit on."""
    g = calc.fit_goodput()
    fast, slow = calc.STEP_RESIDUAL
    return {"Step_dp": "model: the architecture's counted parameters (calc: a preset's published count)",
            "Step_fraction": "topology and fitted fraction: the table below (calc.step_hardware); other hardware: "
                             "calc's fallback, Hopper's fraction",
            "Step_HFU": "cached values from calc.step_time; the CLI's --step and TRAIN_STEP time a preset",
            "Step_steps": "the Budget's training tokens over the global batch in tokens",
            "Step_goodput": f"calc.fit_goodput: whole-run utilization / steady-state MFU of {len(g.runs)} published "
                            f"runs, geometric mean ({g.low:.2f}-{g.high:.2f})",
            "Step_run_hours": "steps x step seconds / goodput (calc.run_hours; estimate --step for a preset)",
            "Step_run_low": f"step time x{fast:g} (p10 of the step model's leave-one-out residuals), the best goodput",
            "Step_run_high": f"step time x{slow:g} (p90), the worst goodput",
            "Step_run_device_hours": "expected hours x the Budget's devices"}


def _validations(ws: Worksheet, first: int, last_count: int, recompute_row: int) -> None:
    whole = DataValidation(type="whole", operator="greaterThanOrEqual", formula1="1", allow_blank=False,
                           showErrorMessage=True, error="a whole number, 1 or more")
    ws.add_data_validation(whole)
    whole.add(f"B{first}:B{last_count}")
    listed = DataValidation(type="list", formula1='"' + ",".join(calc.RECOMPUTE) + '"', allow_blank=False,
                            showErrorMessage=True, errorStyle="information")
    ws.add_data_validation(listed)
    listed.add(f"B{recompute_row}")
    flag = DataValidation(type="list", formula1='"TRUE,FALSE"', allow_blank=False, showErrorMessage=True)
    ws.add_data_validation(flag)
    flag.add(f"B{recompute_row + 1}")


def _name(ws: Worksheet, name: str, ref: str) -> None:
    ws.parent.defined_names[name] = DefinedName(name, attr_text=f"'{ws.title}'!${ref[0]}${ref[1:]}")
