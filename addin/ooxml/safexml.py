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
from collections.abc import Callable, Iterator
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
        raise BadWorkbookError(prefix + _doctype(name))
    return root


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


def iter_events(name: str, data: bytes, tags: tuple[str, ...]) -> Iterator[etree._Element]:
    """Each element of `tags` at its end tag, parsed as a stream with the safe settings; a DOCTYPE is
    refused when the stream ends. The caller clears what it has read."""
    context = etree.iterparse(io.BytesIO(data), events=("end",), tag=tags, resolve_entities=False,
                              no_network=True, load_dtd=False, huge_tree=False, remove_blank_text=False)
    try:
        yield from (el for _, el in context)
    except etree.XMLSyntaxError as e:
        raise BadWorkbookError(f"part {name} is not well-formed XML ({_one_line(e)})") from None
    root = getattr(context, "root", None)
    info = root.getroottree().docinfo if root is not None else None
    if info is not None and (info.doctype or info.internalDTD is not None):
        raise BadWorkbookError(_doctype(name))


def _doctype(name: str) -> str:
    return f"part {name} declares a DOCTYPE (entities or DTDs are never in a workbook; refused as unsafe)"


class _Nothing:
    """A parser target that builds nothing: libxml2 checks the XML at C speed; it notes a DOCTYPE."""

    def __init__(self) -> None:
        self.doctype_seen = False

    def doctype(self, *_: Any) -> None:
        self.doctype_seen = True

    def close(self) -> bool:
        return self.doctype_seen


def check_stream(name: str, data: bytes) -> None:
    """Raise BadWorkbookError unless part `name` is well-formed XML without a DOCTYPE; no tree is
    built (a parser target that keeps nothing), so a large part costs no memory beyond its bytes."""
    parser = etree.XMLParser(target=_Nothing(), resolve_entities=False, no_network=True, load_dtd=False,
                             dtd_validation=False, huge_tree=False)
    try:
        doctype = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        raise BadWorkbookError(f"part {name} is not well-formed XML ({_one_line(e)})") from None
    if doctype:
        raise BadWorkbookError(_doctype(name))
