"""verify reads the inputs: each case seeds one bad input, live link, external reference,
unknown function or external-link part into a copy of the template and expects exactly one error,
at that cell, and exit status 1. Cells are found from the template's builders, never retyped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import invoke
from tests.xlsx_edit import edit_cell
from trainbudget.addin.ooxml import package
from trainbudget.addin.template import budget_sheet, prices_sheet, scenarios
from trainbudget.addin.verify import check as verify

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _budget(name: str) -> tuple[str, str]:
    return "Budget", budget_sheet.REF[name].replace("$", "")


def _named(name: str) -> tuple[str, str]:
    sheet, ref = verify.template_names()[name].split("!")
    return sheet, ref


def _plan(name: str, column: str = scenarios.COLUMNS[1]) -> tuple[str, str]:
    return "Scenarios", f"{column}{scenarios.ROW[name]}"


def _price_cell() -> tuple[str, str]:
    col = next(i for i, (h, *_) in enumerate(prices_sheet.COLUMNS, start=1)
               if h == prices_sheet.PLAN_HEADERS["on_demand"])
    return "Prices", f"{chr(ord('A') + col - 1)}{prices_sheet.FIRST_ROW + 1}"


def _constant(value):
    return lambda s, cell: s.set_constant(cell, value, cell.get("s"))


def _formula(text: str, cached):
    def change(s, cell):
        s.set_constant(cell, cached, cell.get("s"))
        f = etree.Element(s.q("f"))
        f.text = text
        cell.insert(0, f)
    return change


def _cached(value):
    """The cell's formula kept, its cached result `value` (as Excel would have saved it)."""
    def change(s, cell):
        f = cell.find(s.q("f"))
        s.set_constant(cell, value, cell.get("s"))
        cell.insert(0, f)
    return change


CASES = {  # id: (where, change, words the one error says)
    "currency rate 0": (_named("USD_rate"), _constant(0.0), ("USD_rate must be > 0", "got 0")),
    "currency rate -1": (_named("USD_rate"), _constant(-1.0), ("USD_rate must be > 0", "got -1")),
    "currency rate as text": (_named("USD_rate"), _constant("abc"), ("USD_rate", "'abc'")),
    "plan utilization as the text 40%": (_plan("utilization"), _constant("40%"), ("'40%'", "prior")),
    "plan utilization as 40": (_plan("utilization"), _constant(40.0), ("must be in (0, 1]", "got 40", "40%")),
    "plan utilization blank": (_plan("utilization"), _constant(None), ("blank", "prior")),
    "plan price names no provider": (_plan("price"), _constant("nosuch:spot"), ("'nosuch:spot'", "provider")),
    "plan PUE 0.5": (_plan("pue"), _constant(0.5), ("PUE must be >= 1", "got 0.5")),
    "plan params -7E9": (_plan("params"), _constant(-7e9), ("must be > 0", "got -7000000000")),
    "plan active params -2E9": (_plan("active_params"), _constant(-2e9), ("Active parameters", "must be > 0")),
    "plan active params over params": (_plan("active_params"), _constant(9e9),
                                       ("Active parameters", "9e+09 is more than the plan's parameters 7e+09")),
    "budget price -2.5": (_budget("usd_per_device_hour"), _constant(-2.5), ("must be >= 0", "got -2.5")),
    "budget params -7E9": (_budget("params"), _constant(-7e9), ("Model parameters must be > 0",)),
    "budget active params -2E9": (_budget("active_params"), _constant(-2e9), ("Active parameters", "must be > 0")),
    "budget active params over params": (_budget("active_params"), _constant(9e12),
                                         ("Active parameters", "9e+12 is more than the model parameters")),
    "budget PUE 0.5": (_budget("pue"), _constant(0.5), ("PUE must be >= 1", "got 0.5")),
    "budget utilization 40": (_budget("utilization"), _constant(40.0), ("must be in (0, 1]", "40%")),
    "budget ZeRO stage 4": (_budget("zero_stage"), _constant(4.0), ("ZeRO stage must be 0, 1, 2 or 3",)),
    "budget method typo": (_budget("method"), _constant("ful"), ("must be one of", "'ful'")),
    "budget device blank": (_budget("device"), _constant(None), ("Device is blank",)),
    "provider not in Prices": (_named("Provider"), _constant("nosuch"), ("'nosuch' is not in the Prices",)),
    "step flash attention as text": (_named("Step_flash"), _constant("no"), ("Flash attention", "TRUE or FALSE",
                                                                           "'no'")),
    "step recompute typo": (_named("Step_recompute"), _constant("fulll"), ("Recompute must be one of", "'fulll'")),
    "step batch 2.5": (_named("Step_batch"), _constant(2.5), ("Global batch (sequences)", "2.5")),
    "Prices price -2.5": (_price_cell(), _constant(-2.5), ("must be >= 0", "got -2.5")),
    "Devices name as =HYPERLINK": (("Devices", "A5"), _formula('HYPERLINK("http://evil.example","H100")', "H100"),
                                   ("live formula", "HYPERLINK")),
    "path-style external reference": (("About", "A3"), _formula("'C:\\evil\\[book.xlsx]Sheet1'!A1", 2.0),
                                      ("refers to another workbook", "evil")),
    "unknown function": (("About", "A3"), _formula('TRAIN_HOURZ(7E9,1E12,"H100")', 11.79),
                         ("TRAIN_HOURZ", "neither an Excel function")),
}


