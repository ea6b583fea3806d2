"""Hostile workbook files through `verify`, `export` and `measure --into`: each is one line on
stderr, exit 2, nothing written in its folder, and a bounded memory peak (the child's max RSS)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import hostile
from tests.conftest import run_cli
from trainbudget.addin.cli.main import cli, run
from trainbudget.addin.ooxml import opening, package

MEMORY_CEILING_MB = 400  # "a few hundred MB": the refusal must come before any part is inflated


@pytest.fixture(scope="session")
def bomb(tmp_path_factory) -> Path:
    """A ~2 MB zip whose sheet part inflates to 2 GiB (built once per session: ~20 s)."""
    return hostile.zip_bomb(tmp_path_factory.mktemp("bomb") / "bomb.xlsm")


def _template_with(built: Path, path: Path, part: str, data: bytes) -> Path:
    parts = package.read_parts(built)
    parts[part] = data
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in parts.items():
            z.writestr(name, body)
    return path


def _make(case: str, folder: Path, built: Path, bomb: Path) -> Path:
    path = folder / "book.xlsm"
    if case == "zip-bomb":
        shutil.copyfile(bomb, path)
    elif case == "lying-header":
        hostile.lying_bomb(path)
    elif case == "billion-laughs":
        _template_with(built, path, "xl/workbook.xml", hostile.BILLION_LAUGHS)
    elif case == "external-entity":
        _template_with(built, path, "xl/worksheets/sheet2.xml", hostile.XXE)
    elif case == "bad-xml-part":
        _template_with(built, path, "xl/styles.xml", b"<styleSheet><oops></styleSheet>")
    elif case == "truncated":
        data = built.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif case == "encrypted":
        hostile.encrypted_workbook(path)
    elif case == "zip-not-workbook":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("hello.txt", "hi")
    elif case == "no-workbook-part":
        hostile.minimal_package(path)
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("[Content_Types].xml", hostile.CT)
            z.writestr("_rels/.rels", hostile.RELS)
    elif case == "zip-encrypted-flag":
        hostile.minimal_package(path)
        data = bytearray(path.read_bytes())
        for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            i = data.find(sig)
            while i >= 0:
                data[i + at] |= 1
                i = data.find(sig, i + 4)
        path.write_bytes(bytes(data))
    elif case == "directory":
        path.mkdir()
    return path


CASES = ["zip-bomb", "lying-header", "billion-laughs", "external-entity", "bad-xml-part", "truncated",
         "encrypted", "zip-not-workbook", "no-workbook-part", "zip-encrypted-flag", "directory"]
COMMANDS = {
    "verify": lambda p: ["verify", "--no-recalc", str(p)],
    "export": lambda p: ["export", str(p), "--out", str(p.with_name("mail.xlsx"))],
    "measure": lambda p: ["measure", "--backend", "numpy", "--seconds", "0.2", "--into", str(p)],
}


def _run_measured(args: list[str], cwd: Path) -> tuple[int, str, float]:
    """Exit status, stderr and peak RSS (MB) of `trainbudget ARGS` run as its own process."""
    err = cwd.parent / f"stderr-{os.getpid()}.txt"
    with open(err, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "trainbudget.addin.cli", *args], stdout=subprocess.DEVNULL,
                                stderr=stderr, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err.read_text(), usage.ru_maxrss / 1024  # Linux: ru_maxrss in KiB


def _listing(folder: Path) -> dict[str, bytes | None]:
    return {p.name: (p.read_bytes() if p.is_file() else None) for p in folder.iterdir()}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", CASES)
def test_hostile_file_is_one_line_exit_2_nothing_written(built, bomb, tmp_path, case, command):
    folder = tmp_path / "in"
    folder.mkdir()
    path = _make(case, folder, built.path, bomb)
    before = _listing(folder)
    rc, stderr, peak_mb = _run_measured(COMMANDS[command](path), folder)
    assert rc == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr and "book.xlsm" in lines[0], stderr
    assert _listing(folder) == before
    assert peak_mb < MEMORY_CEILING_MB, f"{case}: peak {peak_mb:.0f} MB"


def test_zip_bomb_refused_before_inflating(bomb):
    assert bomb.stat().st_size < 3 * hostile.MiB
    with pytest.raises(package.BadWorkbookError, match="inflates to 2048 MiB, over the 256 MiB limit"):
        package.open_parts(bomb)


def test_ratio_limit_refuses_a_part_under_the_size_limit(tmp_path):
    path = hostile.zip_bomb(tmp_path / "b.xlsx", size=64 * hostile.MiB)
    with pytest.raises(package.BadWorkbookError, match="over the 200x limit"):
        package.open_parts(path)


def test_streamed_read_stops_at_the_limit_whatever_the_header_says(tmp_path, monkeypatch):
    """Headers that pass the checks (limits lowered here) are not trusted: reading stops at the limit."""
    text = os.urandom(3 * hostile.MiB // 2).hex().encode()  # incompressible: under the ratio limit
    path = hostile.minimal_package(tmp_path / "b.xlsx", {"xl/big.xml": b"<a>" + text + b"</a>"})
    monkeypatch.setattr(opening, "_check_sizes", lambda *a: None)
    monkeypatch.setattr(opening, "MAX_PART_BYTES", 2 * hostile.MiB)
    with pytest.raises(package.BadWorkbookError, match=r"xl/big\.xml inflates to 3 MiB, over the 2 MiB limit"):
        package.open_parts(path)


@pytest.mark.parametrize("error", [PermissionError, FileNotFoundError])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_unreadable_or_vanishing_file(built, tmp_path, monkeypatch, capsys, error, command):
    """The tests run as root, who reads a chmod 000 file: the failure is simulated at open time,
    after the command-line checks saw the file (so it vanishes or turns unreadable mid-run)."""
    path = Path(shutil.copyfile(built.path, tmp_path / "book.xlsm"))
    before = _listing(tmp_path)

    def fail(*a, **k):
        raise error(13 if error is PermissionError else 2, "simulated", str(path))

    monkeypatch.setattr(opening, "open", fail, raising=False)
    assert run(cli, COMMANDS[command](path)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "book.xlsm" in err[0]
    assert ("permission denied" if error is PermissionError else "vanished") in err[0]
    assert _listing(tmp_path) == before


def test_encrypted_workbook_is_named_as_such(tmp_path):
    import olefile

    path = hostile.encrypted_workbook(tmp_path / "secret.xlsx")
    assert olefile.OleFileIO(str(path)).exists("EncryptedPackage")  # a real compound file
    proc = run_cli("verify", str(path))
    assert proc.returncode == 2 and "is encrypted (password-protected)" in proc.stderr


@pytest.mark.parametrize("doc", [hostile.BILLION_LAUGHS, hostile.XXE, b'<!DOCTYPE a><a/>'])
def test_any_doctype_is_refused(doc):
    with pytest.raises(package.BadWorkbookError, match=r"declares a DOCTYPE|entity amplification"):
        package.parse("xl/workbook.xml", doc)


def test_parse_keeps_prefixes_and_declarations():
    data = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<x:worksheet xmlns:x="http://schemas.'
            b'openxmlformats.org/spreadsheetml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-'
            b'compatibility/2006" xmlns:x14ac="http://schemas.microsoft.com/office/spreadsheetml/2009/9/ac" '
            b'mc:Ignorable="x14ac"><x:sheetData/></x:worksheet>')
    assert package.serialize(package.parse("s", data)) == data


def test_duplicate_part_names_are_refused(tmp_path):
    import warnings

    path = hostile.minimal_package(tmp_path / "dup.xlsx")
    with warnings.catch_warnings(), zipfile.ZipFile(path, "a") as z:
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate it is asked to write
        z.writestr("XL/Workbook.xml", hostile.WORKBOOK)
    with pytest.raises(package.BadWorkbookError, match=r"holds part xl/workbook\.xml twice"):
        package.open_parts(path)


def test_too_many_parts_are_refused(tmp_path, monkeypatch):
    path = hostile.minimal_package(tmp_path / "many.xlsx", {f"xl/media/p{i}.bin": b"x" for i in range(20)})
    monkeypatch.setattr(opening, "MAX_PARTS", 10)
    with pytest.raises(package.BadWorkbookError, match="holds 23 parts, over the 10 limit"):
        package.open_parts(path)


# ---- large workbooks: verify streams the sheets it only checks -----------------------------------

def large_workbook(built: Path, path: Path, rows: int, sheets: int = 1) -> Path:
    """The template with `sheets` extra sheets ("Data1", ...) of `rows` rows each: a number, a text
    and a formula with its cached value per row (written part by part, in chunks)."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    r_ns = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    ct = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
    parts = package.read_parts(built)
    names = [f"Data{k}" for k in range(1, sheets + 1)]
    sheet_xml = "".join(f'<sheet xmlns:r="{r_ns}" name="{n}" sheetId="{90 + k}" r:id="rIdData{k}"/>'
                        for k, n in enumerate(names, start=1))
    parts["xl/workbook.xml"] = parts["xl/workbook.xml"].replace(b"</sheets>", sheet_xml.encode() + b"</sheets>")
    rels = "".join(f'<Relationship Id="rIdData{k}" Type="{r_ns}/worksheet" Target="worksheets/data{k}.xml"/>'
                   for k in range(1, sheets + 1))
    parts["xl/_rels/workbook.xml.rels"] = parts["xl/_rels/workbook.xml.rels"].replace(
        b"</Relationships>", rels.encode() + b"</Relationships>")
    types = "".join(f'<Override PartName="/xl/worksheets/data{k}.xml" ContentType="{ct}"/>'
                    for k in range(1, sheets + 1))
    parts["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(b"</Types>", types.encode() + b"</Types>")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in parts.items():
            z.writestr(name, body)
        for k in range(1, sheets + 1):
            with z.open(f"xl/worksheets/data{k}.xml", "w", force_zip64=True) as f:
                f.write(f'<worksheet xmlns="{main}"><sheetData>'.encode())
                for start in range(1, rows + 1, 10_000):
                    f.write("".join(
                        f'<row r="{i}"><c r="A{i}"><v>{i}</v></c><c r="B{i}" t="inlineStr"><is><t>run {i}</t></is>'
                        f'</c><c r="C{i}"><f>A{i}*2</f><v>{2 * i}</v></c></row>'
                        for i in range(start, min(start + 10_000, rows + 1))).encode())
                f.write(b"</sheetData></worksheet>")
    return path


def test_verify_streams_a_200k_row_extra_sheet(built, tmp_path):
    """Issue 19: verify loaded every cell through openpyxl (1.35 GB for a 200k-row extra sheet).
    Goal 300 MB; the bound here leaves a wide margin for other machines' baselines."""
    folder = tmp_path / "in"
    folder.mkdir()
    path = large_workbook(built.path, folder / "large.xlsm", 200_000)
    rc, stderr, peak_mb = _run_measured(["verify", "--no-recalc", str(path)], folder)
    assert rc == 0, stderr
    assert peak_mb < 600, f"verify of a 200k-row extra sheet peaked at {peak_mb:.0f} MB"
