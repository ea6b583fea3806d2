"""Cell notes (legacy comments) added at the part level: a comments part plus the VML drawing
Excel needs to show them, merged into the sheet's existing ones when it has some.

New parts take names no part has; a new drawing takes an `o:idmap` block no other drawing
uses, and its shapes ids inside that block (block k holds ids 1024*k+1 ... 1024*(k+1)-1,
[MS-OI29500] 2.1.1337 / VML o:idmap). A cell that already has a user's note keeps it, with the
new text appended.
"""

from __future__ import annotations

from lxml import etree
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

from . import package, partedit, xmlcells

COMMENTS_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml.comments+xml"
VML_CT = "application/vnd.openxmlformats-officedocument.vmlDrawing"
AUTHOR = "TrainingBudget export"
V = "urn:schemas-microsoft-com:vml"
OFFICE = "urn:schemas-microsoft-com:office:office"
X = "urn:schemas-microsoft-com:office:excel"
BLOCK = 1024
# Elements that must follow <legacyDrawing> in a worksheet (ECMA-376 CT_Worksheet order).
_AFTER_LEGACY = ("legacyDrawingHF", "drawingHF", "picture", "oleObjects", "controls", "webPublishItems",
                 "tableParts", "extLst")
_SHAPETYPE = ('<v:shapetype id="_x0000_t202" coordsize="21600,21600" o:spt="202" path="m,l,21600r21600,l21600,xe">'
              '<v:stroke joinstyle="miter"/><v:path gradientshapeok="t" o:connecttype="rect"/></v:shapetype>')
_SHAPE = ('<v:shape type="#_x0000_t202" style="position:absolute;'
          'margin-left:80pt;margin-top:2pt;width:180pt;height:60pt;z-index:1;visibility:hidden" fillcolor="#ffffe1"'
          ' o:insetmode="auto"><v:fill color2="#ffffe1"/><v:shadow on="t" color="black" obscured="t"/>'
          '<v:path o:connecttype="none"/><v:textbox style="mso-direction-alt:auto"><div style="text-align:left"/>'
          '</v:textbox><x:ClientData ObjectType="Note"><x:MoveWithCells/><x:SizeWithCells/><x:AutoFill>False'
          '</x:AutoFill><x:Row/><x:Column/></x:ClientData></v:shape>')


def _fragment(xml: str) -> etree._Element:
    """A constant VML element parsed (by the package layer's parser) inside a root declaring
    v, o, x, so it reuses the drawing's prefixes."""
    return package.parse("VML template", f'<xml xmlns:v="{V}" xmlns:o="{OFFICE}" xmlns:x="{X}">{xml}</xml>'.encode())[0]


def _blocks(parts: dict[str, bytes]) -> set[int]:
    """The o:idmap blocks every VML drawing of the package claims."""
    used: set[int] = set()
    for p in parts:
        if p.lower().endswith(".vml"):
            for idmap in partedit.root_of(parts, p).iter(f"{{{OFFICE}}}idmap"):
                used |= {int(b) for b in (idmap.get("data") or "").split(",") if b.strip().isdigit()}
    return used


def _new_vml(block: int) -> bytes:
    """A new VML drawing claiming id block `block` (set with lxml on the constant skeleton)."""
    root = etree.Element("xml", nsmap={"v": V, "o": OFFICE, "x": X})
    layout = etree.SubElement(root, f"{{{OFFICE}}}shapelayout", {f"{{{V}}}ext": "edit"})
    etree.SubElement(layout, f"{{{OFFICE}}}idmap", {f"{{{V}}}ext": "edit", "data": str(block)})
    root.append(_fragment(_SHAPETYPE))
    return etree.tostring(root)


def _new_comments() -> bytes:
    root = etree.Element(f"{{{xmlcells.MAIN}}}comments", nsmap={None: xmlcells.MAIN})
    etree.SubElement(root, f"{{{xmlcells.MAIN}}}authors")
    etree.SubElement(root, f"{{{xmlcells.MAIN}}}commentList")
    return package.serialize(root, standalone=True)


