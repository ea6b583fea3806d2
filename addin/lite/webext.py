"""The parts xlwings Lite reads: a webextension part naming the store add-in and carrying main.py
and requirements.txt, the task pane that shows it, their relationships and content types.

Shape as in workbooks saved by xlwings Lite 1.0.0.0-11 and -18 (../shared/reference/xlwings-lite.md
§1.1, six samples in github.com/amararun/xlwings-lite-apps-codes-docs at f90d89d): the code lives
in Office.js document settings, which Excel keeps as `we:property` elements whose values are
JSON-encoded strings ([MS-OWEXML] CT_OsfWebExtensionProperty,
https://learn.microsoft.com/en-us/openspecs/office_file_formats/ms-owemxml/4b94ac5d-a8df-44f4-8433-81d43e35a2d7;
Office.Settings, https://learn.microsoft.com/javascript/api/office/office.settings).
"""

from __future__ import annotations

import json
import uuid

from lxml import etree

from ... import calc
from ..ooxml import package, partedit

# xlwings Lite's AppSource asset id (README of github.com/xlwings/xlwings-lite:
# https://appsource.microsoft.com/en-in/product/office/WA200008175).
STORE_ID = "WA200008175"
STORE_VERSION = "1.0.0.0"  # as the Lite-saved samples carry it
STORE_MARKET = "en-US"  # the author's market; the alternate reference carries the asset id itself
WE_NS = "http://schemas.microsoft.com/office/webextensions/webextension/2010/11"
TP_NS = "http://schemas.microsoft.com/office/webextensions/taskpanes/2010/11"
A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
MS_REL = "http://schemas.microsoft.com/office/2011/relationships"
WEBEXT, TASKPANES = "xl/webextensions/webextension1.xml", "xl/webextensions/taskpanes.xml"
WEBEXT_CT = "application/vnd.ms-office.webextension+xml"
TASKPANES_CT = "application/vnd.ms-office.webextensiontaskpanes+xml"
ROOT_RELS = "_rels/.rels"
# extLst entries of a workbook that uses @func, as the samples carry them
CUSTOM_FUNCTIONS_EXT = "{D87F86FE-615C-45B5-9D79-34F1136793EB}"
FUNCTION_IDS_EXT = "{7C84B067-C214-45C3-A712-C9D94CD141B2}"
# Lite's own packages, marked "# required" as Lite writes them (samples' requirements.txt). No exact
# versions: Lite records what it installed in requirements-pinned.txt, so "you usually don't want to
# pin an exact version in requirements.txt. What you might want to do is to specify an upper bound,
# e.g., xlwings<1.0.0" (https://lite.xlwings.org/dependencies.md). xlwings' lower bound: the oldest
# release the Office.js decorators were checked with (0.33.20, what new Lite workbooks defaulted to
# in changelog 1.0.0.0-24; tests/addin/lite/test_lite_runtime.py runs 0.37.8).
REQUIRED = ("xlwings>=0.33.20,<1.0.0", "python-dotenv", "pyodide-http", "black")
# numpy comes from Pyodide, so unpinned: "don't pin it" (https://lite.xlwings.org/dependencies)
OURS = ("numpy",)


def requirements_txt() -> str:
    """requirements.txt as Lite keeps it: its own lines marked required, then ours."""
    return "".join([*(f"{r}  # required\n" for r in REQUIRED), *(f"{r}\n" for r in OURS)])


def _we(tag: str) -> str:
    return f"{{{WE_NS}}}{tag}"


def webextension_xml(files: dict[str, str]) -> bytes:
    """webextension1.xml referencing the store add-in, each of `files` a JSON-string property."""
    root = etree.Element(_we("webextension"), nsmap={"we": WE_NS})
    # a stable id, so that building twice gives the same part
    root.set("id", "{" + str(uuid.uuid5(uuid.NAMESPACE_URL, "trainbudget/xlwings-lite")).upper() + "}")
    etree.SubElement(root, _we("reference"), id=STORE_ID.lower(), version=STORE_VERSION, store=STORE_MARKET,
                     storeType="OMEX")
    alternates = etree.SubElement(root, _we("alternateReferences"))
    etree.SubElement(alternates, _we("reference"), id=STORE_ID, version=STORE_VERSION, store=STORE_ID,
                     storeType="OMEX")
    props = etree.SubElement(root, _we("properties"))
    for name, text in files.items():
        etree.SubElement(props, _we("property"), name=name, value=json.dumps(text))
    etree.SubElement(root, _we("bindings"))
    etree.SubElement(root, _we("snapshot"), nsmap={"r": R_NS})
    ext_list = etree.SubElement(root, _we("extLst"))
    for uri, tag in ((CUSTOM_FUNCTIONS_EXT, "containsCustomFunctions"), (FUNCTION_IDS_EXT, "customFunctionIdList")):
        ext = etree.SubElement(ext_list, f"{{{A_NS}}}ext", nsmap={"a": A_NS}, uri=uri)
        etree.SubElement(ext, _we(tag))
    return package.serialize(root, standalone=True)


def taskpanes_xml() -> bytes:
    """taskpanes.xml: the Lite pane docked right, visible, so Excel offers the add-in on opening
    (the samples, saved with the pane closed, say visibility="0")."""
    root = etree.Element(f"{{{TP_NS}}}taskpanes", nsmap={"wetp": TP_NS})
    pane = etree.SubElement(root, f"{{{TP_NS}}}taskpane", dockstate="right", visibility="1", width="438",
                            row="3")
    etree.SubElement(pane, f"{{{TP_NS}}}webextensionref", {f"{{{R_NS}}}id": "rId1"}, nsmap={"r": R_NS})
    return package.serialize(root, standalone=True)


def _relationship(parts: dict[str, bytes], rels: str, rel_type: str, target: str, rid: str | None = None) -> None:
    parts.setdefault(rels, partedit.empty_rels())
    taken = {r.get("Id") for r in partedit.relationships(parts, rels)}
    rid = rid or next(f"rId{n}" for n in range(1, len(taken) + 2) if f"rId{n}" not in taken)

    def fn(root: etree._Element) -> None:
        etree.SubElement(root, f"{{{partedit.PR_NS}}}Relationship", Id=rid, Type=f"{MS_REL}/{rel_type}",
                         Target=target)
    partedit.change(parts, rels, fn)


def add_parts(parts: dict[str, bytes], main_py: str, requirements: str) -> dict[str, bytes]:
    """`parts` with the Lite parts, relationships and content types added (refused if present)."""
    parts = dict(parts)
    if any(p.lower().startswith("xl/webextensions/") for p in parts):
        raise calc.TrainingBudgetError("the workbook already carries a web add-in (xl/webextensions/)")
    parts[WEBEXT] = webextension_xml({"main.py": main_py, "requirements.txt": requirements})
    parts[TASKPANES] = taskpanes_xml()
    _relationship(parts, partedit.rels_name(TASKPANES), "webextension", "webextension1.xml", "rId1")
    _relationship(parts, ROOT_RELS, "webextensiontaskpanes", TASKPANES)
    partedit.add_override(parts, WEBEXT, WEBEXT_CT)
    partedit.add_override(parts, TASKPANES, TASKPANES_CT)
    return parts


def read_files(parts: dict[str, bytes]) -> dict[str, str]:
    """The JSON-string properties of the webextension part, decoded (name -> file text)."""
    root = package.parse(WEBEXT, parts[WEBEXT])
    return {p.get("name"): json.loads(p.get("value")) for p in root.iter(_we("property"))}
