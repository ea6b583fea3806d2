"""Package-level changes for the e-mail copy: content types, relationships, drop a sheet, add a
sheet with a table. Parts are edited with lxml (see xmlcells); each function takes the
{part name: bytes} map and changes only the parts it names, so the rest of the file stays as it is.
"""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Callable
from typing import Any

from lxml import etree

from ...calc import TrainingBudgetError
from . import docprops, package, xmlcells

CT = "[Content_Types].xml"
WB, WB_RELS = "xl/workbook.xml", "xl/_rels/workbook.xml.rels"
CT_NS = "http://schemas.openxmlformats.org/package/2006/content-types"
PR_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"
MACRO_MAIN = "application/vnd.ms-excel.sheet.macroEnabled.main+xml"
PLAIN_MAIN = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
SHEET_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
TABLE_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml.table+xml"
OFFICE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def rels_name(part: str) -> str:
    return posixpath.join(posixpath.dirname(part), "_rels", posixpath.basename(part) + ".rels")


def change(parts: dict[str, bytes], name: str, fn: Callable[[etree._Element], Any]) -> None:
    """Part `name` changed in place by `fn(root)` (parsed safely, declaration kept)."""
    parts[name] = package.edit(name, parts[name], fn)


def root_of(parts: dict[str, bytes], name: str) -> etree._Element:
    return package.parse(name, parts[name])


def unique_name(parts: dict[str, bytes], pattern: str) -> str:
    """`pattern` ('xl/comments{}.xml') with the lowest n >= 1 no part has (case-insensitive)."""
    taken = {p.lower() for p in parts}
    return next(pattern.format(n) for n in itertools.count(1) if pattern.format(n).lower() not in taken)


# Content types


def content_types(parts: dict[str, bytes]) -> tuple[dict[str, str], dict[str, str]]:
    """({extension: type} defaults, {part name: type} overrides)."""
    root = root_of(parts, CT)
    defaults = {e.get("Extension", "").lower(): e.get("ContentType", "") for e in root.iter(f"{{{CT_NS}}}Default")}
    overrides = {e.get("PartName", "").lstrip("/"): e.get("ContentType", "")
                 for e in root.iter(f"{{{CT_NS}}}Override")}
    return defaults, overrides


def content_type(parts: dict[str, bytes], part: str) -> str:
    defaults, overrides = content_types(parts)
    lower = {k.lower(): v for k, v in overrides.items()}
    return lower.get(part.lower()) or defaults.get(posixpath.splitext(part)[1].lstrip(".").lower(), "")


def add_override(parts: dict[str, bytes], part: str, content_type: str) -> None:
    def fn(root: etree._Element) -> None:
        etree.SubElement(root, f"{{{CT_NS}}}Override", PartName=f"/{part}", ContentType=content_type)
    change(parts, CT, fn)


def add_default(parts: dict[str, bytes], extension: str, content_type: str) -> None:
    if extension.lower() in content_types(parts)[0]:
        return

    def fn(root: etree._Element) -> None:
        etree.SubElement(root, f"{{{CT_NS}}}Default", Extension=extension, ContentType=content_type)
    change(parts, CT, fn)


def drop_content_types(parts: dict[str, bytes], drop: Callable[[etree._Element], bool]) -> None:
    def fn(root: etree._Element) -> None:
        for e in list(root):
            if drop(e):
                root.remove(e)
    change(parts, CT, fn)


# Relationships


