"""Cells of a worksheet part read as a stream (lxml iterparse), in constant memory.

verify reads every cell of every sheet (cached values, formula text) without building a tree or
loading the sheet through openpyxl: each <c> is read when its end tag arrives and then cleared
with the rows before it, so a 1,048,576-row sheet costs the size of one row. The parser is set
up as safexml's (no entities, no network, no DTD, libxml2's default limits), and a DOCTYPE is
refused the same way (ECMA-376 Part 2 forbids DTDs in package XML).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import NamedTuple

from lxml import etree

from .safexml import BadWorkbookError, _one_line

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
STRICT = "http://purl.oclc.org/ooxml/spreadsheetml/main"


class Cell(NamedTuple):
    """One cell as stored: reference, type attribute (t), formula text (None: no formula; '' for a
    shared formula's follower), cached value text (None: none), and the shared formula's index (si)."""

    ref: str
    type: str
    formula: str | None
    value: str | None
    shared: str | None = None

    @property
    def has_formula(self) -> bool:
        return self.formula is not None


def _events(name: str, data: bytes, tags: tuple[str, ...]) -> Iterator[tuple[str, etree._Element]]:
    context = etree.iterparse(io.BytesIO(data), events=("end",), tag=tags, resolve_entities=False,
                              no_network=True, load_dtd=False, huge_tree=False, remove_blank_text=False)
    try:
        for _, el in context:
            yield etree.QName(el).localname, el
    except etree.XMLSyntaxError as e:
        raise BadWorkbookError(f"part {name} is not well-formed XML ({_one_line(e)})") from None
    root = getattr(context, "root", None)
    info = root.getroottree().docinfo if root is not None else None
    if info is not None and (info.doctype or info.internalDTD is not None):
        raise BadWorkbookError(f"part {name} declares a DOCTYPE (entities or DTDs are never in a workbook; "
                               "refused as unsafe)")


def cells(name: str, data: bytes) -> Iterator[Cell]:
    """Every <c> of worksheet part `name` (`data`), in document order."""
    tags = tuple(f"{{{ns}}}{local}" for ns in (MAIN, STRICT) for local in ("c", "row"))
    for local, el in _events(name, data, tags):
        if local == "row":
            el.clear(keep_tail=False)
            while el.getprevious() is not None:
                del el.getparent()[0]
            continue
        f = v = si = None
        for child in el:
            tag = etree.QName(child).localname
            if tag == "f":
                f, si = child.text or "", child.get("si") if child.get("t") == "shared" else None
            elif tag == "v":
                v = child.text
            elif tag == "is":  # an inline string's text
                v = "".join(t.text or "" for t in child.iter(f"{{{etree.QName(child).namespace}}}t"))
        yield Cell(el.get("r", "?"), el.get("t", "n"), f, v, si)


def check(name: str, data: bytes) -> None:
    """Raise BadWorkbookError unless part `name` is well-formed XML without a DOCTYPE; parsed as a
    stream (elements cleared as they end), so a large part costs no tree."""
    for _, el in _events(name, data, ()):
        el.clear(keep_tail=False)
        while el.getprevious() is not None:
            del el.getparent()[0]
