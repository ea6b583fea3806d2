"""The e-mail copy computes the same in every spreadsheet engine: recalculated by
Gnumeric (`ssconvert --recalc`, Debian package `gnumeric`), by the `formulas` engine (PyPI) and,
as the control, by LibreOffice, every formula cell of the copy equals the copy's cached value
(numbers to a relative 1e-9, strings equal). That holds for the template's copy and for copies
of the template with changed inputs (model size, an FP8 device, a provider price, a currency),
whose cached values LibreOffice computed from the template's own formulas (table references and
all), so a rewrite that changed a figure fails here."""

from __future__ import annotations

import gzip
import math
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest
from lxml import etree

from tests import xlsx_edit
from trainbudget.addin import libreoffice as engine
from trainbudget.addin.export import mailcopy, stream
from trainbudget.addin.functions import portable, rewrite
from trainbudget.addin.ooxml import package, partedit, sheetrefs, xmlcells

FP8 = "H100 SXM, FP8 tensor core, dense"
# name of an input (a defined name, or (sheet, row label, column)) -> the value typed there
CHANGES = {
    "template": {},
    "model size": {"Params": 70e9, "Tokens": 2e12},
    "FP8 device": {"Device": FP8, ("Scenarios", "Device", "B"): FP8, ("Scenarios", "Device", "G"): FP8},
    "provider price": {"Provider": "aws", ("Scenarios", "Price", "C"): "aws:on_demand"},
    "currency": {"Currency": "EUR", "USD_rate": 0.92},
    # an offering named (any case) on both sheets, a refused spec and a refused plan input (their words)
    "offering": {"Provider": "runpod", "Offering": "secure cloud h100 sxm",
                 ("Scenarios", "Price", "C"): "runpod:on_demand:Community Cloud H100 SXM",
                 ("Scenarios", "Price", "D"): "foo:on_demand", ("Scenarios", "Utilization", "E"): 40},
    "bad rate": {"USD_rate": 0},
    "MoE": {"Params": 46.7e9, "Active_params": 12.9e9, "Tokens": 1e12,  # Mixtral 8x7B-like: the basis says MoE
            ("Scenarios", "Active parameters (blank: all)", "B"): 2e9},  # plan B: 7B total, 2B active
}
COUNTS: dict[tuple[str, str], tuple[int, int]] = {}  # (copy, engine) -> (matching, total), printed at the end


def read_cells(path: Path) -> tuple[dict[tuple[str, str], object], set[tuple[str, str]]]:
    """({(sheet, ref): shown value} of every cell with a value, {(sheet, ref) of formula cells}),
    read from the package's XML (a cell cached as "" reads as "")."""
    parts = package.read_parts(path)
    shared = xmlcells.shared_strings(parts.get("xl/sharedStrings.xml"))
    values, formulas = {}, set()
    for sheet, part in package.sheet_parts(parts).items():
        s = xmlcells.Sheet(package.parse(part, parts[part]))
        for c in s.cells():
            key = (sheet, c.get("r"))
            values[key] = xmlcells.cached_value(c, shared)
            if s.formula(c) is not None:
                formulas.add(key)
    return values, formulas


def same(a: object, b: object) -> bool:
    a, b = ("" if a is None else a), ("" if b is None else b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=1e-9)
    return str(a) == str(b)


def gnumeric(path: Path, tmp: Path) -> dict[tuple[str, str], object]:
    out = tmp / f"{path.stem}-gnumeric.xlsx"
    proc = subprocess.run(["ssconvert", "--recalc", str(path), str(out)], capture_output=True, text=True,
                          timeout=300)
    assert out.exists(), proc.stderr[-500:]
    return read_cells(out)[0]


