"""Safe parsing of untrusted XML parts, and the one error type for a workbook file that is wrong.

Workbooks arrive by e-mail and from shared drives, so every part is parsed with lxml set up for
untrusted input: no entity resolution (billion laughs, external entities), no network, no DTD
loading, libxml2's default tree limits (huge_tree=False). A part holding any DOCTYPE is refused:
the Open Packaging Conventions (ECMA-376 Part 2, XML usage requirements) forbid DTD declarations
in package XML and tell consumers to treat one as an error, so one is a sign of an attack or a
broken writer, never of a real workbook.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from lxml import etree

from ... import calc


class BadWorkbookError(calc.TrainingBudgetError):
    """A workbook file that cannot be used: its message names the file and says what is wrong."""


_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False,
                          dtd_validation=False, remove_blank_text=False)


def parse(name: str, data: bytes, where: str = "") -> etree._Element:
    """The root element of part `name`; BadWorkbookError for a DOCTYPE or XML that does not parse.

    `where` (usually the file's path) prefixes the message.
    """
    prefix = f"{where}: " if where else ""
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as e:
        raise BadWorkbookError(f"{prefix}part {name} is not well-formed XML ({_one_line(e)})") from None
    info = root.getroottree().docinfo
    if info.doctype or info.internalDTD is not None or info.externalDTD is not None:
        raise BadWorkbookError(f"{prefix}part {name} declares a DOCTYPE (entities or DTDs are never in a "
                               "workbook; refused as unsafe)")
    return root


STREAM_BYTES = 1 << 20  # a larger part is checked streaming (check), so its tree is never held whole
_STREAMED = ["{*}row", "{*}si", "{*}r"]  # the elements a large part has many of, freed as they are read


def check(name: str, data: bytes, where: str = "") -> None:
    """`parse`'s checks on part `name` without keeping its tree: the same parser settings, read
    as a stream of elements, each freed once read (a million-row sheet in constant memory)."""
    if len(data) <= STREAM_BYTES:
        parse(name, data, where)
        return
    prefix = f"{where}: " if where else ""
    events = etree.iterparse(io.BytesIO(data), events=("end",), tag=_STREAMED, resolve_entities=False,
                             no_network=True, huge_tree=False, load_dtd=False, dtd_validation=False)
    try:
        for _, el in events:  # rows of a sheet, strings of the string table, records of a pivot cache
            el.clear(keep_tail=True)
            while el.getprevious() is not None:
                del el.getparent()[0]
    except etree.XMLSyntaxError as e:
        raise BadWorkbookError(f"{prefix}part {name} is not well-formed XML ({_one_line(e)})") from None
    info = events.root.getroottree().docinfo
    if info.doctype or info.internalDTD is not None or info.externalDTD is not None:
        raise BadWorkbookError(f"{prefix}part {name} declares a DOCTYPE (entities or DTDs are never in a "
                               "workbook; refused as unsafe)")


def serialize(root: etree._Element | etree._ElementTree, original: bytes | None = None,
              standalone: bool | None = None) -> bytes:
    """The part's bytes, every prefix and declaration kept. With `original` (the bytes the part was
    parsed from) its XML declaration and what followed it are written back as they were (none if
    it had none); without, a UTF-8 declaration keeping the tree's `standalone` (or `standalone`
    given here: a new part says standalone="yes" as Excel's own do)."""
    if isinstance(root, etree._ElementTree):
        root = root.getroot()
    info = root.getroottree().docinfo
    if original is not None:
        body = etree.tostring(root, encoding=info.encoding or "UTF-8", xml_declaration=False)
        if not original.lstrip().startswith(b"<?xml"):
            return body
        end = original.index(b"?>") + 2
        gap = len(original[end:]) - len(original[end:].lstrip())
        return original[:end + gap] + body
    said = {True: ' standalone="yes"', False: ' standalone="no"'}.get(
        info.standalone if standalone is None else standalone, "")
    head = f'<?xml version="1.0" encoding="UTF-8"{said}?>\r\n'.encode()
    return head + etree.tostring(root, encoding="UTF-8", xml_declaration=False)


def edit(name: str, data: bytes, change: Callable[[etree._Element], Any], where: str = "") -> bytes:
    """Part `name` (`data`) parsed safely, changed in place by `change(root)`, serialized with its
    own declaration."""
    root = parse(name, data, where)
    change(root)
    return serialize(root, data)


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())[:200]
