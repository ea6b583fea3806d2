"""The Budget's architecture and layout blocks, recalculated by LibreOffice, against calc.

Copies of the built template with the blocks' named input cells edited (lxml, tests/xlsx_edit.py)
to a few presets and layouts, all recalculated in one LibreOffice run; every result must equal
calc.model_params / calc.train_memory to 1e-9 relative. The TRAIN_ACTIVATION_BYTES native form
is checked the same way on pipeline, context, sequence-parallel and vocabulary cases.
"""

from __future__ import annotations

import math
from pathlib import Path

import openpyxl
import pytest

from tests import xlsx_edit
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.functions.registry import BY_NAME
from trainbudget.addin.template import budget_sheet, model_block
from trainbudget.calc.model import shapes as calc_models

GB = 1e9
ARCH_FIELDS = {name: field for name, _, field, _ in model_block.ARCH_INPUTS}
LAYOUT_FIELDS = {name: field for name, _, field, _, _ in model_block.LAYOUT_INPUTS}
_SHAPE_KEYS = tuple(ARCH_FIELDS.values())


def _preset(name: str) -> dict:
    shape = calc_models.model_preset(name).shape
    return {k: shape[k] for k in _SHAPE_KEYS}


# (label, shape, layout, Budget inputs changed)
CASES = [
    ("llama 8B default", _preset("Llama 3.1 8B"),
     {"tensor_parallel": 2, "pipeline_parallel": 1, "expert_parallel": 1}, {}),
    ("mixtral 8x7B", _preset("Mixtral 8x7B"),
     {"tensor_parallel": 1, "pipeline_parallel": 1, "expert_parallel": 8},
     {"devices": 64, "zero_stage": 1}),
    ("mixtral TP2 PP2 EP2", _preset("Mixtral 8x7B"),
     {"tensor_parallel": 2, "pipeline_parallel": 2, "expert_parallel": 2},
     {"devices": 16, "zero_stage": 3, "optimizer": "adamw_bf16", "activations": 12.5}),
    ("llama 70B TP8 PP2 ZeRO-1", _preset("Llama 3.1 70B"),
     {"tensor_parallel": 8, "pipeline_parallel": 2, "expert_parallel": 1},
     {"devices": 64, "zero_stage": 1}),
]
# TRAIN_ACTIVATION_BYTES arguments in registry order, after the five required ones.
ACTIVATION_CASES = [
    (32, 4096, 32, 4096, 1, {}),
    (80, 8192, 64, 4096, 1, {"recompute": "full", "tensor_parallel": 8, "sequence_parallel": True,
                             "pipeline_parallel": 4, "vocab": 128256}),
    (80, 8192, 64, 8192, 2, {"recompute": "selective", "tensor_parallel": 4, "sequence_parallel": True,
                             "pipeline_parallel": 8, "context_parallel": 2, "vocab": 128256,
                             "micro_batches": 3}),
    (32, 4096, 32, 4096, 1, {"tensor_parallel": 2, "vocab": 32000}),
    (126, 16384, 128, 8192, 1, {"recompute": "none", "flash_attention": True, "tensor_parallel": 8,
                                "pipeline_parallel": 1, "context_parallel": 4, "vocab": 128256}),
    (80, 8192, 64, 4096, 2, {"recompute": "offload", "tensor_parallel": 8, "sequence_parallel": True,
                             "pipeline_parallel": 4, "vocab": 128256, "micro_batches": 8}),
    (32, 4096, 32, 4096, 1, {"recompute": "offload", "flash_attention": True}),
]


def _cells(path: Path) -> dict[str, str]:
    """Defined name -> Budget cell ('B107')."""
    wb = openpyxl.load_workbook(path)
    return {n: d.attr_text.split("!")[-1].replace("$", "") for n, d in wb.defined_names.items()}


def _excel(value):
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def _activation_book(path: Path) -> None:
    wb = openpyxl.Workbook()
    spec = BY_NAME["TRAIN_ACTIVATION_BYTES"]
    for r, (*required, options) in enumerate(ACTIVATION_CASES, start=1):
        exprs = {a.name: _excel(v) for a, v in zip(spec.args, required, strict=False)}
        exprs.update({k: _excel(v) for k, v in options.items()})
        wb.active.cell(r, 1, "=" + spec.native_formula(exprs))
    wb.save(path)


@pytest.fixture(scope="module")
def recalculated(soffice, built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("model_block")
    names = _cells(built.path)
    paths = []
    for i, (_, shape, layout, budget) in enumerate(CASES):
        path = tmp / f"case{i}.xlsm"
        path.write_bytes(built.path.read_bytes())
        edits = {**{n: shape[f] for n, f in ARCH_FIELDS.items()},
                 **{n: layout[f] for n, f in LAYOUT_FIELDS.items()},
                 **{budget_sheet.NAMES[k]: v for k, v in budget.items()}}
        for name, value in edits.items():
            xlsx_edit.edit_cell(path, "Budget", names[name],
                                lambda s, cell, v=value: s.set_constant(cell, v, cell.get("s")))
        paths.append(path)
    bad = tmp / "bad.xlsm"  # TP 3 divides neither 8 devices nor 32 heads
    bad.write_bytes(built.path.read_bytes())
    xlsx_edit.edit_cell(bad, "Budget", names["Tensor_parallel"], lambda s, cell: s.set_constant(cell, 3))
    paths.append(bad)
    _activation_book(tmp / "activations.xlsx")
    out = engine.convert([*paths, tmp / "activations.xlsx"], "xlsx", tmp / "out")
    books = [openpyxl.load_workbook(p, data_only=True) for p in out]
    return names, books[:-1], books[-1]


def test_bad_layout_says_so(recalculated):
    names, books, _ = recalculated
    ws = books[-1]["Budget"]
    assert ws[f"B{int(names['Data_parallel'][1:]) + 1}"].value == "does not divide"


def _close(got, want) -> bool:
    return isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0] for c in CASES])
