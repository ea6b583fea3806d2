"""Package-level changes for the e-mail copy: drop the VBA project, drop a sheet, add a sheet with
a table. Parts are edited as text (see xmlcells for why); each function takes and returns the
{part name: bytes} map, so nothing else of the user's file changes.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from . import package, xmlcells

CT = "[Content_Types].xml"
WB, WB_RELS = "xl/workbook.xml", "xl/_rels/workbook.xml.rels"
MACRO_MAIN = "application/vnd.ms-excel.sheet.macroEnabled.main+xml"
PLAIN_MAIN = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
SHEET_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
TABLE_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml.table+xml"
OFFICE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def text(parts: dict[str, bytes], name: str) -> str:
    return parts[name].decode("utf-8")


def rels_name(part: str) -> str:
    return posixpath.join(posixpath.dirname(part), "_rels", posixpath.basename(part) + ".rels")


def _drop_override(ct: str, part: str) -> str:
    return re.sub(rf'<Override\b[^>]*PartName="/{re.escape(part)}"[^>]*/>', "", ct)


def add_override(ct: str, part: str, content_type: str) -> str:
    return ct.replace("</Types>", f'<Override PartName="/{part}" ContentType="{content_type}"/></Types>', 1)


def add_relationship(rels: str, rel_type: str, target: str) -> tuple[str, str]:
    """The rels text with a new relationship, and its new id."""
    ids = {int(n) for n in re.findall(r'Id="rId(\d+)"', rels)}
    rid = f"rId{max(ids, default=0) + 1}"
    rel = f'<Relationship Id="{rid}" Type="{OFFICE_REL}/{rel_type}" Target="{target}"/>'
    if "</Relationships>" in rels:
        return rels.replace("</Relationships>", rel + "</Relationships>", 1), rid
    return re.sub(r"<Relationships\b([^>]*)/>", rf"<Relationships\1>{rel}</Relationships>", rels, count=1), rid


def empty_rels() -> str:
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>')


def strip_vba(parts: dict[str, bytes]) -> dict[str, bytes]:
    """A macro-free package: no VBA parts, no relationship to them, the plain workbook content type."""
    parts = dict(parts)
    vba_parts = [n for n in parts if re.match(r"xl/vbaProject.*\.bin$|xl/vbaData\.xml$", n)]
    for n in vba_parts:
        del parts[n]
    rels = re.sub(r'<Relationship\b[^>]*Type="[^"]*/(vbaProject|wordVbaData|vbaProjectSignature\w*)"[^>]*/>', "",
                  text(parts, WB_RELS))
    ct = text(parts, CT).replace(MACRO_MAIN, PLAIN_MAIN)
    for n in vba_parts:
        ct = _drop_override(ct, n)
    if not any(n.endswith(".bin") for n in parts):
        ct = re.sub(r'<Default\b[^>]*Extension="bin"[^>]*/>', "", ct)
    parts[WB_RELS], parts[CT] = rels.encode(), ct.encode()
    return parts


def drop_sheet(parts: dict[str, bytes], name: str) -> dict[str, bytes]:
    """The package without sheet `name` (its part, rels, relationship, content type, local names)."""
    parts = dict(parts)
    wb = text(parts, WB)
    sheets = re.findall(r"<sheet\b[^>]*/>", wb)
    index = next((i for i, s in enumerate(sheets) if re.search(rf'\bname="{re.escape(name)}"', s)), None)
    if index is None:
        return parts
    rid = re.search(r'\br:id="([^"]+)"', sheets[index]).group(1)
    part = package.sheet_parts(parts)[name]
    wb = wb.replace(sheets[index], "", 1)
    wb = re.sub(r'<definedName\b[^>]*localSheetId="(\d+)"[^>]*>.*?</definedName>',
                lambda m: _shift_name(m.group(0), int(m.group(1)), index), wb, flags=re.S)
    wb = re.sub(r'\bactiveTab="(\d+)"', lambda m: f'activeTab="{max(0, int(m.group(1)) - (int(m.group(1)) >= index))}"',
                wb)
    parts[WB] = wb.encode()
    parts[WB_RELS] = re.sub(rf'<Relationship\b[^>]*Id="{rid}"[^>]*/>', "", text(parts, WB_RELS)).encode()
    for n in (part, rels_name(part)):
        parts.pop(n, None)
    parts[CT] = _drop_override(text(parts, CT), part).encode()
    return parts


def _shift_name(xml: str, sheet_id: int, removed: int) -> str:
    if sheet_id == removed:
        return ""
    return xml if sheet_id < removed else xml.replace(f'localSheetId="{sheet_id}"', f'localSheetId="{sheet_id - 1}"')


def add_table_sheet(parts: dict[str, bytes], sheet: str, table: str, rows: list[list[Any]]) -> dict[str, bytes]:
    """The package with a new last sheet holding `rows` (header first) as the Excel table `table`."""
    parts = dict(parts)
    n_sheet = 1 + max((int(m) for m in re.findall(r"xl/worksheets/sheet(\d+)\.xml$", "\n".join(parts), re.M)),
                      default=0)
    n_table = 1 + max((int(m) for m in re.findall(r"xl/tables/table(\d+)\.xml$", "\n".join(parts), re.M)), default=0)
    table_ids = [int(i) for p, d in parts.items() if p.startswith("xl/tables/") and p.endswith(".xml")
                 for i in re.findall(rb'<table\b[^>]*\bid="(\d+)"', d)]
    sheet_part, table_part = f"xl/worksheets/sheet{n_sheet}.xml", f"xl/tables/table{n_table}.xml"
    ref = f"A1:{xmlcells.get_column_letter(len(rows[0]))}{len(rows)}"
    body = "".join(f'<row r="{r}">' + "".join(xmlcells.text_cell(f"{xmlcells.get_column_letter(c)}{r}", v)
                                             for c, v in enumerate(row, start=1)) + "</row>"
                   for r, row in enumerate(rows, start=1))
    parts[sheet_part] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet '
        'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        f'xmlns:r="{OFFICE_REL}"><dimension ref="{ref}"/><sheetData>{body}</sheetData>'
        '<tableParts count="1"><tablePart r:id="rId1"/></tableParts></worksheet>').encode()
    parts[rels_name(sheet_part)] = add_relationship(empty_rels(), "table", f"/{table_part}")[0].encode()
    columns = "".join(f'<tableColumn id="{i}" name="{xmlcells.escape(str(h))}"/>' for i, h in enumerate(rows[0], 1))
    parts[table_part] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<table xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        f'id="{max(table_ids, default=0) + 1}" name="{table}" displayName="{table}" ref="{ref}">'
        f'<autoFilter ref="{ref}"/><tableColumns count="{len(rows[0])}">{columns}</tableColumns>'
        '<tableStyleInfo name="TableStyleMedium2" showFirstColumn="0" showLastColumn="0" showRowStripes="1" '
        'showColumnStripes="0"/></table>').encode()
    rels, rid = add_relationship(text(parts, WB_RELS), "worksheet", f"/{sheet_part}")
    wb = text(parts, WB)
    sheet_id = 1 + max((int(i) for i in re.findall(r'<sheet\b[^>]*\bsheetId="(\d+)"', wb)), default=0)
    parts[WB] = wb.replace("</sheets>", f'<sheet name="{sheet}" sheetId="{sheet_id}" r:id="{rid}"/></sheets>',
                           1).encode()
    parts[WB_RELS] = rels.encode()
    ct = add_override(add_override(text(parts, CT), sheet_part, SHEET_CT), table_part, TABLE_CT)
    parts[CT] = ct.encode()
    return parts