def empty_rels() -> bytes:
    return (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>')


def relationships(parts: dict[str, bytes], rels_part: str) -> list[etree._Element]:
    if rels_part not in parts:
        return []
    return list(root_of(parts, rels_part).iter(f"{{{PR_NS}}}Relationship"))


def target_of(rels_part: str, rel: etree._Element) -> str | None:
    """The part a relationship points to (None for an external target)."""
    if rel.get("TargetMode") == "External":
        return None
    source_dir = posixpath.dirname(posixpath.dirname(rels_part))
    return package.resolve(source_dir, rel.get("Target", ""))


def add_relationship(parts: dict[str, bytes], rels_part: str, rel_type: str, target: str) -> str:
    """A new relationship (type `.../rel_type`) in `rels_part` (created if missing); its new id."""
    parts.setdefault(rels_part, empty_rels())
    ids = {r.get("Id") for r in relationships(parts, rels_part)}
    rid = next(f"rId{n}" for n in itertools.count(1) if f"rId{n}" not in ids)

    def fn(root: etree._Element) -> None:
        etree.SubElement(root, f"{{{PR_NS}}}Relationship", Id=rid, Type=f"{OFFICE_REL}/{rel_type}", Target=target)
    change(parts, rels_part, fn)
    return rid


def rel_target(parts: dict[str, bytes], part: str, kind: str) -> str | None:
    """The part that `part`'s first relationship of type `.../kind` points to."""
    rels = rels_name(part)
    for rel in relationships(parts, rels):
        if rel.get("Type", "").rsplit("/", 1)[-1] == kind:
            return target_of(rels, rel)
    return None


# Sheets


def sheet_elements(wb: etree._Element) -> list[etree._Element]:
    sheets = wb.find(xmlcells.q(wb, "sheets"))
    return [] if sheets is None else list(sheets.iterchildren(xmlcells.q(wb, "sheet")))


def drop_sheet(parts: dict[str, bytes], name: str) -> dict[str, bytes]:
    """The package without sheet `name` (its part, rels, relationship, content type, local names)."""
    parts = dict(parts)
    wb = root_of(parts, WB)
    names = [s.get("name") for s in sheet_elements(wb)]
    if name not in names:
        return parts
    drop_sheets_at(parts, {names.index(name)})
    return parts


def drop_sheets_at(parts: dict[str, bytes], indexes: set[int]) -> list[str]:
    """Sheets at `indexes` (in workbook order) dropped with their parts and relationships, the
    names scoped to them dropped, later localSheetIds and activeTab shifted; their names."""
    dropped: list[tuple[str, str]] = []

    def fn(wb: etree._Element) -> None:
        sheets = sheet_elements(wb)
        for i in sorted(indexes):
            dropped.append((sheets[i].get("name"), sheets[i].get(f"{{{OFFICE_REL}}}id")))
            sheets[i].getparent().remove(sheets[i])

        def new_index(i: int) -> int:
            return i - sum(1 for d in indexes if d < i)
        for dn in list(wb.iter(xmlcells.q(wb, "definedName"))):
            local = dn.get("localSheetId")
            if local is not None and local.isdigit():
                if int(local) in indexes:
                    dn.getparent().remove(dn)
                else:
                    dn.set("localSheetId", str(new_index(int(local))))
        for view in wb.iter(xmlcells.q(wb, "workbookView")):
            for attr in ("activeTab", "firstSheet"):
                if view.get(attr, "").isdigit():
                    view.set(attr, str(max(0, min(new_index(int(view.get(attr))), len(sheets) - len(indexes) - 1))))
    change(parts, WB, fn)
    rids = {rid for _, rid in dropped}
    gone = {target_of(WB_RELS, r) for r in relationships(parts, WB_RELS) if r.get("Id") in rids}
    drop_relationships(parts, WB_RELS, lambda r: r.get("Id") in rids)
    for part in gone:
        if part:
            parts.pop(part, None)
            parts.pop(rels_name(part), None)
    drop_content_types(parts, lambda e: e.get("PartName", "").lstrip("/") in gone)
    docprops.drop_sheet_titles(parts, [n for n, _ in dropped])  # docProps/app.xml lists them no more
    return [n for n, _ in dropped]


def drop_relationships(parts: dict[str, bytes], rels_part: str, drop: Callable[[etree._Element], bool]) -> set[str]:
    """Relationships of `rels_part` that `drop` accepts removed; their ids."""
    if rels_part not in parts:
        return set()
    ids: set[str] = set()

    def fn(root: etree._Element) -> None:
        for rel in list(root.iter(f"{{{PR_NS}}}Relationship")):
            if drop(rel):
                ids.add(rel.get("Id"))
                root.remove(rel)
    change(parts, rels_part, fn)
    return ids


def add_table_sheet(parts: dict[str, bytes], sheet: str, table: str, rows: list[list[Any]]) -> dict[str, bytes]:
    """The package with a new last sheet holding `rows` (header first) as the Excel table `table`."""
    parts = dict(parts)
    sheet_part = unique_name(parts, "xl/worksheets/sheet{}.xml")
    table_part = unique_name(parts, "xl/tables/table{}.xml")
    table_ids = [int(root_of(parts, p).get("id", "0")) for p in parts
                 if content_type(parts, p) == TABLE_CT]
    ref = f"A1:{xmlcells.get_column_letter(len(rows[0]))}{len(rows)}"
    ws = etree.Element(f"{{{xmlcells.MAIN}}}worksheet", nsmap={None: xmlcells.MAIN, "r": OFFICE_REL})
    etree.SubElement(ws, f"{{{xmlcells.MAIN}}}dimension", ref=ref)
    etree.SubElement(ws, f"{{{xmlcells.MAIN}}}sheetData")
    s = xmlcells.Sheet(ws)
    for r, row in enumerate(rows, start=1):
        for c, v in enumerate(row, start=1):
            s.set_constant(s.cell(f"{xmlcells.get_column_letter(c)}{r}"), v)
    parts_el = etree.SubElement(ws, f"{{{xmlcells.MAIN}}}tableParts", count="1")
    etree.SubElement(parts_el, f"{{{xmlcells.MAIN}}}tablePart", {f"{{{OFFICE_REL}}}id": "rId1"})
    parts[sheet_part] = package.serialize(ws, standalone=True)
    parts[rels_name(sheet_part)] = empty_rels()
    add_relationship(parts, rels_name(sheet_part), "table", f"/{table_part}")
    t = etree.Element(f"{{{xmlcells.MAIN}}}table", nsmap={None: xmlcells.MAIN}, id=str(max(table_ids, default=0) + 1),
                      name=table, displayName=table, ref=ref)
    etree.SubElement(t, f"{{{xmlcells.MAIN}}}autoFilter", ref=ref)
    cols = etree.SubElement(t, f"{{{xmlcells.MAIN}}}tableColumns", count=str(len(rows[0])))
    for i, h in enumerate(rows[0], 1):
        etree.SubElement(cols, f"{{{xmlcells.MAIN}}}tableColumn", id=str(i), name=str(h))
    etree.SubElement(t, f"{{{xmlcells.MAIN}}}tableStyleInfo", name="TableStyleMedium2", showFirstColumn="0",
                     showLastColumn="0", showRowStripes="1", showColumnStripes="0")
    parts[table_part] = package.serialize(t, standalone=True)
    rid = add_relationship(parts, WB_RELS, "worksheet", f"/{sheet_part}")

    def fn(wb: etree._Element) -> None:
        ids = [int(e.get("sheetId", "0")) for e in sheet_elements(wb)]
        etree.SubElement(wb.find(xmlcells.q(wb, "sheets")), xmlcells.q(wb, "sheet"),
                         {"name": sheet, "sheetId": str(max(ids, default=0) + 1), f"{{{OFFICE_REL}}}id": rid})
    before = [e.get("name") for e in sheet_elements(root_of(parts, WB))]
    change(parts, WB, fn)
    add_override(parts, sheet_part, SHEET_CT)
    add_override(parts, table_part, TABLE_CT)
    if before:
        docprops.add_sheet_title(parts, sheet, before[-1])
    return parts


def ensure_defined_name(parts: dict[str, bytes], name: str, text: str, same_as: tuple[str, ...] = ()) -> None:
    """Add the workbook-level defined name `name` -> `text` unless the workbook has it already, as
    `text` or as one of `same_as` (other spellings of the same cells, such as the A1 range an earlier
    e-mail copy made of a table reference); a different definition by that name is refused
    (TrainingBudgetError); `<definedNames>` is
    created where the schema puts it (ECMA-376 Part 1, §18.2.27: after sheets, functionGroups
    and externalReferences)."""
    def fn(wb: etree._Element) -> None:
        names = wb.find(xmlcells.q(wb, "definedNames"))
        if names is None:
            after = [wb.find(xmlcells.q(wb, tag)) for tag in ("sheets", "functionGroups", "externalReferences")]
            anchor = [e for e in after if e is not None][-1]
            names = etree.Element(xmlcells.q(wb, "definedNames"))
            anchor.addnext(names)
        same = [dn for dn in names if dn.get("name", "").lower() == name.lower() and dn.get("localSheetId") is None]
        if same and (same[0].text or "").strip() not in (text, *same_as):  # a user's own name: never silently reused
            raise TrainingBudgetError(
                f"the workbook already defines {name} as {same[0].text!r}; the e-mail copy needs that "
                f"name for {text}: rename it, then export again")
        if not same:
            etree.SubElement(names, xmlcells.q(wb, "definedName"), name=name).text = text
    change(parts, WB, fn)