def formulas_engine(path: Path, tmp: Path) -> dict[tuple[str, str], object]:
    import formulas
    import schedula

    solution = formulas.ExcelModel().loads(str(path)).finish().calculate()
    sheets = {s.upper(): s for s in openpyxl.load_workbook(path, read_only=True).sheetnames}
    got = {}
    for key, value in solution.items():
        book_sheet, bang, ref = str(key).rpartition("!")
        if not bang or ":" in ref:
            continue
        sheet = sheets.get(book_sheet.strip("'").split("]", 1)[-1])
        v = value.value[0][0] if hasattr(value, "value") else value
        if type(v).__name__ == "XlError":
            v = str(v)
        elif v is schedula.EMPTY or v is None:
            v = ""
        elif hasattr(v, "item"):
            v = v.item()
        got[(sheet, ref.replace("$", ""))] = v
    return got


def libreoffice(path: Path, tmp: Path) -> dict[tuple[str, str], object]:
    return read_cells(engine.recalculate(path, tmp / f"lo-{path.stem}"))[0]


ENGINES = {"gnumeric": gnumeric, "formulas": formulas_engine, "libreoffice": libreoffice}


def _where(wb: openpyxl.Workbook, name: object) -> tuple[str, str]:
    if isinstance(name, tuple):
        sheet, label, col = name
        ws = wb[sheet]
        row = next(c.row for c in ws["A"] if isinstance(c.value, str) and c.value.startswith(label))
        return sheet, f"{col}{row}"
    sheet, ref = next(wb.defined_names[name].destinations)
    return sheet, ref.replace("$", "")


def changed_copies(template: Path, changes: dict[str, dict], tmp: Path) -> dict[str, Path]:
    """Per tag, the template with its `changes` typed in and every formula cell not calling our
    functions cached as LibreOffice computes it (as Excel would have saved it), exported. The
    changed copies are recalculated in one LibreOffice run."""
    srcs = {tag: Path(shutil.copyfile(template, tmp / f"{tag}.xlsm")) for tag in changes}
    for tag, typed in changes.items():
        wb = openpyxl.load_workbook(srcs[tag])
        for name, value in typed.items():
            sheet, ref = _where(wb, name)
            xlsx_edit.edit_cell(srcs[tag], sheet, ref, lambda s, cell, v=value: s.set_constant(cell, v, cell.get("s")))
    changed = [tag for tag in changes if changes[tag]]
    recalculated = engine.convert([srcs[tag] for tag in changed], "xlsx", tmp / "lo-changed") if changed else []
    formulas = {(ws.title, c.coordinate): c.value for ws in openpyxl.load_workbook(template).worksheets
                for row in ws.iter_rows() for c in row if isinstance(c.value, str) and c.value.startswith("=")}
    for tag, out in zip(changed, recalculated, strict=True):
        values, _ = read_cells(out)
        fill: dict[str, dict[str, object]] = {}
        for (sheet, ref), f in formulas.items():
            if not rewrite.calls_ours(f):
                fill.setdefault(sheet, {})[ref] = values.get((sheet, ref))
        package.fill_cached_values(srcs[tag], srcs[tag], fill)
    return {tag: mailcopy.export(srcs[tag], tmp / f"{tag}.xlsx").out for tag in changes}


def changed_copy(template: Path, changes: dict, tmp: Path, tag: str) -> Path:
    """One copy of the template with `changes` typed in (changed_copies)."""
    return changed_copies(template, {tag: changes}, tmp)[tag]


@pytest.fixture(scope="module")
def copies(built, soffice, tmp_path_factory):
    assert shutil.which("ssconvert"), "Gnumeric is not installed: run the README's test command (tests/run-all.sh)"
    tmp = tmp_path_factory.mktemp("portable")
    made = changed_copies(built.path, {tag.replace(" ", "_"): changes for tag, changes in CHANGES.items()}, tmp)
    yield {tag: made[tag.replace(" ", "_")] for tag in CHANGES}
    print("\nmatching / formula cells, per copy and engine:")
    for (tag, name), (ok, total) in sorted(COUNTS.items()):
        print(f"  {tag:15} {name:12} {ok}/{total}")


