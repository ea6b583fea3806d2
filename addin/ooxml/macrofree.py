"""Every macro carrier taken out of a package, then the result checked.

Carriers are the one table ooxml.carriers.CARRIERS (verify reports from the same table): VBA
projects and their signatures under any part name (by content type, relationship type, folder,
file name, or the OLE compound-file magic of the bytes), Excel 4.0 macro sheets and dialog sheets
with the names that start them (`Auto_Open`, `Auto_Close`, ...) or point into them, ActiveX
controls, OLE objects and embedded packages, attached toolbars. DDE links cannot be taken out
without renumbering the workbook's external references, so a workbook holding one is refused. The
result is checked again: a copy that still names a macro type, or holds a compound file, is
refused rather than sent.
"""

from __future__ import annotations

import posixpath

from lxml import etree
from openpyxl.formula.tokenizer import Token, Tokenizer

from ... import calc
from . import carriers as carriers_table, partedit, xmlcells

OLE_MAGIC = carriers_table.CFB_MAGIC  # [MS-CFB] 2.2 header signature
AUTO_NAMES = carriers_table.AUTO_RUN_NAMES


class MacroError(calc.TrainingBudgetError):
    """The package holds a macro carrier the export cannot take out."""


def _is_macro_type(ct: str) -> bool:
    return carriers_table.is_macro_type(ct)


def _is_macro_rel(rel: etree._Element) -> bool:
    return carriers_table.by_rel(rel.get("Type", "")) is not None


def carriers(parts: dict[str, bytes]) -> set[str]:
    """Names of the parts that carry macros (every kind of ooxml.carriers.CARRIERS)."""
    table = carriers_table
    found = {p for p in parts if p != partedit.CT and (
        table.by_type(partedit.content_type(parts, p)) or table.by_folder(p) or table.by_name(p)
        or table.is_compound_file(parts[p]))}
    for rels in [p for p in parts if p.endswith(".rels")]:
        found |= {partedit.target_of(rels, r) for r in partedit.relationships(parts, rels) if _is_macro_rel(r)}
    return {p for p in found if p in parts and p != partedit.WB}


def strip_macros(parts: dict[str, bytes], source: str) -> dict[str, bytes]:
    """The package without any macro carrier (see the module doc); refuses one with a DDE link."""
    parts = dict(parts)
    _refuse_dde(parts, source)
    drop = carriers(parts)
    sheets_dropped = _drop_macro_sheets(parts, drop)
    for p in drop:
        parts.pop(p, None)
        parts.pop(partedit.rels_name(p), None)
    for rels in [p for p in parts if p.endswith(".rels")]:
        ids = partedit.drop_relationships(
            parts, rels, lambda r, rels=rels: _is_macro_rel(r) or partedit.target_of(rels, r) in drop)
        owner = posixpath.join(posixpath.dirname(posixpath.dirname(rels)), posixpath.basename(rels)[:-5])
        if ids and owner in parts and not owner.endswith((".bin", ".vml")):
            partedit.change(parts, owner, lambda root, ids=ids: _drop_referrers(root, ids))
    _drop_names(parts, sheets_dropped)
    _plain_main(parts)
    partedit.drop_content_types(parts, lambda e: _is_macro_type(e.get("ContentType", "")))
    check(parts, source)
    return parts


def _refuse_dde(parts: dict[str, bytes], source: str) -> None:
    for p in parts:
        if p.startswith("xl/externalLinks/") and p.endswith(".xml"):
            root = partedit.root_of(parts, p)
            if any(etree.QName(e).localname in ("ddeLink", "oleLink") for e in root.iter(etree.Element)):
                raise MacroError(f"{source} holds a DDE/OLE link ({p}); remove it in Excel before exporting")


def _drop_macro_sheets(parts: dict[str, bytes], drop: set[str]) -> list[str]:
    wb = partedit.root_of(parts, partedit.WB)
    rels = {r.get("Id"): partedit.target_of(partedit.WB_RELS, r)
            for r in partedit.relationships(parts, partedit.WB_RELS)}
    at = {i for i, s in enumerate(partedit.sheet_elements(wb))
          if rels.get(s.get(f"{{{partedit.OFFICE_REL}}}id")) in drop}
    return partedit.drop_sheets_at(parts, at) if at else []


def _drop_referrers(root: etree._Element, ids: set[str]) -> None:
    """Elements pointing (r:id) at dropped relationships removed, with the mc:AlternateContent
    around them and a container (oleObjects, controls) left empty."""
    hits = [e for e in root.iter(etree.Element) if e.getparent() is not None and any(
        etree.QName(k).namespace == partedit.OFFICE_REL and v in ids for k, v in e.attrib.items())]
    for e in hits:
        target = e
        for anc in e.iterancestors():
            if etree.QName(anc).namespace == partedit.MC_NS and etree.QName(anc).localname == "AlternateContent":
                target = anc
        parent = target.getparent()
        if parent is None:
            continue
        parent.remove(target)
        if len(parent) == 0 and etree.QName(parent).localname in ("oleObjects", "controls"):
            parent.getparent().remove(parent)


def _drop_names(parts: dict[str, bytes], sheets: list[str]) -> None:
    def bad(dn: etree._Element) -> bool:
        name = (dn.get("name") or "").lower().removeprefix("_xlnm.")
        if name.startswith(AUTO_NAMES) or dn.get("xlm") == "1" or dn.get("function") == "1" \
                or dn.get("vbProcedure") == "1":
            return True
        return bool(sheets) and _refers_to(dn.text or "", sheets)

    def fn(wb: etree._Element) -> None:
        for dn in list(wb.iter(xmlcells.q(wb, "definedName"))):
            if bad(dn):
                dn.getparent().remove(dn)
    partedit.change(parts, partedit.WB, fn)


def _refers_to(formula: str, sheets: list[str]) -> bool:
    """Whether a name's formula has a reference into one of `sheets` (by the tokenizer)."""
    wanted = {s.lower() for s in sheets}
    for tok in Tokenizer("=" + formula).items:
        if tok.type == Token.OPERAND and tok.subtype == Token.RANGE and "!" in tok.value:
            sheet = tok.value.rsplit("!", 1)[0].strip("'").replace("''", "'")
            if any(s.lower() in wanted for s in sheet.split(":")):
                return True
    return False


def _plain_main(parts: dict[str, bytes]) -> None:
    def fn(root: etree._Element) -> None:
        for e in root:
            if e.get("PartName", "").lstrip("/") == partedit.WB:
                e.set("ContentType", partedit.PLAIN_MAIN)
    partedit.change(parts, partedit.CT, fn)


def check(parts: dict[str, bytes], source: str) -> None:
    """Refuse a package that still names a macro type or holds a macro part."""
    defaults, overrides = partedit.content_types(parts)
    left = [t for t in [*defaults.values(), *overrides.values()] if _is_macro_type(t)]
    left += sorted(carriers(parts))
    if left:
        raise MacroError(f"{source}: the e-mail copy would still carry a macro ({left[0]}); nothing was written")
