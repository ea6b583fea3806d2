"""Chart caches refreshed from recalculated values, so viewers that do not compute draw the chart.

Only the `numCache`/`strCache` of each single-range series reference is rebuilt (lxml, by
namespace); everything else of the chart part (axes with their `<c:delete val="0"/>`, styles,
the writer's prefixes) stays. A reference is clamped to the sheet's used range, so a series over
`$A$1:$XFD$1048576` reads the cells that exist, not 17 billion.
"""

from __future__ import annotations

from typing import Any

from lxml import etree
from openpyxl.utils import range_boundaries

from ..ooxml import package

C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
MAX_POINTS = 1_000_000  # a larger series keeps the cache its writer saved


def _cells(formula: str, values: Any) -> list[Any] | None:
    """The values of a chart's single-range reference ('Sheet'!$A$1:$A$9), or None."""
    sheet, bang, rng = formula.strip().rpartition("!")
    if not bang or sheet.startswith("("):
        return None
    if sheet.startswith("'") and sheet.endswith("'"):
        sheet = sheet[1:-1].replace("''", "'")
    if sheet not in values.sheetnames:
        return None
    try:
        lo_c, lo_r, hi_c, hi_r = range_boundaries(rng.replace("$", ""))
    except (ValueError, TypeError):
        return None
    ws = values[sheet]
    hi_c, hi_r = min(hi_c or lo_c, ws.max_column), min(hi_r or lo_r, ws.max_row)
    if hi_c < lo_c or hi_r < lo_r:
        return []
    if (hi_c - lo_c + 1) * (hi_r - lo_r + 1) > MAX_POINTS:  # formatted rows can make the used range huge too
        return None
    return [v for row in ws.iter_rows(min_row=lo_r, max_row=hi_r, min_col=lo_c, max_col=hi_c, values_only=True)
            for v in row]


def _rebuild(ref: etree._Element, cells: list[Any]) -> None:
    numeric = etree.QName(ref).localname == "numRef"
    kind = f"{{{C}}}{'numCache' if numeric else 'strCache'}"
    old = ref.find(kind)
    fmt = old.find(f"{{{C}}}formatCode") if old is not None else None
    cache = etree.SubElement(ref, kind)
    if old is not None:
        old.addprevious(cache)
        ref.remove(old)
    if numeric:
        etree.SubElement(cache, f"{{{C}}}formatCode").text = fmt.text if fmt is not None else "General"
    etree.SubElement(cache, f"{{{C}}}ptCount", val=str(len(cells)))
    for i, v in enumerate(cells):
        if numeric and not (isinstance(v, (int, float)) and not isinstance(v, bool)):
            continue
        if not numeric and v in (None, ""):
            continue
        pt = etree.SubElement(cache, f"{{{C}}}pt", idx=str(i))
        etree.SubElement(pt, f"{{{C}}}v").text = repr(float(v)) if numeric else str(v)


def refresh(chart_xml: bytes, values: Any, name: str = "chart") -> bytes:
    """`chart_xml` with every single-range series cache rebuilt from `values` (an openpyxl workbook)."""
    def change(root: etree._Element) -> None:
        for ref in [*root.iter(f"{{{C}}}numRef"), *root.iter(f"{{{C}}}strRef")]:
            f = ref.find(f"{{{C}}}f")
            cells = _cells(f.text or "", values) if f is not None else None
            if cells is not None:
                _rebuild(ref, cells)
    return package.edit(name, chart_xml, change)
