"""The printed budget as LibreOffice prints it: `trainbudget export --pdf` (Summary, then the Budget's
detail), on A4 and on Letter. Page 1 is the Summary alone, its text 9 pt and up (notes are 9 pt on
the sheet, printed at 100%: nothing under 8 pt); the Budget's detail follows on at most two pages.

Font sizes are read from poppler's word boxes (`pdftotext -bbox`): a word's box is its font's ascent
plus descent, 1.3 times the size for Carlito, the metric twin of Calibri that LibreOffice prints
(measured: the 16-pt title's box is 20.8 pt tall, an 11-pt label's 14.3 pt)."""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.conftest import run_cli
from trainbudget.addin.export import mailcopy
from trainbudget.addin.template import budget_sheet, summary_sheet

BOX_PER_POINT = 1.3  # Carlito's ascent + descent per point of size (module docstring)
PAPERS = {"A4": 9, "Letter": 1}  # ECMA-376 Part 1, 18.3.1.63 pageSetup paperSize
_WORD = re.compile(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>')


def _with_paper(copy: Path, out: Path, paper: int) -> Path:
    """`copy` with every sheet's paper size set to `paper` (the reader's printer setting)."""
    with zipfile.ZipFile(copy) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.startswith("xl/worksheets/sheet"):
                text = re.sub(r'\s*paperSize="\d+"', "", data.decode())
                data = text.replace("<pageSetup", f'<pageSetup paperSize="{paper}"').encode()
            dst.writestr(item, data)
    return out


@pytest.fixture(scope="module")
def printed(built, soffice, tmp_path_factory):
    """One LibreOffice export through the CLI (the copy and its default PDF), then one PDF per paper size."""
    if not (shutil.which("pdftotext") and shutil.which("pdfinfo")):
        pytest.fail("poppler-utils (pdftotext, pdfinfo) are not installed")
    tmp = tmp_path_factory.mktemp("printed")
    run_cli("export", str(built.path), "--out", str(tmp / "copy.xlsx"), "--pdf", str(tmp / "default.pdf"),
            check=True)
    pdfs = {"default": tmp / "default.pdf"}
    for name, paper in PAPERS.items():
        variant = _with_paper(tmp / "copy.xlsx", tmp / f"{name}.xlsx", paper)
        pdfs[name] = mailcopy.print_pdf(variant, tmp / f"{name}.pdf", list(mailcopy.PRINTED))
    return pdfs


def _info(pdf: Path) -> dict[str, str]:
    out = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return dict(line.split(":", 1) for line in out.splitlines() if ":" in line)


def _words(pdf: Path, page: int) -> list[tuple[str, float, float]]:
    """(word, size in points, top) on `page`."""
    xml = subprocess.run(["pdftotext", "-bbox", "-f", str(page), "-l", str(page), str(pdf), "-"],
                         capture_output=True, text=True, check=True).stdout
    return [(m[4], (float(m[3]) - float(m[1])) / BOX_PER_POINT, float(m[1])) for m in _WORD.findall(xml)]


def _page_height(pdf: Path) -> float:
    return float(_info(pdf)["Page size"].split("x")[1].split()[0])


@pytest.mark.parametrize("paper", PAPERS)
def test_paper_size_is_the_readers(printed, paper):
    width = float(_info(printed[paper])["Page size"].split("x")[0])
    assert abs(width - {"A4": 595.3, "Letter": 612.0}[paper]) < 1, (paper, width)


@pytest.mark.parametrize("paper", ["default", *PAPERS])
def test_summary_then_at_most_two_detail_pages(printed, paper):
    pages = int(_info(printed[paper])["Pages"])
    assert 2 <= pages <= 1 + budget_sheet.DETAIL_PAGES, pages
    first = " ".join(w for w, *_ in _words(printed[paper], 1))
    assert summary_sheet.TITLE in first and "Approved by" in first and "Inputs" not in first.split()
    assert "Training budget" in " ".join(w for w, *_ in _words(printed[paper], 2))  # the Budget's title
    assert "Input checks" not in subprocess.run(["pdftotext", str(printed[paper]), "-"], capture_output=True,
                                                 text=True, check=True).stdout  # the rule labels: unprinted


@pytest.mark.parametrize("paper", ["default", *PAPERS])
def test_page_one_prints_nine_points_and_notes_eight(printed, paper):
    """Every word on page 1 is 8 pt or more (notes) and every word above the footer of the figures
    and labels is 9 pt or more: the sheet's smallest font is 9 pt, so nothing was shrunk."""
    pdf = printed[paper]
    words = _words(pdf, 1)
    footer = _page_height(pdf) * 0.9
    body = [(w, size) for w, size, top in words if top < footer]
    assert len(body) > 100
    assert min(size for _, size in body) >= 8.0
    small = [(w, round(size, 1)) for w, size in body if size < 9.0 - 0.05]
    assert not small, small[:10]
    cost = [size for w, size, _ in words if w == "budget"]
    assert cost and min(cost) >= 9.0


def test_page_one_shows_the_cost_to_budget_as_cached(printed, built):
    """The figures printed are the Summary's (the cost to budget and its band, the typed cost)."""
    values = built.values["Summary"]
    text = subprocess.run(["pdftotext", "-layout", "-f", "1", "-l", "1", str(printed["A4"]), "-"],
                          capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in text.splitlines() if "Cost to budget (expected)" in ln)
    row = next(ref for ref, v in values.items() if str(v).startswith("Cost to budget (expected)"))[1:]
    assert [f"{round(values[f'{c}{row}']):,}" for c in "BCD"] == line.split()[-3:]
    assert "Cost at typed utilization" in text
