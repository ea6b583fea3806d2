"""Writes the handcrafted fixtures: zip packages whose XML is typed here as Excel 365 and the
Open XML SDK write it (prefixes, mc:Ignorable, shared formulas, notes). Nothing of trainbudget
is imported: the parts are literal text; the cached values are those Excel with the add-in saved
(TRAIN_BUDGET's row 1 column 2 is the weights' GB per device: 2 bytes x params / 1e9).
Run once: python tests/data/handcrafted.py (the .xlsx files are committed)."""

import zipfile
from pathlib import Path

HERE = Path(__file__).parent
D = "H100 SXM, BF16 tensor core, dense"
DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_R = "http://schemas.openxmlformats.org/package/2006/relationships"
MC = ('xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
      'xmlns:x14ac="http://schemas.microsoft.com/office/spreadsheetml/2009/9/ac" '
      'xmlns:xr="http://schemas.microsoft.com/office/spreadsheetml/2014/revision" '
      'xmlns:xr2="http://schemas.microsoft.com/office/spreadsheetml/2015/revision2" '
      'xmlns:xr3="http://schemas.microsoft.com/office/spreadsheetml/2016/revision3" mc:Ignorable="x14ac xr xr2 xr3"')
CT_SHEET = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
STYLES = (DECL + f'<styleSheet xmlns="{MAIN}"><fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>'
          '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/>'
          '</fill></fills><borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
          '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
          '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>'
          '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>')
HOURS = {1e9: 1.684352366515075, 7e9: 11.790466565605525, 13e9: 21.896580764695976}  # TRAIN_HOURS(p,1E9,D)


def content_types(overrides: dict[str, str], vml: bool = False) -> str:
    o = "".join(f'<Override PartName="/{p}" ContentType="{t}"/>' for p, t in overrides.items())
    v = ('<Default Extension="vml" ContentType="application/vnd.openxmlformats-officedocument.vmlDrawing"/>'
         if vml else "")
    return (DECL + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            f'<Default Extension="xml" ContentType="application/xml"/>{v}'
            '<Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/styles.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' + o + '</Types>')


def rels(items: list[tuple[str, str, str]]) -> str:
    body = "".join(f'<Relationship Id="{i}" Type="{R}/{t}" Target="{target}"/>' for i, t, target in items)
    return DECL + f'<Relationships xmlns="{PKG_R}">{body}</Relationships>'


ROOT_RELS = rels([("rId1", "officeDocument", "xl/workbook.xml")])


def workbook(names: list[str]) -> str:
    sheets = "".join(f'<sheet name="{n}" sheetId="{i}" r:id="rId{i}"/>' for i, n in enumerate(names, 1))
    return (DECL + f'<workbook xmlns="{MAIN}" xmlns:r="{R}" {MC}><fileVersion appName="xl" lastEdited="7" '
            'lowestEdited="7" rupBuild="27328"/><workbookPr defaultThemeVersion="202300"/><bookViews>'
            '<workbookView xWindow="-120" yWindow="-120" windowWidth="29040" windowHeight="15720" activeTab="0"/>'
            f'</bookViews><sheets>{sheets}</sheets><calcPr calcId="191029"/></workbook>')


def sheet(rows: str, tail: str = "") -> str:
    return (DECL + f'<worksheet xmlns="{MAIN}" xmlns:r="{R}" {MC} xr:uid="{{00000000-0001-0000-0000-000000000000}}">'
            '<dimension ref="A1:E4"/><sheetViews><sheetView workbookViewId="0"/></sheetViews>'
            '<sheetFormatPr defaultRowHeight="15" x14ac:dyDescent="0.25"/>'
            f'<sheetData>{rows}</sheetData><pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" '
            f'header="0.3" footer="0.3"/>{tail}</worksheet>')


def row(r: int, cells: str) -> str:
    return f'<row r="{r}" spans="1:5" x14ac:dyDescent="0.25">{cells}</row>'


def write(name: str, parts: dict[str, str]) -> None:
    with zipfile.ZipFile(HERE / name, "w", zipfile.ZIP_DEFLATED) as z:
        for n, text in parts.items():
            z.writestr(n, text.encode("utf-8"))


