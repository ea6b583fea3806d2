"""The one table of macro carriers: what export takes out (macrofree) and verify reports (verify.macros).

A part is a carrier when its content type ([Content_Types].xml), a relationship type pointing at
it, the folder it is stored in, or its bytes (the compound-file magic D0 CF 11 E0 A1 B1 1A E1,
[MS-CFB] §2.2) say so: whichever an attacker forgot to disguise gives it away. Types and
relationship types: ECMA-376 Part 1 §15.2 (package parts), [MS-OFFMACRO2] §2.2 (VBA project,
signature, macro sheets, Word VBA data), [MS-XLSX] §2.1 (attached toolbars, dialog sheets),
[MS-OE376] / ECMA-376 Part 1 §15.2.9 (ActiveX controls), §15.2.10 (embedded packages), §15.2.13
(OLE objects). Matching is case-insensitive; a content type matches by prefix, so a `+xml` or
`.main+xml` variant is caught with its base.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

CFB_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")  # [MS-CFB] §2.2 header signature


@dataclass(frozen=True)
class Carrier:
    """One kind of macro carrier and every way a package names it (lower case)."""

    kind: str                      # what verify calls it: "VBA project", "ActiveX control", ...
    rels: tuple[str, ...]          # relationship types, their last path segment
    types: tuple[str, ...]         # content types, matched as prefixes
    folders: tuple[str, ...] = ()  # part-name prefixes
    reported: bool = True          # verify reports it (a signature holds no code: export drops it, verify not)


CARRIERS: tuple[Carrier, ...] = (
    Carrier("VBA project", ("vbaproject",), ("application/vnd.ms-office.vbaproject",)),
    Carrier("VBA project signature", ("vbaprojectsignature", "vbaprojectsignatureagile", "vbaprojectsignaturev3"),
            ("application/vnd.ms-office.vbaprojectsignature",), reported=False),
    Carrier("Word VBA data", ("wordvbadata",), ("application/vnd.ms-word.vbadata",)),
    Carrier("Excel 4.0 macro sheet", ("xlmacrosheet", "xlintlmacrosheet"),
            ("application/vnd.ms-excel.macrosheet", "application/vnd.ms-excel.intlmacrosheet"),
            ("xl/macrosheets/",)),
    Carrier("Excel 5.0 dialog sheet", ("dialogsheet",),
            ("application/vnd.openxmlformats-officedocument.spreadsheetml.dialogsheet",), ("xl/dialogsheets/",)),
    Carrier("ActiveX control", ("control", "activexcontrol", "activexcontrolbinary"),
            ("application/vnd.ms-office.activex",), ("xl/activex/",)),
    Carrier("OLE object", ("oleobject",), ("application/vnd.openxmlformats-officedocument.oleobject",),
            ("xl/embeddings/",)),
    Carrier("embedded package (OLE)", ("package",), ()),
    Carrier("attached toolbars", ("attachedtoolbars",), ("application/vnd.ms-excel.attachedtoolbars",)),
)
# The macro-enabled main part's content types ([MS-XLSX] §2.1.2): no carrier, but an e-mail copy
# must not say it is one (export writes the plain type instead).
MACRO_ENABLED = ("application/vnd.ms-excel.sheet.macroenabled", "application/vnd.ms-excel.template.macroenabled",
                 "application/vnd.ms-excel.addin.macroenabled")
# Defined names that run a macro by themselves when the workbook opens or closes (Excel's auto
# macros; Workbook_Open is the event's procedure name), and VBA procedures that do (vba_check).
AUTO_RUN_NAMES = ("auto_open", "auto_close", "auto_activate", "auto_deactivate", "workbook_open")
AUTO_RUN_PROCEDURES = (*AUTO_RUN_NAMES, "workbook_beforeclose", "workbook_activate", "document_open")


def by_type(content_type: str) -> str | None:
    """The carrier kind a content type names, or None."""
    ct = content_type.strip().lower()
    return next((c.kind for c in CARRIERS if ct.startswith(c.types)), None) if ct else None


def by_rel(rel_type: str) -> str | None:
    """The carrier kind a relationship type (a full URI or its last segment) names, or None."""
    last = rel_type.rsplit("/", 1)[-1].lower()
    return next((c.kind for c in CARRIERS if last in c.rels), None)


def by_folder(part: str) -> str | None:
    """The carrier kind the folder of part `part` names, or None."""
    name = part.lower()
    return next((c.kind for c in CARRIERS if name.startswith(c.folders)), None) if name else None


def by_name(part: str) -> str | None:
    """A VBA project by its usual file name (vbaProject*.bin) wherever it is stored, or None."""
    return "VBA project" if posixpath.basename(part).lower().startswith("vbaproject") else None


def is_compound_file(data: bytes) -> bool:
    """Whether a part's bytes are an OLE compound file ([MS-CFB]): VBA, OLE objects, ActiveX binaries."""
    return data[:8] == CFB_MAGIC


def is_macro_type(content_type: str) -> bool:
    """A carrier's content type, or a macro-enabled main part's."""
    return by_type(content_type) is not None or content_type.strip().lower().startswith(MACRO_ENABLED)