@pytest.fixture(scope="module")
def libreoffice_values(copies, tmp_path_factory) -> dict[str, dict[tuple[str, str], object]]:
    """Every copy recalculated by LibreOffice in one run: {tag: {(sheet, ref): value}}."""
    outs = engine.convert(list(copies.values()), "xlsx", tmp_path_factory.mktemp("portable-lo"))
    return {tag: read_cells(out)[0] for tag, out in zip(copies, outs, strict=True)}


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("tag", CHANGES)
def test_every_engine_computes_the_copys_cached_values(copies, tag, name, tmp_path, request):
    path = copies[tag]
    cached, formula_cells = read_cells(path)
    # LibreOffice recalculates every copy in one run (libreoffice_values); the others one copy at a time
    got = (request.getfixturevalue("libreoffice_values")[tag] if name == "libreoffice"
           else ENGINES[name](path, tmp_path))
    wrong = [(k, cached[k], got.get(k, "<not computed>")) for k in sorted(formula_cells)
             if not same(cached[k], got.get(k, "<not computed>"))]
    COUNTS[(tag, name)] = (len(formula_cells) - len(wrong), len(formula_cells))
    assert len(formula_cells) > 600
    assert not wrong, f"{len(wrong)} of {len(formula_cells)} differ, first: {wrong[:5]}"


def test_changed_inputs_change_the_figures(copies):
    base, _ = read_cells(copies["template"])
    for tag in CHANGES:
        if tag != "template":
            values, formula_cells = read_cells(copies[tag])
            moved = [k for k in formula_cells if not same(values[k], base.get(k))]
            assert len(moved) >= 5, tag
    wb = openpyxl.load_workbook(copies["FP8 device"], data_only=True)
    names = openpyxl.load_workbook(copies["FP8 device"]).defined_names
    sheet, ref = next(names["Rate_TFLOPS"].destinations)
    assert wb[sheet][ref.replace("$", "")].value == pytest.approx(1979)  # the FP8 row's own rate
    moe = openpyxl.load_workbook(copies["MoE"], data_only=True)
    sheet, ref = next(names["Prior_basis"].destinations)
    assert moe[sheet][ref.replace("$", "")].value.startswith("Hopper MoE runs of 10B-100B")  # active, not total
    plans, dense = moe["Scenarios"], openpyxl.load_workbook(copies["template"], data_only=True)["Scenarios"]
    rows = {c.value: c.row for c in plans["A"] if isinstance(c.value, str)}
    assert plans[f"B{rows['Mixture of experts (1: fewer active than total parameters)']}"].value == 1
    at_100 = rows["Hours at 100% utilization"]  # 6 * active * tokens: 2B of plan B's 7B
    assert plans[f"B{at_100}"].value == pytest.approx(dense[f"B{at_100}"].value * 2 / 7, rel=1e-9)
    sheet, ref = next(names["Price_found"].destinations)
    provider = openpyxl.load_workbook(copies["provider price"], data_only=True)
    assert isinstance(provider[sheet][ref.replace("$", "")].value, float)  # a price from the Prices table


def test_the_copy_has_no_idiom_other_engines_miss(copies):
    wb = openpyxl.load_workbook(copies["template"])
    texts = [c.value.text if hasattr(c.value, "text") else c.value for ws in wb.worksheets
             for row in ws.iter_rows() for c in row if c.data_type == "f"]
    texts += [d.attr_text for d in wb.defined_names.values()]
    tables = {t.lower() for ws in wb.worksheets for t in ws.tables}
    assert tables >= {"devices", "prices"}  # the tables stay (Excel's formatting, filters)
    for text in texts:
        upper = str(text).upper()
        assert not any(f"{t.upper()}[" in upper for t in tables), text
        assert "SUMPRODUCT(MIN(" not in upper and "SUMPRODUCT(MAX(" not in upper, text
    assert not [t for t in texts if "INDEX(PRICE_PLANS,0" in str(t).upper()]
    arrays = [c for ws in wb.worksheets for row in ws.iter_rows() for c in row
              if isinstance(c.value, openpyxl.worksheet.formula.ArrayFormula)]
    assert len(arrays) >= 30  # the SUMPRODUCT(MIN/MAX) idioms, now {=MIN(...)}
    for name in ("DeviceNames", "Price_plans"):  # readable names kept, pointing at plain ranges
        assert "!$" in wb.defined_names[name].attr_text


