"""The e-mail copy's tab order, so that a program that does not recalculate on open shows the
cached values.

Gnumeric (`ssconvert` without `--recalc`, and the Gnumeric window) keeps the cached value of a
formula cell, except where that value is an empty string (`<c t="str"><f>..</f><v/></c>`, how
Excel and LibreOffice save a formula whose result is ""): such a cell is computed while the file
loads, sheet by sheet. A Budget cell cached as "" that reads the Devices sheet (the input check
`MATCH(Device,DeviceNames,0)`) was computed before Devices was loaded, so it read an empty list
and showed "#VALUE! device must be a Name of the Devices sheet", and every result reading it
followed (64 cells of the template's copy). Measured with Gnumeric 1.12.55: with the sheets that
hold such cells placed after the sheets they read, every formula cell of the copy shows its
cached value unrecalculated, and the recalculated values are unchanged.

So the copy lists first the sheets with no formula cached as "" (Devices, Runs, Functions,
About, Prices) and then the sheets with them (Budget, Scenarios), each group in the workbook's
order, and opens on the sheet the workbook opened on (Budget).
"""

from __future__ import annotations

import re

from lxml import etree

from ..ooxml import package, partedit, xmlcells

# a formula cell of type str whose cached value is empty: <c ... t="str" ...><f ...>...</f><v/></c>
_EMPTY_TEXT = re.compile(rb'<c\b[^>]*\bt="str"[^>]*>\s*<f\b[^>]*(?:/>|>[^<]*</f>)\s*<v\s*(?:/>|>\s*</v>)')


def computed_on_load(data: bytes) -> bool:
    """Whether a worksheet part holds a formula cell cached as "" (which Gnumeric computes on load)."""
    return _EMPTY_TEXT.search(data) is not None


def readers_last(parts: dict[str, bytes]) -> list[str]:
    """Reorder the workbook's tabs (in place): sheets with formula cells cached as "" after the
    others (this module's docstring; each part is searched as bytes, never parsed).
    Defined names local to a sheet, and the tab the workbook opens on, follow their sheets.
    Returns the new order of sheet names."""
    by_part = package.sheet_parts(parts)
    late = {s for s, part in by_part.items() if computed_on_load(parts[part])}
    order = [s for s in by_part if s not in late] + [s for s in by_part if s in late]
    if order == list(by_part):
        return order

    def fn(wb: etree._Element) -> None:
        els = partedit.sheet_elements(wb)
        old = [el.get("name") for el in els]
        new_index = {i: order.index(name) for i, name in enumerate(old)}
        parent = els[0].getparent()
        for el in els:
            parent.remove(el)
        for name in order:
            parent.append(els[old.index(name)])
        for dn in wb.iter(xmlcells.q(wb, "definedName")):
            if dn.get("localSheetId") is not None and dn.get("localSheetId").isdigit():
                dn.set("localSheetId", str(new_index.get(int(dn.get("localSheetId")), int(dn.get("localSheetId")))))
        for view in wb.iter(xmlcells.q(wb, "workbookView")):
            active = int(view.get("activeTab", "0")) if view.get("activeTab", "0").isdigit() else 0
            view.set("activeTab", str(new_index.get(active, 0)))
            view.attrib.pop("firstSheet", None)
    partedit.change(parts, partedit.WB, fn)
    return order
