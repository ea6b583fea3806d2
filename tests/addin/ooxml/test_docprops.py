"""docProps/app.xml follows the sheets the export drops and adds (HeadingPairs counts, TitlesOfParts)."""

from __future__ import annotations

from trainbudget.addin.ooxml import docprops, macrofree, package, partedit

APP = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
       '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties" '
       'xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
       '<Application>Microsoft Excel</Application><HeadingPairs><vt:vector size="4" baseType="variant">'
       '<vt:variant><vt:lpstr>Arbeitsblätter</vt:lpstr></vt:variant><vt:variant><vt:i4>{n}</vt:i4></vt:variant>'
       '<vt:variant><vt:lpstr>Benannte Bereiche</vt:lpstr></vt:variant><vt:variant><vt:i4>3</vt:i4></vt:variant>'
       '</vt:vector></HeadingPairs><TitlesOfParts><vt:vector size="{size}" baseType="lpstr">{sheets}'
       "<vt:lpstr>Budget!Print_Area</vt:lpstr><vt:lpstr>'xlwings.conf'!Print_Area</vt:lpstr>"
       '<vt:lpstr>Params</vt:lpstr></vt:vector></TitlesOfParts></Properties>')


def _app(sheets: list[str]) -> bytes:
    titles = "".join(f"<vt:lpstr>{s}</vt:lpstr>" for s in sheets)
    return APP.format(n=len(sheets), size=len(sheets) + 3, sheets=titles).encode()


def _titles(parts: dict[str, bytes]) -> tuple[list[str], list[tuple[str, int]]]:
    root = package.parse("docProps/app.xml", parts["docProps/app.xml"])
    vt = f"{{{docprops.VT}}}"
    titles = [t.text for t in root.iter(f"{vt}lpstr") if t.getparent().getparent().tag.endswith("TitlesOfParts")]
    pairs = root.find(f"{{{docprops.EP}}}HeadingPairs/{vt}vector")
    names = [v[0].text for v in pairs[::2]]
    counts = [int(v[0].text) for v in pairs[1::2]]
    assert int(pairs.get("size")) == len(pairs)
    assert int(root.find(f"{{{docprops.EP}}}TitlesOfParts/{vt}vector").get("size")) == len(titles) == sum(counts)
    return titles, list(zip(names, counts, strict=True))


def _parts(built) -> tuple[dict[str, bytes], list[str]]:
    parts = package.read_parts(built.path)
    sheets = [e.get("name") for e in partedit.sheet_elements(partedit.root_of(parts, partedit.WB))]
    parts["docProps/app.xml"] = _app(sheets)
    return parts, sheets


def test_dropping_the_conf_sheet_drops_its_titles(built):
    parts, sheets = _parts(built)
    assert "xlwings.conf" in sheets
    out = partedit.drop_sheet(parts, "xlwings.conf")
    titles, pairs = _titles(out)
    assert titles == [s for s in sheets if s != "xlwings.conf"] + ["Budget!Print_Area", "Params"]
    assert pairs == [("Arbeitsblätter", len(sheets) - 1), ("Benannte Bereiche", 2)]
    assert out["docProps/app.xml"].startswith(b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n')


def test_the_export_copy_lists_exactly_its_sheets(built):
    """What the export does to the parts before LibreOffice: macros out, conf sheet out, a
    Devices sheet in when missing; the app part names the sheets the workbook has."""
    parts, _ = _parts(built)
    parts = partedit.drop_sheet(macrofree.strip_macros(parts, "t.xlsm"), "xlwings.conf")
    before = [e.get("name") for e in partedit.sheet_elements(partedit.root_of(parts, partedit.WB))]
    parts = partedit.add_table_sheet(parts, "Devices2", "Devices2", [["a"], [1.0]])
    after = [e.get("name") for e in partedit.sheet_elements(partedit.root_of(parts, partedit.WB))]
    titles, pairs = _titles(parts)
    assert after == [*before, "Devices2"] and titles[:len(after)] == after
    assert pairs[0] == ("Arbeitsblätter", len(after))


def test_an_app_part_of_another_shape_is_left_alone(built):
    parts, _ = _parts(built)
    parts["docProps/app.xml"] = parts["docProps/app.xml"].replace(b"<vt:i4>3</vt:i4>", b"<vt:i4>9</vt:i4>")
    before = parts["docProps/app.xml"]
    assert partedit.drop_sheet(parts, "xlwings.conf")["docProps/app.xml"] == before