def test_charts_and_drop_downs_survive_gnumeric(copies, tmp_path):
    out = tmp_path / "g.gnumeric"
    subprocess.run(["ssconvert", str(copies["template"]), str(out)], capture_output=True, check=True, timeout=300)
    text = gzip.decompress(out.read_bytes()).decode("utf-8", "replace")
    wb = openpyxl.load_workbook(copies["template"])
    charts = sum(len(ws._charts) for ws in wb.worksheets)
    lists = sum(1 for ws in wb.worksheets for dv in ws.data_validations.dataValidation if dv.type == "list")
    assert charts >= 2 and text.count("<gnm:SheetObjectGraph") == charts  # Gnumeric drops none
    assert text.count('"map-name">Log<') >= 3  # the bar chart's log axis and the scatter's two
    assert lists >= 7 and text.count("GNM_VALIDATION_TYPE_IN_LIST") == lists  # drop-downs kept
    assert 'GNM_VALIDATION_STYLE_INFO" Type="GNM_VALIDATION_TYPE_IN_LIST' in text  # free entry still allowed


@pytest.mark.parametrize(("ref", "want"), [
    ("Devices[TFLOP/s]", "'Devices'!$D$2:$D$37"),
    ("Devices[[#Data],[TFLOP/s]]", "'Devices'!$D$2:$D$37"),
    ("Devices[[#Headers],[Name]]", "'Devices'!$A$1"),
    ("Devices[#All]", "'Devices'!$A$1:$D$37"),
    ("Devices[]", "'Devices'!$A$2:$D$37"),
    ("Devices[[Name]:[Kind]]", "'Devices'!$A$2:$C$37"),
    ("devices[Odd '[x']]", "'Devices'!$B$2:$B$37"),  # Excel's names ignore case; ' escapes a bracket
    ("Devices[[#This Row],[Name]]", "'Devices'!$A$5"),
    ("Devices[@Name]", "'Devices'!$A$5"),
    ("Devices[Nope]", None),  # an unknown column stays as it is (and is reported)
    ("Other[Name]", None),
])
def test_structured_references_become_a1(ref, want):
    table = portable.Table("Devices", "Devices", 1, 1, 37, 1, 0, ("Name", "Odd [x]", "Kind", "TFLOP/s"))
    assert portable.structured(ref, {"devices": table}, row=5) == want


@pytest.mark.parametrize(("text", "want", "array"), [
    ("=1+3600E12", "=1+3600E+12", False),
    ("=1E-12+2.5e3", "=1E-12+2.5e+3", False),
    ("=SUMPRODUCT(MIN(A1:A3+1E9*(B1:B3<>1)))", "=MIN(A1:A3+1E+9*(B1:B3<>1))", True),
    ("=SUMPRODUCT(A1:A3*B1:B3)", "=SUMPRODUCT(A1:A3*B1:B3)", False),
    ("=SUM(INDEX(Plans,0,k))", "=SUM(CHOOSE(k,'P'!$E$5:$E$9,'P'!$F$5:$F$9))", False),
    ("=INDEX(Plans,2,k)", "=INDEX(Plans,2,k)", False),
    ("=INDEX(One,0,1)", "=INDEX(One,0,1)", False),
])
def test_formula_idioms(text, want, array):
    names = {"plans": "'P'!$E$5:$F$9", "one": "'P'!$E$5:$E$9"}
    assert portable.formula(text, {}, names, portable.Portable())[:2] == (want, array)


SHEET = ('<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>{}'
         "</sheetData>{}</worksheet>")


