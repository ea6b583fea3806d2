"""A C-speed pass over a worksheet part's bytes that proves a sheet has nothing for verify's cell
pass to find (a 1,100,000-row sheet in seconds, not a minute of per-row Python).

verify's streamed pass (check._results) reports a formula's text (formula_text: DDE, another
workbook, an unknown function: each needs one of "(", "|", "[" or "'" in the text), a formula cell
without a cached value, and a cached result that is an error ("#..." or "Err:..."). Every one is
inside <sheetData>. A sheet is *plain* when regular expressions over that element's bytes show
none can be there: no formula text holds one of those characters (nor a character reference or
&apos; that could spell one), every formula element is directly followed by a non-empty cached
value (CT_Cell's children come in the order f, v: ECMA-376 Part 1 §18.3.1.4), and no value starts
with "#", "Err:" or a character reference. A sheet in any doubt (CDATA, a prefixed element, a
namespace declared inside sheetData, a <v> with attributes, counts that differ) is streamed cell
by cell as before, so no finding is lost: this pass can only say "nothing here".
"""

from __future__ import annotations

import re
from collections.abc import Iterator

PIECE = 2 << 20  # bytes searched at a time; a piece ends at a row's end, so no cell is cut
_PREFIXED = re.compile(rb":(?:f|v|c|is|row)[\s/>]")  # a prefixed cell element: read element by element
_V_ATTRS = re.compile(rb"<v\s")  # a value element with attributes (xml:space, a namespace)
_ERROR_SIGN = re.compile(rb"<v>(?:#|Err:|&)")  # a cached value that reads (or may read) as an error
_F_TEXT = re.compile(rb"<f(?:\s[^>]*)?>([^<]*)</f>")  # a formula element's text
_F_CACHED = re.compile(rb"<f(?:\s[^>]*)?(?:/>|>[^<]*</f>)<v>[^<]")  # one directly followed by a value
_NEEDLES = (b"(", b"|", b"[", b"'", b"&#", b"&apos;")  # what formula_text looks for (or may spell it)


def _sheet_data(data: bytes) -> tuple[int, int] | None:
    """Where the part's one <sheetData> element lies (None: none, several, or prefixed)."""
    start = data.find(b"<sheetData")
    if start < 0 or data.find(b"<sheetData", start + 1) >= 0 or b":sheetData" in data:
        return None
    end = data.find(b"</sheetData>", start)
    return start, len(data) if end < 0 else end


def _pieces(data: bytes, start: int, stop: int) -> Iterator[bytes]:
    while start < stop:
        end = data.find(b"</row>", start + PIECE, stop)
        end = stop if end < 0 else end + len(b"</row>")
        yield data[start:end]
        start = end


def plain(data: bytes, values: bool = True) -> bool:
    """Whether worksheet part `data` (already checked well-formed by the package layer) can hold
    no finding of verify's cell pass: in its formula texts, and with `values` in its cached values."""
    where = _sheet_data(data)
    if where is None:
        return False
    for piece in _pieces(data, *where):
        if b"<![CDATA[" in piece or b"xmlns" in piece or _PREFIXED.search(piece) or _V_ATTRS.search(piece):
            return False
        if values and _ERROR_SIGN.search(piece):
            return False
        texts = b"\n".join(_F_TEXT.findall(piece))
        if any(n in texts for n in _NEEDLES):
            return False
        # every "<f" (a formula element, or a rich text's <family>: then in doubt) is one with a value
        if values and piece.count(b"<f") != len(_F_CACHED.findall(piece)):
            return False
    return True
