"""Hostile workbook files given to every command that reads one (`verify`, `export`, `measure --into`): each
is one line on stderr, exit 2, nothing written in its folder, and a bounded memory peak (the child's max
RSS); a file that turns unreadable or vanishes mid-run is said so. (tests/hostile/census.py runs CASES.)"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from tests import hostile
from trainbudget.addin.cli.main import cli, run
from trainbudget.addin.ooxml import opening, package

MEMORY_CEILING_MB = 400  # "a few hundred MB": the refusal must come before any part is inflated


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


def _listing(folder: Path) -> dict[str, bytes | None]:
    return {p.name: (p.read_bytes() if p.is_file() else None) for p in folder.iterdir()}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", CASES)
def test_hostile_file_is_one_line_exit_2_nothing_written(built, bomb, tmp_path, case, command):
    folder = tmp_path / "in"
    folder.mkdir()
    path = _make(case, folder, built.path, bomb)
    before = _listing(folder)
    rc, stderr, peak_mb = hostile.run_measured(COMMANDS[command](path), folder)
    assert rc == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr and "book.xlsm" in lines[0], stderr
    assert _listing(folder) == before
    assert peak_mb < MEMORY_CEILING_MB, f"{case}: peak {peak_mb:.0f} MB"


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
