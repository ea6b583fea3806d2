"""Cell notes (legacy comments) added at the part level: a comments part plus the VML drawing
Excel needs to show them, merged into the sheet's existing ones when it has some."""

from __future__ import annotations

import posixpath
import re

from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

from . import package, partedit
from .xmlcells import escape

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
COMMENTS_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml.comments+xml"
VML_CT = "application/vnd.openxmlformats-officedocument.vmlDrawing"
AUTHOR = "TrainingBudget export"
_SHAPETYPE = ('<v:shapetype id="_x0000_t202" coordsize="21600,21600" o:spt="202" path="m,l,21600r21600,l21600,xe">'
              '<v:stroke joinstyle="miter"/><v:path gradientshapeok="t" o:connecttype="rect"/></v:shapetype>')
# Elements that must follow <legacyDrawing> in a worksheet (ECMA-376 CT_Worksheet order).
_AFTER_LEGACY = ("legacyDrawingHF", "drawingHF", "picture", "oleObjects", "controls", "webPublishItems",
                 "tableParts", "extLst")


def _vml_shape(ref: str, shape_id: int) -> str:
    col, row = coordinate_from_string(ref)
    return (f'<v:shape id="_x0000_s{shape_id}" type="#_x0000_t202" style="position:absolute;margin-left:80pt;'
            'margin-top:2pt;width:180pt;height:60pt;z-index:1;visibility:hidden" fillcolor="#ffffe1" '
            'o:insetmode="auto"><v:fill color2="#ffffe1"/><v:shadow on="t" color="black" obscured="t"/>'
            '<v:path o:connecttype="none"/><v:textbox style="mso-direction-alt:auto"><div style="text-align:left"/>'
            '</v:textbox><x:ClientData ObjectType="Note"><x:MoveWithCells/><x:SizeWithCells/><x:AutoFill>False'
            f"</x:AutoFill><x:Row>{row - 1}</x:Row><x:Column>{column_index_from_string(col) - 1}</x:Column>"
            "</x:ClientData></v:shape>")


def _new_vml() -> str:
    return ('<xml xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office" '
            'xmlns:x="urn:schemas-microsoft-com:office:excel"><o:shapelayout v:ext="edit"><o:idmap v:ext="edit" '
            f'data="9"/></o:shapelayout>{_SHAPETYPE}</xml>')


def _new_comments() -> str:
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            f'<comments xmlns="{MAIN}"><authors></authors><commentList></commentList></comments>')


def add_notes(parts: dict[str, bytes], sheet: str, notes: dict[str, str]) -> dict[str, bytes]:
    """The package with a note on each cell of `notes` ({ref: text}) on sheet `sheet`."""
    if not notes:
        return parts
    parts = dict(parts)
    sheet_part = package.sheet_parts(parts)[sheet]
    rels_part = partedit.rels_name(sheet_part)
    rels = partedit.text(parts, rels_part) if rels_part in parts else partedit.empty_rels()
    folder = posixpath.dirname(sheet_part)
    comments_part = _target(rels, "comments", folder)
    vml_part = _target(rels, "vmlDrawing", folder)
    if comments_part is None:
        n = 1 + sum(1 for p in parts if re.match(r"xl/comments\d*\.xml$", p))
        comments_part = f"xl/comments{n}.xml"
        parts[comments_part] = _new_comments().encode()
        rels, _ = partedit.add_relationship(rels, "comments", f"/{comments_part}")
        ct = partedit.text(parts, partedit.CT)
        parts[partedit.CT] = partedit.add_override(ct, comments_part, COMMENTS_CT).encode()
    if vml_part is None:
        n = 1 + sum(1 for p in parts if p.startswith("xl/drawings/vmlDrawing"))
        vml_part = f"xl/drawings/vmlDrawing{n}.vml"
        parts[vml_part] = _new_vml().encode()
        rels, rid = partedit.add_relationship(rels, "vmlDrawing", f"/{vml_part}")
        parts[sheet_part] = _with_legacy_drawing(partedit.text(parts, sheet_part), rid).encode()
        ct = partedit.text(parts, partedit.CT)
        if 'Extension="vml"' not in ct:
            ct = ct.replace("</Types>", f'<Default Extension="vml" ContentType="{VML_CT}"/></Types>', 1)
        parts[partedit.CT] = ct.encode()
    parts[rels_part] = rels.encode()
    parts[comments_part], parts[vml_part] = _append(partedit.text(parts, comments_part), partedit.text(parts, vml_part),
                                                    notes)
    return parts


def _target(rels: str, kind: str, folder: str) -> str | None:
    m = re.search(rf'<Relationship\b[^>]*Type="[^"]*/{kind}"[^>]*Target="([^"]+)"', rels) or \
        re.search(rf'<Relationship\b[^>]*Target="([^"]+)"[^>]*Type="[^"]*/{kind}"', rels)
    return package.resolve(folder, m.group(1)) if m else None


def _with_legacy_drawing(sheet: str, rid: str) -> str:
    if 'xmlns:r="' not in sheet[:sheet.index(">", sheet.index("<worksheet"))]:
        sheet = sheet.replace("<worksheet", f'<worksheet xmlns:r="{partedit.OFFICE_REL}"', 1)
    tag = f'<legacyDrawing r:id="{rid}"/>'
    for name in _AFTER_LEGACY:
        m = re.search(rf"<{name}\b", sheet)
        if m:
            return sheet[:m.start()] + tag + sheet[m.start():]
    return sheet.replace("</worksheet>", tag + "</worksheet>", 1)


def _append(comments: str, vml: str, notes: dict[str, str]) -> tuple[bytes, bytes]:
    authors = re.findall(r"<author>(.*?)</author>", comments, re.S)
    if AUTHOR not in authors:
        comments = re.sub(r"<authors\s*/>", "<authors></authors>", comments)
        comments = comments.replace("</authors>", f"<author>{AUTHOR}</author></authors>", 1)
        authors.append(AUTHOR)
    author_id = authors.index(AUTHOR)
    comments = re.sub(r"<commentList\s*/>", "<commentList></commentList>", comments)
    next_id = 1 + max((int(i) for i in re.findall(r'_x0000_s(\d+)"', vml)), default=1024)
    for i, (ref, note) in enumerate(notes.items()):
        comments = comments.replace("</commentList>", f'<comment ref="{ref}" authorId="{author_id}"><text><r><t '
                                    f'xml:space="preserve">{escape(note)}</t></r></text></comment></commentList>', 1)
        vml = vml.replace("</xml>", _vml_shape(ref, next_id + i) + "</xml>", 1)
    return comments.encode(), vml.encode()
