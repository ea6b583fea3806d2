"""The Budget sheet's optional architecture and layout blocks, appended below everything else.

Architecture: a transformer's shape (layers, width, heads, KV heads, FFN width, vocabulary,
experts, top-k) gives its total and active parameters, in the registry's MODEL_PARAMS and
MODEL_ACTIVE_PARAMS native forms split into named helper rows (calc.model_params).
Layout: tensor, pipeline and expert parallel sizes give the data-parallel size and memory per
device by part, in TRAIN_LAYOUT_BYTES's native form split the same way (calc.train_memory).
Defaults: the Llama 3.1 8B preset (calc/data/models.csv). The Budget's Params input is never
overridden: the note beside it shows what the architecture gives, for the user to copy.
Cached values come from calc.
"""

from __future__ import annotations

from typing import Any

from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from ... import calc
from ..functions import native, pieces, registry
from . import styles
from .cached_cells import CachedCells, style, text

GB = calc.GB
GIB = calc.GIB
PRESET = "Llama 3.1 8B"
# name, label, shape field, note. Defaults come from the preset.
ARCH_INPUTS = (
    ("Arch_layers", "Layers", "n_layers", "transformer layers"),
    ("Arch_width", "Width (d_model)", "d_model", "hidden size"),
    ("Arch_heads", "Attention heads", "n_heads", "head width = width / heads"),
    ("Arch_kv_heads", "Key/value heads", "n_kv_heads", "grouped-query attention; = heads without it"),
    ("Arch_ffn", "FFN width", "ffn_dim", "gated (SwiGLU) MLP; each expert's width too"),
    ("Arch_vocab", "Vocabulary", "vocab", "input embedding and output projection, untied"),
    ("Arch_experts", "Experts per layer", "n_experts", "1 = dense; Mixtral 8x7B: 8"),
    ("Arch_top_k", "Experts per token (top-k)", "top_k", "1 when dense; Mixtral 8x7B: 2"),
)
LAYOUT_INPUTS = (
    ("Tensor_parallel", "Tensor parallel (TP)", "tensor_parallel", 2, "must divide the heads"),
    ("Pipeline_parallel", "Pipeline parallel (PP)", "pipeline_parallel", 1, "pipeline stages"),
    ("Expert_parallel", "Expert parallel (EP)", "expert_parallel", 1, "must divide data parallel"),
)
# The architecture's named cells for the registry's shape arguments; the rest fold to constants.
SHAPE_EXPRS = {"n_layers": "Arch_layers", "d_model": "Arch_width", "n_heads": "Arch_heads",
               "n_kv_heads": "Arch_kv_heads", "head_dim": "Arch_head_dim", "ffn_dim": "Arch_ffn",
               "vocab": "Arch_vocab", "n_experts": "Arch_experts", "top_k": "Arch_top_k",
               "moe_ffn_dim": "Arch_ffn", "n_shared_experts": "0", "dense_layers": "0",
               "gated_mlp": "TRUE", "tied_embeddings": "FALSE"}
# Pieces of the registry's templates that get a helper row of their own (one source of truth).
_ATTN = registry.ATTENTION_PARAMS
_MLP = registry.MLP_PARAMS


def _swap(template: str, swaps: dict[str, str], strict: bool = True) -> str:
    """The template with each piece replaced by a helper placeholder; a missing piece is a bug."""
    for piece, name in swaps.items():
        if strict and piece not in template:
            raise AssertionError(f"registry template no longer holds {piece!r}")
        template = template.replace(piece, "{" + name + "}")
    return template


def _render(template: str, helpers: dict[str, str], exprs: dict[str, str] | None = None) -> str:
    return native.render(template, {**(exprs or SHAPE_EXPRS), **helpers})


def first_free_row(ws: Worksheet) -> int:
    """The first row below every cell and the print area (the chart lies inside it)."""
    area = ws.print_area or ""
    last_printed = int("".join(ch for ch in area.rsplit("$", 1)[-1] if ch.isdigit()) or 0)
    return max(ws.max_row, last_printed) + 2