def test_blocks_equal_calc(recalculated, case):
    names, books, _ = recalculated
    books = books[:len(CASES)]
    label, shape, layout, changed = CASES[case]
    ws = books[case]["Budget"]
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS} | changed
    p = calc.model_params(**shape)
    mem = calc.train_memory(p.total, devices=v["devices"], expert_params=p.experts,
                            stage_params=shape["vocab"] * shape["d_model"],
                            optimizer=v["optimizer"], zero_stage=v["zero_stage"],
                            activations=v["activations"] * GB, **layout)

    def at(name: str):
        return ws[names[name]].value

    assert _close(at("Arch_params"), p.total), label
    assert _close(at("Arch_active"), p.active), label
    assert _close(at("Arch_expert_params"), p.experts), label
    assert _close(at("Data_parallel"), calc.layout_data_parallel(
        v["devices"], layout["tensor_parallel"], layout["pipeline_parallel"], 1,
        layout["expert_parallel"])), label
    total_row = int(names["Layout_total_GB"][1:])
    parts = {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(total_row - 5, total_row + 1)}
    want = {"Weights per device (GB)": mem.weights, "Gradients per device (GB)": mem.gradients,
            "Optimizer per device (GB)": mem.optimizer, "Master copy per device (GB)": mem.master,
            "Activations per device (GB)": mem.activations,
            "Total per device on this layout (GB)": mem.total}
    for part, value in want.items():
        assert _close(parts[part], value / GB), (label, part, parts[part], value / GB)
    assert ws[f"B{total_row - 8}"].value == "divides"
    usable_gb = calc.usable_bytes(v["device"]) / GB   # the one usable-memory rule, as budget() and fit
    assert ws[f"A{total_row + 1}"].value == "Left free of usable memory (GB)"
    assert _close(ws[f"B{total_row + 1}"].value, usable_gb - mem.total / GB)
    note = ws["C" + budget_sheet.REF["params"].replace("$", "")[1:]].value
    assert note.startswith(f"from the architecture below: {p.total:,.0f}")
    default = budget_sheet.DEFAULT_PARAMS  # the preset's own count: the defaults agree
    same = abs(p.total - default) <= 0.005 * default
    assert note.endswith("(matches)" if same else "(copy it here to use it)"), (label, note)
    assert _close(ws[budget_sheet.REF["params"].replace("$", "")].value, default)  # never overridden


def test_published_parameter_counts(recalculated):
    """The blocks' totals are the presets' published figures within 0.5%."""
    names, books, _ = recalculated
    books = books[:len(CASES)]
    for book, (label, shape, _, _), preset in zip(books, CASES, ("Llama 3.1 8B", "Mixtral 8x7B",
                                                                 "Mixtral 8x7B", "Llama 3.1 70B"), strict=True):
        published = calc_models.model_preset(preset)
        got = book["Budget"][names["Arch_params"]].value, book["Budget"][names["Arch_active"]].value
        assert math.isclose(got[0], published.published_total_params, rel_tol=0.005), label
        # Arch_active leaves the (untied) input table out (calc.models); Meta and Mistral count it in
        table = shape["vocab"] * shape["d_model"]
        assert math.isclose(got[1] + table, published.published_active_params, rel_tol=0.005), label


def test_activation_native_form_equals_calc(recalculated):
    _, _, book = recalculated
    ws = book.active
    for r, (*required, options) in enumerate(ACTIVATION_CASES, start=1):
        want = calc.activation_bytes(*required, **options)
        assert _close(ws.cell(r, 1).value, want), (r, ws.cell(r, 1).value, want)
        via_memory = calc.train_memory(1e9, devices=options.get("tensor_parallel", 1)
                                       * options.get("pipeline_parallel", 1)
                                       * options.get("context_parallel", 1),
                                       **dict(zip(("n_layers", "d_model", "n_heads", "seq_len",
                                                   "micro_batch"), required, strict=True)), **options)
        assert via_memory.activations == want


def test_blocks_start_below_everything_and_stay_off_the_printed_detail(built):
    """The architecture and layout blocks sit below every other row of the Budget, after an empty
    row, and outside its print area: the printed detail is the Summary's two pages (test_printed)."""
    ws = openpyxl.load_workbook(built.path)["Budget"]
    names = _cells(built.path)
    first = min(int(names[n][1:]) for n in ARCH_FIELDS) - 1  # the block's heading row
    assert all(ws[f"{c}{r}"].value is None for r in range(first - 1, first) for c in "ABCDEFGHIJK")
    printed_to = int(ws.print_area.rsplit("$", 1)[-1])
    assert printed_to < first