def excel_modern() -> None:
    """Excel 365: fill-downs saved as shared formulas, XLOOKUP and LET with cached values, a
    sheet-qualified argument pointing at a blank cell."""
    q = "&quot;"
    rows = row(1, '<c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c>'
                  '<c r="D1" t="s"><v>3</v></c>')
    for r, p in ((2, 1e9), (3, 7e9), (4, 13e9)):
        b = (f'<f t="shared" ref="B2:B4" si="0">INDEX(TRAIN_BUDGET(A2,1000000000,{q}{D}{q}),1,2)</f>'
             if r == 2 else '<f t="shared" si="0"/>')
        c = (f'<f t="shared" ref="C2:C4" si="1">TRAIN_HOURS(A2,1000000000,{q}{D}{q})</f>'
             if r == 2 else '<f t="shared" si="1"/>')
        extra = {2: '<c r="D2"><f>_xlfn.XLOOKUP(A3,A2:A4,B2:B4)</f><v>14</v></c>',
                 3: '<c r="D3"><f>_xlfn.LET(_xlpm.x,A2,_xlpm.x*2)</f><v>2000000000</v></c>',
                 4: f'<c r="E4"><f>TRAIN_HOURS(A4,1000000000,{q}{D}{q},Other!D1)</f><v>{HOURS[13e9]!r}</v></c>'}[r]
        rows += row(r, f'<c r="A{r}"><v>{int(p)}</v></c><c r="B{r}">{b}<v>{int(2 * p / 1e9)}</v></c>'
                       f'<c r="C{r}">{c}<v>{HOURS[p]!r}</v></c>{extra}')
    strings = ["params", "weights GB", "hours", "lookup"]
    sst = (DECL + f'<sst xmlns="{MAIN}" count="{len(strings)}" uniqueCount="{len(strings)}">'
           + "".join(f"<si><t>{s}</t></si>" for s in strings) + "</sst>")
    write("excel_modern.xlsx", {
        "[Content_Types].xml": content_types({
            "xl/worksheets/sheet1.xml": CT_SHEET, "xl/worksheets/sheet2.xml": CT_SHEET,
            "xl/sharedStrings.xml": "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"}),
        "_rels/.rels": ROOT_RELS,
        "xl/workbook.xml": workbook(["Plan", "Other"]),
        "xl/_rels/workbook.xml.rels": rels([("rId1", "worksheet", "worksheets/sheet1.xml"),
                                            ("rId2", "worksheet", "worksheets/sheet2.xml"),
                                            ("rId3", "styles", "styles.xml"),
                                            ("rId4", "sharedStrings", "sharedStrings.xml")]),
        "xl/worksheets/sheet1.xml": sheet(rows),
        "xl/worksheets/sheet2.xml": sheet(row(1, '<c r="A1" t="inlineStr"><is><t>D1 is blank</t></is></c>')),
        "xl/styles.xml": STYLES, "xl/sharedStrings.xml": sst})


