"""Files given on the command line: a FIFO never blocks, /dev/zero is refused in one line under a memory
cap, and a CSV as Excel saves it (with a byte order mark) reads as written."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from tests.conftest import ROOT, invoke


@pytest.mark.parametrize("args", [("devices", "--catalog", "{fifo}"),
                                  ("estimate", "--catalog", "{fifo}", "--params", "7e9", "--tokens", "1e12")])
def test_a_fifo_catalog_is_refused_without_blocking(tmp_path, args):
    fifo = tmp_path / "devices.csv"
    os.mkfifo(fifo)
    proc = invoke(*[a.replace("{fifo}", str(fifo)) for a in args])  # a plain open() would wait forever
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr


H100 = "H100 SXM, BF16 tensor core, dense"


def one_line_refusal(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-300:], proc.stderr[-600:])
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-600:]
    assert "Traceback" not in proc.stderr


def _limited_cli(*args: str) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    return subprocess.run([sys.executable, "-m", "trainbudget.addin.cli", *args], capture_output=True,
                          text=True, preexec_fn=cap, timeout=120)


@pytest.mark.parametrize("args", [["devices", "--catalog", "/dev/zero"],
                                  ["estimate", "--config", "/dev/zero"],
                                  ["estimate", "--scenarios", "/dev/zero"]])
def test_unbounded_input_files_are_refused(args):
    """Files given on the command line are read whole: /dev/zero (or any huge file) fills memory,
    and under a memory cap ends in a MemoryError traceback with exit 1."""
    one_line_refusal(_limited_cli(*args))


def test_catalog_csv_with_a_byte_order_mark(tmp_path):
    """Excel's "CSV UTF-8" starts the file with a BOM; the catalog was refused as 'row 1: name is
    required' (the header's first column read as '\\ufeffname')."""
    packaged = ROOT / "calc" / "data" / "devices.csv"
    lines = packaged.read_text("utf-8").splitlines()[:2]
    path = tmp_path / "bom.csv"
    path.write_text("\ufeff" + "\n".join(lines) + "\n", "utf-8")
    proc = invoke("devices", "--catalog", str(path), "--csv", check=True)
    assert "M3 Ultra" in proc.stdout


def test_scenarios_csv_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "plans.csv"
    path.write_text(f'\ufeffname,params,tokens,device,devices,utilization,price,own\nA,7e9,1e9,"{H100}",8,0.4,2.5,\n',
                    "utf-8")
    proc = invoke("estimate", "--scenarios", str(path), "--csv", check=True)
    assert proc.stdout.splitlines()[1].startswith("A,")
