"""Chart caches refreshed from recalculated values, so viewers that do not compute draw the chart."""

from __future__ import annotations

import re
from typing import Any

from openpyxl.utils import range_boundaries
from openpyxl.utils.cell import get_column_letter

from ..ooxml.xmlcells import escape

_REF = re.compile(r"<(?P<p>\w+:)?(?P<kind>numRef|strRef)>\s*<(?P=p)?f>(?P<f>[^<]*)</(?P=p)?f>"
                  r"(?P<cache>\s*<(?P=p)?(?:numCache|strCache)>.*?</(?P=p)?(?:numCache|strCache)>)?", re.S)


def _cells(formula: str, values: Any) -> list[Any] | None:
    """The values of a chart's single-range reference ('Sheet'!$A$1:$A$9), or None."""
    m = re.fullmatch(r"'?(.+?)'?!(\$?[A-Z]+\$?\d+(?::\$?[A-Z]+\$?\d+)?)", formula.strip())
    if not m or m.group(1) not in values.sheetnames:
        return None
    ws = values[m.group(1)]
    lo_c, lo_r, hi_c, hi_r = range_boundaries(m.group(2).replace("$", ""))
    return [ws[f"{get_column_letter(c)}{r}"].value for r in range(lo_r, hi_r + 1) for c in range(lo_c, hi_c + 1)]


def _cache(prefix: str, kind: str, old: str, cells: list[Any]) -> str:
    p = prefix or ""
    if kind == "numRef":
        fmt = re.search(rf"<{p}formatCode>.*?</{p}formatCode>", old or "", re.S)
        pts = "".join(f'<{p}pt idx="{i}"><{p}v>{float(v)!r}</{p}v></{p}pt>' for i, v in enumerate(cells)
                      if isinstance(v, (int, float)) and not isinstance(v, bool))
        head = fmt.group(0) if fmt else f"<{p}formatCode>General</{p}formatCode>"
        return f'<{p}numCache>{head}<{p}ptCount val="{len(cells)}"/>{pts}</{p}numCache>'
    pts = "".join(f'<{p}pt idx="{i}"><{p}v>{escape(str(v))}</{p}v></{p}pt>' for i, v in enumerate(cells)
                  if v not in (None, ""))
    return f'<{p}strCache><{p}ptCount val="{len(cells)}"/>{pts}</{p}strCache>'


def refresh(chart_xml: str, values: Any) -> str:
    """`chart_xml` with every single-range series cache rebuilt from `values` (an openpyxl workbook)."""
    def fix(m: re.Match) -> str:
        cells = _cells(m.group("f"), values)
        if cells is None:
            return m.group(0)
        p = m.group("p") or ""
        head = m.group(0)[: m.start("cache") - m.start(0)] if m.group("cache") else m.group(0)
        return head + _cache(p, m.group("kind"), m.group("cache"), cells)
    return _REF.sub(fix, chart_xml)