def sdk_prefixed() -> None:
    """Open XML SDK 2.x: the main namespace under the prefix x, relationship ids like R3f..., no
    cached value for a new formula."""
    x = f'xmlns:x="{MAIN}"'
    wb = (DECL + f'<x:workbook {x} xmlns:r="{R}"><x:sheets><x:sheet name="Plan" sheetId="1" r:id="R3fa1"/>'
          '</x:sheets></x:workbook>')
    data = (f'<x:row r="1"><x:c r="A1"><x:v>7000000000</x:v></x:c><x:c r="B1"><x:f>TRAIN_HOURS(A1,1E9,"{D}")'
            '</x:f></x:c></x:row>'
            f'<x:row r="2"><x:c r="B2"><x:f>INDEX(TRAIN_BUDGET(A1,1E9,"{D}"),1,2)</x:f><x:v>14</x:v></x:c></x:row>')
    ws = (DECL + f'<x:worksheet {x} xmlns:r="{R}"><x:sheetData>{data}</x:sheetData></x:worksheet>')
    write("sdk_prefixed.xlsx", {
        "[Content_Types].xml": content_types({"xl/worksheets/sheet1.xml": CT_SHEET}).replace(
            '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'spreadsheetml.styles+xml"/>', ""),
        "_rels/.rels": rels([("R0b1c", "officeDocument", "/xl/workbook.xml")]),
        "xl/workbook.xml": wb,
        "xl/_rels/workbook.xml.rels": rels([("R3fa1", "worksheet", "/xl/worksheets/sheet1.xml")]),
        "xl/worksheets/sheet1.xml": ws})


def _vml(block: int, shapes: list[tuple[int, int, int]]) -> str:
    body = "".join(
        f'<v:shape id="_x0000_s{sid}" type="#_x0000_t202" style="position:absolute;margin-left:59.25pt;'
        'margin-top:1.5pt;width:108pt;height:59.25pt;z-index:1;visibility:hidden" fillcolor="infoBackground [80]"'
        ' strokecolor="none [81]" o:insetmode="auto"><v:fill color2="infoBackground [80]"/>'
        '<v:shadow color="none [81]" obscured="t"/><v:path o:connecttype="none"/>'
        '<v:textbox style="mso-direction-alt:auto"><div style="text-align:left"></div></v:textbox>'
        '<x:ClientData ObjectType="Note"><x:MoveWithCells/><x:SizeWithCells/><x:AutoFill>False</x:AutoFill>'
        f'<x:Row>{r}</x:Row><x:Column>{c}</x:Column></x:ClientData></v:shape>' for sid, r, c in shapes)
    return ('<xml xmlns:v="urn:schemas-microsoft-com:vml"\r\n xmlns:o="urn:schemas-microsoft-com:office:office"\r\n'
            ' xmlns:x="urn:schemas-microsoft-com:office:excel">\r\n <o:shapelayout v:ext="edit">\r\n'
            f'  <o:idmap v:ext="edit" data="{block}"/>\r\n </o:shapelayout><v:shapetype id="_x0000_t202" '
            'coordsize="21600,21600" o:spt="202"\r\n  path="m,l,21600r21600,l21600,xe">\r\n'
            '  <v:stroke joinstyle="miter"/>\r\n  <v:path gradientshapeok="t" o:connecttype="rect"/>\r\n'
            f' </v:shapetype>{body}</xml>')


def _comments(notes: dict[str, str]) -> str:
    body = "".join(f'<comment ref="{ref}" authorId="0" shapeId="0" xr:uid="{{5A1D{i:04d}-0000-0000-0000-0000000000'
                   f'00}}"><text><r><rPr><b/><sz val="9"/><color indexed="81"/><rFont val="Tahoma"/><family val="2"/>'
                   f'</rPr><t>Ana:</t></r><r><t xml:space="preserve">\n{text}</t></r></text></comment>'
                   for i, (ref, text) in enumerate(notes.items()))
    return (DECL + f'<comments xmlns="{MAIN}" {MC}><authors><author>Ana</author></authors>'
            f'<commentList>{body}</commentList></comments>')


def excel_notes() -> None:
    """Excel 365: notes on two sheets (comments1/2.xml, vmlDrawing1/2.vml, idmap blocks 1 and 2),
    a third sheet without notes whose TRAIN_BUDGET cell the export freezes, and a user's note on a
    cell that is frozen too."""
    q = "&quot;"
    frozen = f'<f>INDEX(TRAIN_BUDGET(A1,1000000000,{q}{D}{q}),1,2)</f><v>14</v>'
    plan = sheet(row(1, f'<c r="A1"><v>7000000000</v></c><c r="B1">{frozen}</c>'))
    tail = '<legacyDrawing r:id="rId2"/>'
    other = sheet(row(1, '<c r="A1" t="inlineStr"><is><t>see the note</t></is></c>')
                  + row(2, f'<c r="A2"><v>7000000000</v></c><c r="B2">{frozen.replace("A1,", "A2,")}</c>'), tail)
    third = sheet(row(1, '<c r="A1" t="inlineStr"><is><t>also a note</t></is></c>'), tail)
    ct_comments = "application/vnd.openxmlformats-officedocument.spreadsheetml.comments+xml"
    write("excel_notes.xlsx", {
        "[Content_Types].xml": content_types({
            "xl/worksheets/sheet1.xml": CT_SHEET, "xl/worksheets/sheet2.xml": CT_SHEET,
            "xl/worksheets/sheet3.xml": CT_SHEET, "xl/comments1.xml": ct_comments,
            "xl/comments2.xml": ct_comments}, vml=True),
        "_rels/.rels": ROOT_RELS,
        "xl/workbook.xml": workbook(["Plan", "Other", "Third"]),
        "xl/_rels/workbook.xml.rels": rels([("rId1", "worksheet", "worksheets/sheet1.xml"),
                                            ("rId2", "worksheet", "worksheets/sheet2.xml"),
                                            ("rId3", "worksheet", "worksheets/sheet3.xml"),
                                            ("rId4", "styles", "styles.xml")]),
        "xl/worksheets/sheet1.xml": plan, "xl/worksheets/sheet2.xml": other, "xl/worksheets/sheet3.xml": third,
        "xl/worksheets/_rels/sheet2.xml.rels": rels([("rId1", "comments", "../comments1.xml"),
                                                     ("rId2", "vmlDrawing", "../drawings/vmlDrawing1.vml")]),
        "xl/worksheets/_rels/sheet3.xml.rels": rels([("rId1", "comments", "../comments2.xml"),
                                                     ("rId2", "vmlDrawing", "../drawings/vmlDrawing2.vml")]),
        "xl/comments1.xml": _comments({"A1": "a note on Other", "B2": "my own note on the weights"}),
        "xl/comments2.xml": _comments({"A1": "a note on Third"}),
        "xl/drawings/vmlDrawing1.vml": _vml(1, [(1025, 0, 0), (1026, 1, 1)]),
        "xl/drawings/vmlDrawing2.vml": _vml(2, [(2049, 0, 0)]),
        "xl/styles.xml": STYLES})


if __name__ == "__main__":
    excel_modern()
    sdk_prefixed()
    excel_notes()
