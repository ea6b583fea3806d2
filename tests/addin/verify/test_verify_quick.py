"""verify's C-speed pass (verify.quick): a sheet it calls plain is skipped, so it may call
a sheet plain only when the cell-by-cell stream finds nothing there. Each case: one sheet, and
the findings of check._results with the quick pass equal those without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainbudget.addin.verify import check, quick

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
PART = "xl/worksheets/s.xml"


def _sheet(cells: str, root_attrs: str = "", prefix: str = "") -> bytes:
    p = f"{prefix}:" if prefix else ""
    xmlns = f'xmlns:{prefix}="{MAIN}"' if prefix else f'xmlns="{MAIN}"'
    return (f'<?xml version="1.0" encoding="UTF-8"?><{p}worksheet {xmlns} {root_attrs}><{p}sheetData>'
            f'<{p}row r="1"><{p}c r="A1"><{p}v>2</{p}v></{p}c>{cells}</{p}row>'
            f"</{p}sheetData></{p}worksheet>").encode()


# (intent, cells of row 1 after A1, whether the quick pass may skip it)
CASES = [
    ("arithmetic formulas with cached values: plain", '<c r="B1"><f>A1*2</f><v>4</v></c>', True),
    ("a shared formula and its follower, cached: plain",
     '<c r="B1"><f t="shared" ref="B1:C1" si="0">A1*2</f><v>4</v></c><c r="C1"><f t="shared" si="0"/><v>4</v></c>',
     True),
    ("a constant text cell with parentheses (not a formula): plain",
     '<c r="B1" t="inlineStr"><is><t>run (1)</t></is></c><c r="C1"><f>A1</f><v>2</v></c>', True),
    ("a formula without a cached value", '<c r="B1"><f>A1*2</f></c>', False),
    ("a formula with an empty cached value", '<c r="B1"><f>A1*2</f><v></v></c>', False),
    ("a follower without a cached value", '<c r="B1"><f t="shared" ref="B1:C1" si="0">A1*2</f><v>4</v></c>'
                                          '<c r="C1"><f t="shared" si="0"/></c>', False),
    ("a cached error", '<c r="B1" t="e"><f>A1/0</f><v>#DIV/0!</v></c>', False),
    ("a cached error typed as text", '<c r="B1" t="str"><f>A1</f><v>#N/A</v></c>', False),
    ("LibreOffice's Err: code", '<c r="B1" t="str"><f>A1</f><v>Err:502</v></c>', False),
    ("an error spelled with a character reference", '<c r="B1" t="e"><f>A1/0</f><v>&#35;DIV/0!</v></c>', False),
    ("an error value with xml:space", '<c r="B1" t="e"><f>A1/0</f><v xml:space="preserve">#NUM!</v></c>', False),
    ("DDE", "<c r=\"B1\"><f>cmd|'/c calc'!A0</f><v>0</v></c>", False),
    ("another workbook by number", '<c r="B1"><f>[1]Sheet1!A1</f><v>0</v></c>', False),
    ("another workbook by path", "<c r=\"B1\"><f>'C:\\evil\\[book.xlsx]Sheet1'!A1</f><v>0</v></c>", False),
    ("an unknown function", '<c r="B1"><f>TRAIN_HOURZ(1)</f><v>11.79</v></c>', False),
    ("an unknown function spelled with character references",
     '<c r="B1"><f>TRAIN_HOURZ&#40;1)</f><v>11.79</v></c>', False),
    ("a formula in CDATA", "<c r=\"B1\"><f><![CDATA[cmd|'/c calc'!A0]]></f><v>0</v></c>", False),
    ("a formula with an inline text result (no finding, not plain)",
     '<c r="B1" t="inlineStr"><f>A1</f><is><t>x</t></is></c>', False),
    ("an uncached text formula (no finding, not plain)", '<c r="B1" t="str"><f>A1</f><v></v></c>', False),
    ("an uncached formula beside a stray value", '<c r="B1"><f>A1*2</f></c><c r="C1"/><v>1</v>', False),
    ("a cell in another namespace (no finding, not plain)", '<c r="B1" xmlns="urn:other"><f>A1</f></c>', False),
    ("a rich text run's <family> (counted as a formula: no finding, not plain)",
     '<c r="B1" t="inlineStr"><is><r><rPr><family val="2"/></rPr><t>x</t></r></is></c>', False),
]


def _findings(data: bytes, values: bool = True) -> list:
    return check._results(Path("unused.xlsx"), {PART: data}, {"S": PART}, False, values=values)


@pytest.mark.parametrize("values", [True, False], ids=["values", "texts only"])
@pytest.mark.parametrize(("intent", "cells", "skipped"), CASES, ids=[c[0] for c in CASES])
def test_quick_pass_loses_no_finding(intent, cells, skipped, values, monkeypatch):
    data = _sheet(cells)
    with_quick, plain = _findings(data, values), quick.plain(data, values)
    monkeypatch.setattr(quick, "plain", lambda *a, **k: False)
    assert with_quick == _findings(data, values)
    if skipped:
        assert plain
    elif values:
        assert not plain


def test_every_not_plain_case_but_the_harmless_has_a_finding(monkeypatch):
    monkeypatch.setattr(quick, "plain", lambda *a, **k: False)
    for intent, cells, skipped in CASES:
        assert bool(_findings(_sheet(cells))) is not (skipped or "no finding" in intent), intent


def test_prefixed_sheet_is_streamed():
    data = _sheet('<x:c r="B1"><x:f>A1*2</x:f></x:c>', prefix="x")
    assert not quick.plain(data) and len(_findings(data)) == 1


def test_a_finding_in_a_later_piece_is_kept(monkeypatch):
    rows = "".join(f'<row r="{r}"><c r="A{r}"><f>B{r}*2</f><v>4</v></c></row>' for r in range(2, 400))
    bad = '<row r="400"><c r="A400"><f>B400*2</f></c></row>'
    data = _sheet("").replace(b"</sheetData>", (rows + bad).encode() + b"</sheetData>")
    monkeypatch.setattr(quick, "PIECE", 256)
    assert not quick.plain(data)
    assert [p.where for p in _findings(data)] == ["S!A400"]
    assert quick.plain(data.replace(bad.encode(), b""))