@pytest.mark.parametrize(("rows", "tail", "copied"), [
    ('<row r="1"><c r="A1"><v>1</v></c><c r="B1"><f>A1*2</f><v>2</v></c></row>', "", True),
    ('<row r="1"><c r="B1"><f t="shared" ref="B1:B2" si="0">A1*2</f><v>2</v></c>'
     '<c r="B2"><f t="shared" si="0"/><v>4</v></c></row>', "", True),  # a fill-down with its values
    ('<row r="1"><c r="B1"><f>A1*2</f></c></row>', "", False),  # no cached value: LibreOffice must give one
    ('<row r="1"><c r="B1"><f>TRAIN_HOURS(A1,1E12,"x")</f><v>2</v></c></row>', "", False),  # ours
    ('<row r="1"><c r="B1"><f>train_hours(A1,1E12,"x")</f><v>2</v></c></row>', "", False),  # as LibreOffice saves it
    ('<row r="1"><c r="B1"><f>SUM(Devices[Watts])</f><v>2</v></c></row>', "", False),  # a table reference
    ('<row r="1"><c r="B1"><f>A1*1E12</f><v>2</v></c></row>', "", False),  # an exponent to sign
    ('<row r="1"><c r="B1"><f>&#84;RAIN_HOURS(A1,1,"x")</f><v>2</v></c></row>', "", False),  # a character reference
    ('<row r="1"><c r="A1" t="inlineStr"><is><t>TRAIN_ [1] 1E9</t></is></c></row>', "", True),  # only text
    ('<row r="1"><c r="A1"><v>1</v></c></row>',
     '<dataValidations count="1"><dataValidation type="list" sqref="A1"><formula1>"a,b"</formula1>'
     "</dataValidation></dataValidations>", False),  # a list validation Gnumeric would drop
])
def test_sheets_the_export_only_copies(rows, tail, copied):
    assert stream.only_copied(SHEET.format(rows, tail).encode()) is copied


def test_large_sheets_are_copied_byte_for_byte_and_not_recalculated(built, soffice, tmp_path, monkeypatch):
    """A sheet the export only copies is written back as it was, and LibreOffice gets it
    empty unless another sheet reads it; the copy still computes the same in every engine."""
    src = Path(shutil.copyfile(built.path, tmp_path / "big.xlsm"))
    parts = package.read_parts(src)
    data = SHEET.format("".join(f'<row r="{r}"><c r="A{r}"><v>{r}</v></c><c r="B{r}"><f>A{r}*2</f><v>{2 * r}</v></c>'
                                f"</row>" for r in range(1, 3001)), "").encode()
    read_by_budget = SHEET.format('<row r="1"><c r="A1"><v>5</v></c></row>', "").encode()
    for name, sheet in (("Extra", data), ("Lookup", read_by_budget)):
        parts = partedit.add_table_sheet(parts, name, f"T{name}", [["x"], [1]])
        parts[package.sheet_parts(parts)[name]] = sheet
    budget = package.sheet_parts(parts)["Budget"]
    partedit.change(parts, budget, lambda root: xlsx_set_formula(root, "H1", "Lookup!A1*2"))  # no cached value
    package.write_package(parts, src)
    given = {}
    real = engine.recalculate

    def spy(path, outdir):
        given.update(package.read_parts(path))
        return real(path, outdir)
    monkeypatch.setattr(engine, "recalculate", spy)
    out = mailcopy.export(src, tmp_path / "big.xlsx").out
    after = package.read_parts(out)
    sheets = package.sheet_parts(after)
    assert after[sheets["Extra"]] == data and after[sheets["Lookup"]] == read_by_budget
    assert given[sheets["Extra"]] == sheetrefs.EMPTY_SHEET  # nothing reads it: LibreOffice never loads its rows
    assert given[sheets["Lookup"]] == read_by_budget  # Budget!H1 reads it
    cached, formula_cells = read_cells(out)
    assert cached[("Budget", "H1")] == 10 and cached[("Extra", "B3000")] == 6000
    got = gnumeric(out, tmp_path)
    assert not [k for k in formula_cells if not same(cached[k], got.get(k))]


def xlsx_set_formula(root: object, ref: str, text: str) -> None:
    s = xmlcells.Sheet(root)
    cell = s.cell(ref)
    f = s.formula(cell)
    if f is None:
        f = etree.Element(s.q("f"))
        cell.insert(0, f)
    f.text = text
