"""Macro carriers, auto-run names, links and data queries in a workbook package, found part by part.

A part is a carrier when the one carrier table (ooxml.carriers, which export's macrofree drops by)
says so by its content type, a relationship type pointing at it, its folder, its file name or its
bytes (the compound-file magic): whichever one an attacker forgot to disguise gives it away. The one VBA project a
.xlsm may carry (xl/vbaProject.bin, the workbook's vbaProject relationship) is checked module by
module (vba_check); every other carrier is a finding. One Problem per finding, located by part,
sheet cell or defined name. The parts come from the package layer (ooxml.package: bounded reads,
the safe parser that refuses any DOCTYPE).
"""

from __future__ import annotations

import io
import posixpath

import olefile

from ..ooxml import carriers, xmlcells
from ..ooxml.package import parse, resolve
from . import formula_text, vba_check
from .problems import Problem

CT = "{http://schemas.openxmlformats.org/package/2006/content-types}"
PREL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
RID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
PROJECT = "xl/vbaProject.bin"
AUTO_NAMES = carriers.AUTO_RUN_NAMES


def content_types(parts: dict[str, bytes]) -> dict[str, str]:
    """Part name -> content type (Override, else Default by extension)."""
    if "[Content_Types].xml" not in parts:
        return {}
    root = parse("[Content_Types].xml", parts["[Content_Types].xml"])
    defaults = {d.get("Extension", "").lower(): d.get("ContentType", "") for d in root.iter(f"{CT}Default")}
    overrides = {o.get("PartName", "").lstrip("/"): o.get("ContentType", "") for o in root.iter(f"{CT}Override")}
    return {n: overrides.get(n) or defaults.get(n.rsplit(".", 1)[-1].lower(), "") for n in parts}


def relationships(parts: dict[str, bytes]) -> list[tuple[str, str, str, str]]:
    """(source part, relationship type's last segment, Id, target part or external URL) for every
    relationship in the package."""
    found = []
    for name in parts:
        if not name.endswith(".rels"):
            continue
        folder, base = posixpath.split(name)
        source_dir = posixpath.dirname(folder)
        source = posixpath.join(source_dir, base[:-5])
        for r in parse(name, parts[name]).iter(f"{PREL}Relationship"):
            target = r.get("Target", "")
            if r.get("TargetMode") != "External":
                target = resolve(source_dir, target)
            found.append((source, r.get("Type", "").rsplit("/", 1)[-1], r.get("Id", ""), target))
    return found


def _cfb_kind(data: bytes) -> str:
    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            return "VBA project" if ole.exists("VBA/dir") or ole.exists("_VBA_PROJECT_CUR") else "OLE compound file"
    except OSError:
        return "OLE compound file"


def scan(parts: dict[str, bytes], macro_enabled: bool, formulas: bool = True) -> list[Problem]:
    """Every macro carrier, auto-run name, DDE, link and data query in the package; the sheets'
    formulas too unless `formulas` is False (verify checks them in its own pass over the cells)."""
    types, rels = content_types(parts), relationships(parts)
    project = next((t for s, kind, _, t in rels if s == "xl/workbook.xml" and kind == "vbaProject"), None)
    problems = _carriers(parts, types, rels, project if macro_enabled else None)
    if macro_enabled and project == PROJECT and PROJECT in parts:
        problems += vba_check.check(parts[PROJECT], PROJECT)
    elif macro_enabled and not (project and project in parts):
        problems.append(Problem(PROJECT, "the VBA project is missing (the template ships xlwings' quickstart project)"))
    problems += _names(parts) + (_formulas(parts, _sheets(parts, rels)) if formulas else []) + _assigned_macros(parts)
    return problems + _external_links(parts, rels) + _connections(parts, types)


def _sheets(parts: dict[str, bytes], rels: list[tuple[str, str, str, str]]) -> dict[str, str]:
    """Part name -> sheet name, for every <sheet> of workbook.xml."""
    if "xl/workbook.xml" not in parts:
        return {}
    by_id = {rid: target for source, _, rid, target in rels if source == "xl/workbook.xml"}
    book = parse("xl/workbook.xml", parts["xl/workbook.xml"])
    return {by_id.get(s.get(RID), ""): s.get("name", "") for s in book.iter(f"{MAIN}sheet")}


def _kind(name: str, data: bytes, content_type: str, rel: tuple[str, str] | None) -> tuple[str | None, list[str]]:
    """The carrier kind of one part (ooxml.carriers) and the evidence for it."""
    evidence, kinds = [], []
    for kind, said in ((carriers.by_type(content_type), f"content type {content_type}"),
                       (rel and carriers.by_rel(rel[0]), rel and f"{rel[0]} relationship from {rel[1]}"),
                       (carriers.by_folder(name), f"stored in {posixpath.dirname(name)}/"),
                       (carriers.by_name(name), "named like a VBA project")):
        if kind:
            kinds.append(kind)
            evidence.append(said)
    if carriers.is_compound_file(data):
        cfb = _cfb_kind(data)
        kinds.insert(0 if cfb == "VBA project" else len(kinds), cfb)
        evidence.append(f"an OLE compound file{' holding VBA code' if cfb == 'VBA project' else ''}")
    return (kinds[0] if kinds else None), evidence


