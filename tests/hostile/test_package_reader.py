"""The package layer's reader (addin/ooxml) against hostile packages: a zip bomb is refused before inflating,
by size or by ratio, a streamed read stops at the limit whatever the header says, any DOCTYPE, duplicate
or too many parts are refused, an encrypted workbook is named as such, and parsing keeps prefixes."""

from __future__ import annotations

import os
import zipfile

import pytest

from tests import hostile
from tests.conftest import invoke
from trainbudget.addin.ooxml import opening, package


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


def test_encrypted_workbook_is_named_as_such(tmp_path):
    import olefile

    path = hostile.encrypted_workbook(tmp_path / "secret.xlsx")
    assert olefile.OleFileIO(str(path)).exists("EncryptedPackage")  # a real compound file
    proc = invoke("verify", str(path))
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
