"""The Budget's layout block counts the largest pipeline stage's memory and says the stages are uneven,
recalculated by LibreOffice, as calc.budget does (80 layers on PP 3)."""

from __future__ import annotations

import openpyxl
import pytest

from tests import xlsx_edit
from trainbudget import calc
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.functions import pieces
from trainbudget.addin.template import budget_sheet, model_block

H100 = "H100 SXM, BF16 tensor core, dense"

L70 = calc.model_preset("Llama 3.1 70B")  # 80 layers


def test_the_layout_block_counts_the_largest_stage_in_libreoffice(soffice, built, tmp_path):
    names = {n: d.attr_text.split("!")[-1].replace("$", "")
             for n, d in openpyxl.load_workbook(built.path).defined_names.items()}
    shape = L70.shape
    fields = {name: field for name, _, field, _ in model_block.ARCH_INPUTS}
    layout = {"Tensor_parallel": 8, "Pipeline_parallel": 3, "Expert_parallel": 1}
    path = tmp_path / "pp3.xlsm"
    path.write_bytes(built.path.read_bytes())
    edits = {**{n: shape[f] for n, f in fields.items()}, **layout, budget_sheet.NAMES["devices"]: 24}
    for name, value in edits.items():
        xlsx_edit.edit_cell(path, "Budget", names[name],
                            lambda s, cell, v=value: s.set_constant(cell, v, cell.get("s")))
    ws = openpyxl.load_workbook(engine.convert([path], "xlsx", tmp_path / "out")[0],
                                              data_only=True)["Budget"]
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    want = calc.budget(calc.job(model=L70, tokens=1e12, device=H100, devices=24.0, tp=8.0,
                                pp=3.0, optimizer=v["optimizer"], zero_stage=v["zero_stage"],
                                activations=v["activations"] * 1e9)).memory
    total_row = int(names["Layout_total_GB"][1:])
    assert ws[f"B{total_row}"].value == pytest.approx(want.total / 1e9, rel=1e-9)
    assert ws[f"B{total_row - 5}"].value == pytest.approx(want.weights / 1e9, rel=1e-9)
    assert ws[f"B{total_row - 8}"].value == pieces.UNEVEN == "uneven stages"