def write(ws: Worksheet, cached: CachedCells, table: calc.DeviceTable, budget: dict[str, Any],
          params_ref: str) -> None:
    """Append both blocks below the Budget and extend the print area to them (a page of their own).
    `budget`: the Budget inputs' default values; `params_ref`: the Params input cell ($B$5)."""
    top = first_free_row(ws)
    ws.row_breaks.append(Break(id=top - 1))
    area = ws.print_area.split("!")[-1].split(":")[0].replace("$", "")
    shape = dict(calc.model_preset(PRESET).shape)
    arch_end, arch = _architecture(ws, cached, top, shape)
    end = _layout(ws, cached, arch_end + 2, arch, shape, budget,
                  calc.usable_bytes_of(table.value(budget["device"], "memory_gib")) / GB)
    ws.print_area = f"{area}:K{end}"
    _params_note(ws, cached, params_ref, arch.total, budget["params"])


def _inputs(ws: Worksheet, first: int, rows: list[tuple[str, str, Any, str]]) -> None:
    """Yellow named inputs; whole numbers >= 1 only (each is a count)."""
    whole = DataValidation(type="whole", operator="greaterThanOrEqual", formula1="1", allow_blank=False,
                           showErrorMessage=True, error="a whole number, 1 or more")
    ws.add_data_validation(whole)
    whole.add(f"B{first}:B{first + len(rows) - 1}")
    for r, (name, label, value, note) in enumerate(rows, start=first):
        text(ws, f"A{r}", label)
        cell = style(ws[f"B{r}"], styles.COUNT, styles.INPUT_FONT, styles.INPUT_FILL)
        cell.value, cell.protection, cell.border = value, styles.UNLOCKED, styles.BOX
        text(ws, f"C{r}", note, styles.NOTE)
        _name(ws, name, r)


def _name(ws: Worksheet, name: str, row: int) -> None:
    ws.parent.defined_names[name] = DefinedName(name, attr_text=f"'{ws.title}'!$B${row}")


def _outputs(ws: Worksheet, cached: CachedCells, first: int,
             rows: list[tuple[str | None, str, str, Any, str]], bold_from: int = 0) -> int:
    for i, (name, label, formula, value, fmt) in enumerate(rows):
        r = first + i
        font = styles.BOLD if i >= bold_from else styles.BODY
        text(ws, f"A{r}", label, font)
        cached.formula(ws, f"B{r}", formula, value, fmt, font)
        if name:
            _name(ws, name, r)
    return first + len(rows) - 1