def add_notes(parts: dict[str, bytes], sheet: str, notes: dict[str, str]) -> dict[str, bytes]:
    """The package with a note on each cell of `notes` ({ref: text}) on sheet `sheet`."""
    if not notes:
        return parts
    parts = dict(parts)
    sheet_part = package.sheet_parts(parts)[sheet]
    rels_part = partedit.rels_name(sheet_part)
    comments_part = partedit.rel_target(parts, sheet_part, "comments")
    vml_part = partedit.rel_target(parts, sheet_part, "vmlDrawing")
    if comments_part not in parts:
        comments_part = partedit.unique_name(parts, "xl/comments{}.xml")
        parts[comments_part] = _new_comments()
        partedit.add_relationship(parts, rels_part, "comments", f"/{comments_part}")
        partedit.add_override(parts, comments_part, COMMENTS_CT)
    if vml_part not in parts:
        block = next(k for k in range(1, 1 << 20) if k not in _blocks(parts))
        vml_part = partedit.unique_name(parts, "xl/drawings/vmlDrawing{}.vml")
        parts[vml_part] = _new_vml(block)
        rid = partedit.add_relationship(parts, rels_part, "vmlDrawing", f"/{vml_part}")
        partedit.change(parts, sheet_part, lambda root: _with_legacy_drawing(root, rid))
        partedit.add_default(parts, "vml", VML_CT)
    new_refs: list[str] = []
    partedit.change(parts, comments_part, lambda root: new_refs.extend(_append_comments(root, notes)))
    partedit.change(parts, vml_part, lambda root: _append_shapes(root, new_refs))
    return parts


def _with_legacy_drawing(root: etree._Element, rid: str) -> None:
    tag = etree.Element(xmlcells.q(root, "legacyDrawing"), {f"{{{partedit.OFFICE_REL}}}id": rid})
    for child in root:
        if isinstance(child.tag, str) and etree.QName(child).localname in _AFTER_LEGACY:
            child.addprevious(tag)
            return
    root.append(tag)


def _append_comments(root: etree._Element, notes: dict[str, str]) -> list[str]:
    """Notes appended to the comments part; a cell with a note already gets the text added to it.
    Returns the references that got a new comment (they need a shape)."""
    q = lambda local: xmlcells.q(root, local)  # noqa: E731
    authors = root.find(q("authors"))
    if authors is None:
        authors = etree.Element(q("authors"))
        root.insert(0, authors)
    names = [a.text for a in authors.iterchildren(q("author"))]
    if AUTHOR not in names:
        etree.SubElement(authors, q("author")).text = AUTHOR
        names.append(AUTHOR)
    comment_list = root.find(q("commentList"))
    if comment_list is None:
        comment_list = etree.Element(q("commentList"))
        authors.addnext(comment_list)
    existing = {c.get("ref"): c for c in comment_list.iterchildren(q("comment"))}
    added = []
    for ref, note in notes.items():
        comment = existing.get(ref)
        text_el = comment.find(q("text")) if comment is not None else None
        if comment is None or text_el is None:
            comment = etree.SubElement(comment_list, q("comment"), ref=ref, authorId=str(names.index(AUTHOR)))
            text_el = etree.SubElement(comment, q("text"))
            added.append(ref)
        else:
            note = "\n\n" + note
        if text_el.find(q("t")) is not None and text_el.find(q("r")) is None:  # plain text: make it a run
            t = text_el.find(q("t"))
            text_el.remove(t)
            etree.SubElement(text_el, q("r")).append(t)
        t = etree.SubElement(etree.SubElement(text_el, q("r")), q("t"))
        t.text = note
        t.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
    return added


def _append_shapes(root: etree._Element, refs: list[str]) -> None:
    """A note shape per reference, ids in the drawing's own o:idmap block."""
    blocks = [int(b) for i in root.iter(f"{{{OFFICE}}}idmap") for b in (i.get("data") or "").split(",")
              if b.strip().isdigit()] or [1]
    taken = set()
    for shape in root.iter(f"{{{V}}}shape"):
        sid = (shape.get("id") or "").removeprefix("_x0000_s")
        if sid.isdigit():
            taken.add(int(sid))
        if shape.get(f"{{{OFFICE}}}spid", "").removeprefix("_x0000_s").isdigit():
            taken.add(int(shape.get(f"{{{OFFICE}}}spid").removeprefix("_x0000_s")))
    free = (n for k in blocks for n in range(BLOCK * k + 1, BLOCK * (k + 1)) if n not in taken)
    if root.find(f"{{{V}}}shapetype") is None:
        root.append(_fragment(_SHAPETYPE))
    for ref in refs:
        col, row = coordinate_from_string(ref)
        shape = _fragment(_SHAPE)
        shape.set("id", f"_x0000_s{next(free)}")
        data = shape.find(f"{{{X}}}ClientData")
        data.find(f"{{{X}}}Row").text = str(row - 1)
        data.find(f"{{{X}}}Column").text = str(column_index_from_string(col) - 1)
        root.append(shape)


def notes_on(parts: dict[str, bytes], sheet: str) -> dict[str, str]:
    """{ref: note text} of a sheet (for tests and reports)."""
    part = partedit.rel_target(parts, package.sheet_parts(parts)[sheet], "comments")
    if part not in parts:
        return {}
    root = partedit.root_of(parts, part)
    return {c.get("ref"): "".join(c.find(xmlcells.q(root, "text")).itertext())
            for c in root.iter(xmlcells.q(root, "comment"))}

