"""`measure --into`: what is written can be read back (no inf or nan figures), and a datasheet row is not
replaced by a measured one of the same name."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import invoke

H100 = "H100 SXM, BF16 tensor core, dense"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line_refusal(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-300:], proc.stderr[-600:])
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-600:]
    assert "Traceback" not in proc.stderr


def _measure_into(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return invoke("measure", "--seconds", "0.05", "--memory-gib", "1", "--into", str(path), *extra)


@pytest.mark.parametrize("option", [["--watts", "inf"], ["--memory-gib", "nan"], ["--memory-gib", "inf"]])
def test_measure_into_refuses_non_finite_figures(built, tmp_path, option):
    """`--watts inf` wrote the text 'inf' into the Devices table (exit 0); afterwards `devices
    --catalog`, `estimate --catalog` and the next `measure --into` refused the workbook."""
    path = Path(shutil.copyfile(built.path, tmp_path / "b.xlsm"))
    before = digest(path)
    one_line_refusal(_measure_into(path, "--name", "box", *option))
    assert digest(path) == before


def test_measure_into_does_not_replace_a_datasheet_row(built, tmp_path):
    """`--name` equal to a catalog row replaced the vendor's 989.5 TFLOP/s H100 row with this CPU's
    rate (exit 0, 'updated'): every budget on that device became ~500,000x longer. Updating a
    measured row is the documented use; a datasheet row is not a measurement to overwrite."""
    path = Path(shutil.copyfile(built.path, tmp_path / "b.xlsm"))
    _measure_into(path, "--name", H100.lower())
    listing = invoke("devices", "--catalog", str(path), "--json", check=True)
    rows = {d["name"].casefold(): d for d in json.loads(listing.stdout)}
    assert rows[H100.casefold()]["tflops"] == pytest.approx(989.5), rows[H100.casefold()]