def _carriers(parts: dict[str, bytes], types: dict[str, str], rels: list[tuple[str, str, str, str]],
              allowed: str | None) -> list[Problem]:
    by_target = {t: (kind, s) for s, kind, _, t in rels if carriers.by_rel(kind)}
    sheets = _sheets(parts, rels)
    problems = [Problem(source, f"{carriers.by_rel(kind)} relationship to something outside the package: "
                                f"{target[:80]}")
                for target, (kind, source) in by_target.items() if target not in parts]
    silent = {c.kind for c in carriers.CARRIERS if not c.reported}
    for name, data in parts.items():
        if (name == allowed and name == PROJECT) or "/_rels/" in f"/{name}":
            continue
        kind, evidence = _kind(name, data, types.get(name, ""), by_target.get(name))
        if kind and kind not in silent:
            sheet = f" (sheet {sheets[name]!r})" if name in sheets else ""
            problems.append(Problem(name, f"{kind}{sheet} the template does not ship: {', '.join(evidence)}"))
    return problems


def _names(parts: dict[str, bytes]) -> list[Problem]:
    if "xl/workbook.xml" not in parts:
        return []
    problems = []
    for dn in parse("xl/workbook.xml", parts["xl/workbook.xml"]).iter(f"{MAIN}definedName"):
        name, formula = dn.get("name", ""), dn.text or ""
        where = f"xl/workbook.xml (name {name})"
        bare = name.casefold().removeprefix("_xlnm.")
        if bare.startswith(AUTO_NAMES):
            problems.append(Problem(where, f"defined name {name!r} runs a macro by itself when the workbook "
                                           f"opens or closes: {formula[:60]}"))
        elif any(dn.get(a) in ("1", "true") for a in ("xlm", "vbProcedure", "function")):
            problems.append(Problem(where, f"defined name {name!r} is a macro name: {formula[:60]}"))
        problems += _formula_problems(where, formula)
    return problems


def _formula_problems(where: str, formula: str) -> list[Problem]:
    return formula_text.problems(where, formula)


def _formulas(parts: dict[str, bytes], sheets: dict[str, str]) -> list[Problem]:
    """Every formula's text (formula_text), each sheet read as a stream (xmlcells.stream: no tree)."""
    problems = []
    for part, sheet in sheets.items():
        if part not in parts or not part.startswith("xl/worksheets/"):
            continue
        for cell in xmlcells.stream(part, parts[part], formulas_only=True):
            if cell.formula:
                problems += formula_text.problems(f"{sheet}!{cell.ref}", cell.formula)
    return problems


def _assigned_macros(parts: dict[str, bytes]) -> list[Problem]:
    """Shapes and form controls that run a macro when clicked: a drawing object's `macro` attribute
    (ECMA-376 Part 1 §20.5.2: sp, graphicFrame, pic, cxnSp) and a form control's `fmlaMacro`
    (MS-XLSX, CT_FormControlPr in xl/ctrlProps). The macro may
    live in another workbook ('C:\\x.xlsm'!Run), out of reach of the VBA check."""
    problems = []
    for name in parts:
        if not (name.startswith(("xl/drawings/", "xl/ctrlProps/")) and name.endswith(".xml")):
            continue
        for el in parse(name, parts[name]).iter():
            macro = el.get("macro") or el.get("fmlaMacro")
            if macro:
                problems.append(Problem(name, f"a shape or control runs macro {macro[:80]!r} when clicked"))
    return problems


def _external_links(parts: dict[str, bytes], rels: list[tuple[str, str, str, str]]) -> list[Problem]:
    problems = []
    for name in parts:
        if not (name.startswith("xl/externalLinks/") and name.endswith(".xml")):
            continue
        root = parse(name, parts[name])
        targets = {rid: t for s, _, rid, t in rels if s == name}
        dde = root.find(f"{MAIN}ddeLink")
        ole = root.find(f"{MAIN}oleLink")
        book = root.find(f"{MAIN}externalBook")
        if dde is not None:
            what = f"DDE link (asks another program): {dde.get('ddeService')}|{dde.get('ddeTopic')}"
        elif ole is not None:
            what = f"OLE link to {ole.get('progId')}: {targets.get(ole.get(RID), '?')}"
        elif book is not None:
            what = f"link to another workbook: {targets.get(book.get(RID), '?')}"
        else:
            what = "external link"
        problems.append(Problem(name, what[:120]))
    return problems


def _connections(parts: dict[str, bytes], types: dict[str, str]) -> list[Problem]:
    problems = []
    for name in parts:
        if name.startswith("xl/queryTables/") and name.endswith(".xml"):
            root = parse(name, parts[name])
            problems.append(Problem(name, f"query table {root.get('name')!r} refreshes from data connection "
                                          f"{root.get('connectionId')}"))
        elif name == "xl/connections.xml" or types.get(name, "").endswith("spreadsheetml.connections+xml"):
            for c in parse(name, parts[name]).iter(f"{MAIN}connection"):
                web = c.find(f"{MAIN}webPr")
                what = (f"web query to {web.get('url')}" if web is not None
                        else f"data connection (type {c.get('type')})")
                problems.append(Problem(f"{name} (connection {c.get('id')})",
                                        f"{what[:100]} named {c.get('name')!r}: fetches data from outside"))
    return problems
