"""Benchmark: `export` and `verify --no-recalc` of the template with one extra sheet of
N rows (5 columns: inline text, three numbers, a plain formula with its cached value), for
N = 200,000 and 1,100,000. Prints seconds and each process's peak RSS (LibreOffice, a child
process of export, is not counted) and the load average; asserts nothing. Goals: a 200k-row
workbook in under 300 MB; 1.1M rows within 60 s and 500 MB.

    python bench/bench_export_large.py [ROWS ...]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from trainbudget.addin.template import build as template

SHEET_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
WORKSHEET_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet"
MEASURE = """
import resource, sys, time
from pathlib import Path
from trainbudget.addin.export import mailcopy
start = time.perf_counter()
mailcopy.export(Path(sys.argv[1]), Path(sys.argv[2]))
print(f"{time.perf_counter() - start:.1f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
"""
VERIFY = """
import resource, sys, time
from pathlib import Path
from trainbudget.addin.verify import check
start = time.perf_counter()
check.verify(Path(sys.argv[1]), recalc=sys.argv[2] == "recalc")
peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(f"{time.perf_counter() - start:.1f} {peak / 1024:.0f}")
"""


def _rows(n: int):
    yield (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet '
           b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>')
    for r in range(1, n + 1):
        yield (f'<row r="{r}"><c r="A{r}" t="inlineStr"><is><t>run {r}</t></is></c><c r="B{r}"><v>{r * 1.5}</v></c>'
               f'<c r="C{r}"><v>{r % 97}</v></c><c r="D{r}"><f>B{r}*C{r}</f><v>{r * 1.5 * (r % 97)}</v></c>'
               f'<c r="E{r}"><v>{7e9 + r}</v></c></row>').encode()
    yield b"</sheetData></worksheet>"


def with_extra_sheet(src: Path, out: Path, n: int) -> Path:
    """`src` with a sheet "Extra" of `n` rows, streamed into the zip."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        changed = {
            "[Content_Types].xml": zin.read("[Content_Types].xml").decode().replace(
                "</Types>", f'<Override PartName="/xl/worksheets/sheetExtra.xml" ContentType="{SHEET_CT}"/></Types>'),
            "xl/_rels/workbook.xml.rels": zin.read("xl/_rels/workbook.xml.rels").decode().replace(
                "</Relationships>", f'<Relationship Id="rIdExtra" Type="{WORKSHEET_REL}" '
                'Target="worksheets/sheetExtra.xml"/></Relationships>'),
        }
        book = zin.read("xl/workbook.xml").decode()
        next_id = max(int(x) for x in re.findall(r'sheetId="(\d+)"', book)) + 1
        changed["xl/workbook.xml"] = book.replace("</sheets>", (
            '<sheet xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
            f'name="Extra" sheetId="{next_id}" r:id="rIdExtra"/></sheets>'))
        for name in zin.namelist():
            zout.writestr(name, changed[name].encode() if name in changed else zin.read(name))
        with zout.open("xl/worksheets/sheetExtra.xml", "w") as f:
            for chunk in _rows(n):
                f.write(chunk)
    return out


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        built = template.build(Path(tmp) / "TrainingBudget.xlsm").path
        for n in sizes:
            src = with_extra_sheet(built, Path(tmp) / f"big{n}.xlsm", n)
            size_mb = src.stat().st_size / 1e6
            for what, code, args in (("verify --no-recalc", VERIFY, [str(src), "cached"]),
                                     ("verify (LibreOffice recalculates; its peak counted)", VERIFY,
                                      [str(src), "recalc"]),
                                     ("export", MEASURE, [str(src), str(Path(tmp) / f"big{n}.xlsx")])):
                proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
                seconds, mib = proc.stdout.split()[-2:]
                print(f"{what}, {n:>9,} extra rows ({size_mb:.0f} MB file): {seconds} s, peak RSS {mib} MiB "
                      f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [200_000, 1_100_000])