@pytest.mark.parametrize("case", CASES)
def test_one_bad_input_is_one_error_at_its_cell(copy, case):
    (sheet, ref), change, words = CASES[case]
    path = copy()
    edit_cell(path, sheet, ref, change)
    problems = verify.errors(verify.verify(path, recalc=False))
    assert [p.where for p in problems] == [f"{sheet}!{ref}"], problems
    assert all(w in problems[0].message for w in words), problems[0].message
    proc = invoke("verify", str(path), "--no-recalc")
    assert proc.returncode == 1 and f"{sheet}!{ref}: " in proc.stdout, proc.stdout + proc.stderr


def test_a_blank_flash_attention_is_calcs_default_not_a_problem(copy):
    """The step block reads a blank flash attention as TRUE, as TRAIN_STEP reads an omitted one; a blank
    sequence length beside it is still one."""
    path = copy()
    edit_cell(path, *_named("Step_flash"), _constant(None))
    assert verify.errors(verify.verify(path, recalc=False)) == []
    edit_cell(path, *_named("Step_seq_len"), _constant(None))
    problems = verify.errors(verify.verify(path, recalc=False))
    assert [p.where for p in problems] == ["!".join(_named("Step_seq_len"))], problems


def test_a_layout_the_step_model_refuses_is_a_warning_and_its_na_by_design(copy):
    """One device under the layout block's default TP 2: calc's step model refuses the step block's layout,
    so its step seconds and whole run are #N/A by design (LibreOffice recalculates them so here). verify
    warns once, at the check, naming the Devices, and counts none of those #N/A as errors: the budget
    itself (the ranges on the published runs) is valid, and exits 0."""
    path = copy()
    edit_cell(path, *_budget("devices"), _constant(1.0))
    edit_cell(path, *_named("Range_layout_ok"), _cached(False))  # as Excel would have saved it
    found = verify.verify(path, recalc=True)
    assert verify.errors(found) == [], found
    warned = [p for p in found if p.severity == "warning"]
    assert [p.where for p in warned] == ["!".join(_named("Range_layout_ok"))], found
    assert "refuses the step block's layout" in warned[0].message and "Devices" in warned[0].fix
    proc = invoke("verify", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_template_inputs_are_clean(built):
    values = __import__("openpyxl").load_workbook(built.path, data_only=True)
    from trainbudget.addin.verify import inputs

    assert inputs.budget(values, verify.template_names()) == []
    assert inputs.plans(values) == [] and inputs.prices(values, __import__("openpyxl").load_workbook(built.path)) == []
    assert set(verify.template_names()) >= set(inputs.CURRENCY_NAMES)


def _with_external_link(path: Path, rels: bool) -> None:
    """An external-link part as Excel writes one (workbook relationship, content type,
    externalReferences), optionally without the part's own relationships."""
    parts = package.read_parts(path)
    changed = {"xl/externalLinks/externalLink1.xml": (
        f'<externalLink xmlns="{MAIN}" xmlns:r="{R}"><externalBook r:id="rId1"><sheetNames><sheetName val="S"/>'
        '</sheetNames></externalBook></externalLink>').encode()}
    if rels:
        changed["xl/externalLinks/_rels/externalLink1.xml.rels"] = (
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship '
            f'Id="rId1" Type="{R}/externalLinkPath" Target="file:///C:/evil/book.xlsx" TargetMode="External"/>'
            "</Relationships>").encode()
    changed["xl/_rels/workbook.xml.rels"] = parts["xl/_rels/workbook.xml.rels"].replace(
        b"</Relationships>", f'<Relationship Id="rIdLink" Type="{R}/externalLink" '
                             'Target="externalLinks/externalLink1.xml"/></Relationships>'.encode())
    changed["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(
        b"</Types>", b'<Override PartName="/xl/externalLinks/externalLink1.xml" ContentType="application/'
                     b'vnd.openxmlformats-officedocument.spreadsheetml.externalLink+xml"/></Types>')
    changed["xl/workbook.xml"] = parts["xl/workbook.xml"].replace(
        b"</sheets>", f'</sheets><externalReferences><externalReference xmlns:r="{R}" r:id="rIdLink"/>'
                      "</externalReferences>".encode())
    package.write_parts(path, path, changed)


@pytest.mark.parametrize("rels", [True, False], ids=["with its target", "its relationships missing"])
def test_an_external_link_part_is_a_finding_not_unreadable(copy, rels):
    path = copy()
    _with_external_link(path, rels)
    proc = invoke("verify", str(path), "--no-recalc", "--json")
    assert proc.returncode == 1, proc.stderr
    found = [p for p in json.loads(proc.stdout) if p["severity"] == "error"]
    assert [p["where"] for p in found] == ["xl/externalLinks/externalLink1.xml"]
    assert "link to another workbook" in found[0]["message"]
    assert ("C:/evil/book.xlsx" in found[0]["message"]) == rels
