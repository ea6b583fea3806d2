"""Which sheets LibreOffice need not recalculate: a sheet that no other sheet's formula
and no defined name reads is given to it empty, so a million rows that only travel along are not
recalculated. Used by export (the sheets it only copies) and verify (sheets its byte search proves
plain: every formula cached, no error, nothing for its text checks)."""

from __future__ import annotations

from openpyxl.formula.tokenizer import Token, Tokenizer, TokenizerError

from . import package, partedit, xmlcells


def has_table(data: bytes) -> bool:
    """Whether worksheet part `data` has a table: a table is read by its name (Devices[Name]),
    which names no sheet, so such a sheet always counts as read."""
    return b"tablePart" in data


EMPTY_SHEET = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="'
               + xmlcells.MAIN.encode() + b'"><sheetData/></worksheet>')


def referenced_sheets(parts: dict[str, bytes], copied: set[str]) -> set[str]:
    """The sheets of `copied` that a formula of another sheet or a defined name reads (every one
    of them when a formula uses INDIRECT or a 3-D reference, which name sheets only when run)."""
    texts: list[str] = []
    wb = partedit.root_of(parts, partedit.WB)
    texts += [dn.text or "" for dn in wb.iter(xmlcells.q(wb, "definedName"))]
    for sheet, part in package.sheet_parts(parts).items():
        if sheet not in copied:
            root = package.parse(part, parts[part])
            texts += [f.text for f in root.iter(xmlcells.q(root, "f")) if f.text]
    lower = {c.lower(): c for c in copied}
    found: set[str] = set()
    for text in texts:
        try:
            items = Tokenizer("=" + text).items
        except TokenizerError:
            return set(copied)
        for tok in items:
            if tok.type == Token.FUNC and tok.value.upper().startswith("INDIRECT"):
                return set(copied)
            if tok.type != Token.OPERAND or tok.subtype != Token.RANGE or "!" not in tok.value:
                continue
            sheet = tok.value.rpartition("!")[0]
            sheet = sheet[1:-1].replace("''", "'") if sheet.startswith("'") and sheet.endswith("'") else sheet
            if ":" in sheet:
                return set(copied)
            if sheet.lower() in lower:
                found.add(lower[sheet.lower()])
    return found


def for_recalculation(parts: dict[str, bytes], copied: set[str]) -> tuple[dict[str, bytes], set[str]]:
    """(the parts LibreOffice recalculates, the sheets emptied in them): a copied sheet nothing
    else reads is given to LibreOffice empty, so a million rows only copied are not recalculated."""
    sheets = package.sheet_parts(parts)
    emptied = {s for s in copied if not has_table(parts[sheets[s]])}
    emptied -= referenced_sheets(parts, emptied) if emptied else set()
    blank = {sheets[s] for s in emptied}
    return {n: (EMPTY_SHEET if n in blank else d) for n, d in parts.items()}, emptied
