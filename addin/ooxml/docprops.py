"""docProps/app.xml kept true when sheets leave or join a package.

Excel lists the workbook's sheets and names in the extended properties (ECMA-376 Part 1
§22.2.2.13 HeadingPairs, §22.2.2.27 TitlesOfParts): HeadingPairs is a vector of (group title,
count) variants, TitlesOfParts the titles of every group in that order. Group titles are
localized ("Worksheets", "Arbeitsblätter"), so sheets are recognized by their names, never by
the group's title: a sheet's title is its name, a name scoped to it reads `Sheet!Name` (or
`'Sheet name'!Name`). Edited with lxml through the package layer; a part that does not follow
this shape is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from lxml import etree

from . import package

EP = "http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"
VT = "http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes"
EXTENDED = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties"


def app_part(parts: dict[str, bytes]) -> str | None:
    """The extended-properties part named by the package relationships (usually docProps/app.xml)."""
    if "_rels/.rels" not in parts:
        return None
    for rel in package.parse("_rels/.rels", parts["_rels/.rels"]):
        if rel.get("Type") == EXTENDED and rel.get("TargetMode") != "External":
            name = package.resolve("", rel.get("Target", ""))
            return name if name in parts else None
    return None


def _groups(root: etree._Element) -> tuple[etree._Element, etree._Element, list] | None:
    """(pairs vector, titles vector, [(title variant, count element, [title elements])])."""
    pairs = root.find(f"{{{EP}}}HeadingPairs/{{{VT}}}vector")
    titles = root.find(f"{{{EP}}}TitlesOfParts/{{{VT}}}vector")
    if pairs is None or titles is None:
        return None
    variants, entries, groups, at = list(pairs), list(titles), [], 0
    for title, count in zip(variants[::2], variants[1::2], strict=False):
        number = count.find(f"{{{VT}}}i4")
        if number is None or not (number.text or "").strip().isdigit():
            return None
        n = int(number.text)
        groups.append((title, number, entries[at:at + n]))
        at += n
    return (pairs, titles, groups) if at == len(entries) and len(variants) % 2 == 0 else None


def _resize(pairs: etree._Element, titles: etree._Element) -> None:
    pairs.set("size", str(len(pairs)))
    titles.set("size", str(len(titles)))


def drop_sheet_titles(parts: dict[str, bytes], sheets: list[str]) -> None:
    """The titles of `sheets` (and of names scoped to them) taken out of the app part, counts
    lowered, a group left empty removed."""
    part = app_part(parts)
    if part is None or not sheets:
        return
    quoted = ["'" + s.replace("'", "''") + "'" for s in sheets]
    prefixes = tuple(f"{s}!" for s in [*sheets, *quoted])

    def fn(root: etree._Element) -> None:
        found = _groups(root)
        if found is None:
            return
        pairs, titles, groups = found
        left = list(sheets)
        for title, number, entries in groups:
            kept = len(entries)
            for t in entries:
                text = t.text or ""
                if text in left or text.startswith(prefixes):
                    if text in left:
                        left.remove(text)
                    titles.remove(t)
                    kept -= 1
            if kept:
                number.text = str(kept)
            else:
                pairs.remove(number.getparent())
                pairs.remove(title)
        _resize(pairs, titles)
    _change(parts, part, fn)


def add_sheet_title(parts: dict[str, bytes], sheet: str, after: str) -> None:
    """`sheet` listed last in the group that lists sheet `after` (nothing when the app part
    lists no such sheet)."""
    part = app_part(parts)
    if part is None:
        return

    def fn(root: etree._Element) -> None:
        found = _groups(root)
        if found is None:
            return
        pairs, titles, groups = found
        for _, number, entries in groups:
            for t in entries:
                if t.text == after:
                    new = etree.Element(t.tag)
                    new.text = sheet
                    entries[-1].addnext(new)
                    number.text = str(len(entries) + 1)
                    _resize(pairs, titles)
                    return
    _change(parts, part, fn)


def _change(parts: dict[str, bytes], name: str, fn: Callable[[etree._Element], None]) -> None:
    parts[name] = package.edit(name, parts[name], fn)