def _architecture(ws: Worksheet, cached: CachedCells, top: int,
                  shape: dict[str, Any]) -> tuple[int, Any]:
    """Shape inputs and parameters from them; returns the last row and calc's breakdown."""
    text(ws, f"A{top}", "Architecture (optional): parameters from the model's shape", styles.HEADING)
    text(ws, f"C{top}", f"defaults: {PRESET} (arXiv:2407.21783, Table 3)", styles.NOTE)
    _inputs(ws, top + 1, [(n, label, shape[f], note) for n, label, f, note in ARCH_INPUTS])
    p = calc.model_params(**{f: shape[f] for _, _, f, _ in ARCH_INPUTS},
                                 head_dim=shape["d_model"] // shape["n_heads"])
    hd = shape["d_model"] / shape["n_heads"]
    d, f, e, layers = shape["d_model"], shape["ffn_dim"], shape["n_experts"], shape["n_layers"]
    moe_layers = layers if e > 1 else 0
    attn = 2 * d * shape["n_heads"] * hd + 2 * d * shape["n_kv_heads"] * hd + 2 * d
    H = {"head_dim": "Arch_head_dim", "_attn": "Arch_attention", "_mlp": "Arch_mlp",
         "_moe_layers": "Arch_moe_layers", "_expert": "Arch_expert", "_total": "Arch_params"}
    swaps = {_ATTN: "_attn", registry._MOE_LAYERS: "_moe_layers", registry._EXPERT: "_expert",
              _MLP: "_mlp"}
    total = _swap(registry._PARAMS_TOTAL, swaps)
    active = _swap(_swap(registry._PARAMS_ACTIVE, {registry._PARAMS_TOTAL: "_total"}), swaps, strict=False)
    rows = [
        ("Arch_head_dim", "Head width", _render(registry.HEAD_DIM.native_default, {}), hd, styles.COUNT),
        ("Arch_attention", "Attention and norms per layer", _render(_ATTN, H), attn, styles.COUNT),
        ("Arch_mlp", "Dense MLP per layer", _render(_MLP, H), 3 * d * f, styles.COUNT),
        ("Arch_moe_layers", "Mixture-of-experts layers", _render(registry._MOE_LAYERS, H), moe_layers, "0"),
        ("Arch_expert", "One expert's MLP", _render(registry._EXPERT, H), 3 * d * f, styles.COUNT),
        ("Arch_params", "Total parameters (MODEL_PARAMS)", _render(total, H), p.total, styles.COUNT),
        ("Arch_active", "Active per token, no input embedding", _render(active, H), p.active,
         styles.COUNT),
        ("Arch_expert_params", "Routed-expert parameters",
         pieces.product(["Arch_moe_layers", "Arch_experts", "Arch_expert"]),
         p.experts, styles.COUNT),
        ("Arch_active_flops", "Active parameters with the input embedding",
         pieces.total(["Arch_active", _render(registry.INPUT_TABLE, {})]), p.active_with_embedding, styles.COUNT),
    ]
    first = top + 1 + len(ARCH_INPUTS)
    end = _outputs(ws, cached, first, rows, bold_from=5)
    text(ws, f"C{end - 3}", "copy into Params above to budget this model (the note there compares)",
         styles.NOTE)
    text(ws, f"C{end}", "a mixture of experts: copy into Active parameters above (the N of 6·N·D, calc.physics.flops)",
         styles.NOTE)
    return end, p


def _layout(ws: Worksheet, cached: CachedCells, top: int, arch: Any, arch_shape: dict[str, Any],
            budget: dict[str, Any], usable_gb: float) -> int:
    """Tensor/pipeline/expert inputs, data parallel and memory per device by part for the
    architecture's model, with the Budget's devices, optimizer, ZeRO stage and activations."""
    text(ws, f"A{top}", "Layout: memory per device for the architecture above", styles.HEADING)
    text(ws, f"C{top}", "full training; devices, optimizer, ZeRO stage, activations from the Budget",
         styles.NOTE)
    _inputs(ws, top + 1, [(n, label, v, note) for n, label, _, v, note in LAYOUT_INPUTS])
    layout = {f: v for _, _, f, v, _ in LAYOUT_INPUTS}
    # The input embedding stays whole on the first pipeline stage (Narayanan et al. 2021, §2.2),
    # as trainbudget fit counts it (calc.fit_layouts: stage_params = vocab * d_model).
    embedding = arch_shape["vocab"] * arch_shape["d_model"]
    mem = calc.budget(calc.job(model=calc.model_preset(PRESET), tokens=budget["tokens"],
                               device=budget["device"], devices=budget["devices"], optimizer=budget["optimizer"],
                               zero_stage=budget["zero_stage"], activations=budget["activations"] * GB,
                               tp=layout["tensor_parallel"], pp=layout["pipeline_parallel"],
                               ep=layout["expert_parallel"])).memory  # the one composer, on the preset's shape
    dp = calc.layout_data_parallel(budget["devices"], layout["tensor_parallel"],
                                          layout["pipeline_parallel"], 1, layout["expert_parallel"])
    stage, exprs, part = _layout_pieces()
    t, pp, e = layout["tensor_parallel"], layout["pipeline_parallel"], layout["expert_parallel"]
    total, experts = calc.busiest_params(float(arch.total), float(arch.experts), float(embedding),
                                                arch_shape["n_layers"], float(pp))
    check = pieces.layout_check("Devices_count", "Tensor_parallel", "Pipeline_parallel", "Data_parallel",
                                "Expert_parallel", "Arch_heads", "Layout_stage_scale")
    rows = [  # uneven pipeline stages (80 layers on 3: 26/27/27): memory of the busiest (calc.physics.stages)
        ("Layout_stage_scale", "Busiest stage's layers x PP / layers", pieces.busiest_scale("Arch_layers",
         "Pipeline_parallel"), float(calc.busiest_scale(arch_shape["n_layers"], float(pp))), "0.0000"),
        ("Layout_params", "Params as the busiest stage holds them (x PP)",
         pieces.busiest_stage_params("Arch_params", stage, "Layout_stage_scale"), total, styles.COUNT),
        ("Data_parallel", "Data parallel (devices / (TP x PP))", _render(registry._DP, {}, exprs), dp, "0"),
        (None, "Layout check", check, pieces.UNEVEN if calc.uneven_stages(arch_shape["n_layers"], pp) else "divides",
         None),
        ("Layout_dense", "Dense parameters per device",
         _render(registry._DENSE_DEV, {}, exprs),
         ((total - experts - embedding) / pp + embedding) / t, styles.COUNT),
        ("Layout_expert", "Expert parameters per device",
         _render(registry._EXPERT_DEV, {}, exprs), experts / (t * pp * e), styles.COUNT),
        (None, "Weights per device (GB)", pieces.in_gb(pieces.times(repr(calc.WEIGHT_BYTES), part(3))),
         mem.weights / GB, styles.GB),
        (None, "Gradients per device (GB)", pieces.in_gb(pieces.times(repr(calc.GRAD_BYTES), part(2))),
         mem.gradients / GB, styles.GB),
        (None, "Optimizer per device (GB)", pieces.in_gb(pieces.times("Optimizer_bytes", part(1))),
         mem.optimizer / GB, styles.GB),
        (None, "Master copy per device (GB)", pieces.in_gb(pieces.times(repr(calc.MASTER_BYTES), part(1))),
         mem.master / GB, styles.GB),
        (None, "Activations per device (GB)", "Activations_GB", mem.activations / GB, styles.GB),
    ]
    first = top + 1 + len(LAYOUT_INPUTS)
    last_part = first + len(rows) - 1
    rows.append(("Layout_total_GB", "Total per device on this layout (GB)",
                 pieces.total([f"B{r}" for r in range(last_part - 4, last_part + 1)]), mem.total / GB, styles.GB))
    # Usable memory (calc/hardware/capacity.py: capacity less max(3 GiB, 5%)), as budget(), fit and plan judge it.
    rows.append((None, "Left free of usable memory (GB)", pieces.free_gb("Usable_GiB", "Layout_total_GB"),
                 usable_gb - mem.total / GB, styles.GB))
    end = _outputs(ws, cached, first, rows, bold_from=len(rows) - 2)
    _layout_notes(ws, first, end)
    return end


def _layout_notes(ws: Worksheet, first: int, end: int) -> None:
    """The layout block's notes in column C, from its first output row to its last (`end`)."""
    text(ws, f"C{end - 1}", "TRAIN_LAYOUT_BYTES", styles.NOTE)
    text(ws, f"C{first}", "above 1: uneven pipeline stages; memory per device is the largest stage's",
         styles.NOTE)
    text(ws, f"C{first + 4}", "before ZeRO; the first pipeline stage keeps the input embedding whole",
         styles.NOTE)
    text(ws, f"C{end}", "usable memory (Usable_GiB) as trainbudget fit counts it; negative: does not fit",
         styles.NOTE)


def _layout_pieces() -> tuple[str, dict[str, str], Any]:
    """The layout block's named pieces: the first stage's extra parameters (the input embedding),
    the registry's memory expressions over the sheet's names, and `part(k)`: the parameters per
    device that ZeRO stage k shards (registry._layout_part rendered on the sheet's names)."""
    stage = pieces.product(["Arch_vocab", "Arch_width"])
    exprs = {"params": "Layout_params", "expert_params": pieces.times("Arch_expert_params", "Layout_stage_scale"),
             "stage_params": stage,
             "devices": "Devices_count", "tensor_parallel": "Tensor_parallel",
             "pipeline_parallel": "Pipeline_parallel", "expert_parallel": "Expert_parallel",
             "context_parallel": "1", "zero_stage": "ZeRO_stage", "optimizer": "Optimizer",
             "grad_bytes": repr(calc.GRAD_BYTES)}
    H = {"_dense": "Layout_dense", "_exp": "Layout_expert", "_dp": "Data_parallel",
         "_optimizer_bytes": "Optimizer_bytes"}
    # this block has no context parallel (1), so ZeRO's group, data x context, is the data-parallel row
    swaps = {registry._DENSE_DEV: "_dense", registry._EXPERT_DEV: "_exp", registry._ZERO: "_dp"}

    def part(zero: int) -> str:
        return _render(_swap(registry._layout_part(zero), swaps), H, exprs)

    return stage, exprs, part


def _params_note(ws: Worksheet, cached: CachedCells, params_ref: str, total: float, params: float) -> None:
    """Beside the Params input: what the architecture block gives, for the user to copy."""
    ref = "C" + params_ref.replace("$", "")[1:]
    formula = pieces.params_note("Arch_params", "Params")
    same = abs(total - params) <= 0.005 * params
    value = f"from the architecture below: {total:,.0f}" + (" (matches)" if same else " (copy it here to use it)")
    cached.formula(ws, ref, formula, value, font=styles.NOTE, fill=None)


def arch_params() -> calc.ParamBreakdown:
    """The architecture block's parameters at its defaults (PRESET's shape, counted as the block counts it)."""
    shape = calc.model_preset(PRESET).shape
    head_dim = shape["d_model"] // shape["n_heads"]
    return calc.model_params(**{f: shape[f] for _, _, f, _ in ARCH_INPUTS}, head_dim=head_dim)
