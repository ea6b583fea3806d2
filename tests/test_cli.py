"""The command line: the seed's table, figure for figure; formats; errors; help for every command."""

import csv
import io
import json
import re

import pytest

from tests.conftest import run_cli
from trainbudget.addin.cli.main import cli


def test_seed_table_figure_for_figure(seed_lines):
    out = run_cli("estimate", check=True).stdout
    expected = seed_lines
    got = [line.split("   [")[0] for line in out.splitlines() if line.strip()]
    for line in expected:
        assert line in got, line
    numbers = re.findall(r"\d[\d.,]*", "\n".join(expected))
    assert numbers == re.findall(r"\d[\d.,]*", "\n".join(got[: len(expected)]))
    assert "utilization is never 100%" in out


def test_json_and_csv_agree():
    data = json.loads(run_cli("estimate", "--params", "70B", "--tokens", "2T", "--json",
                              check=True).stdout)
    assert data["params"] == 70e9 and data["tokens"] == 2e12
    assert data["memory_bytes"]["total"] == 70e9 * 16
    rows = list(csv.DictReader(io.StringIO(run_cli("estimate", "--params", "70B", "--tokens", "2T",
                                                   "--csv", check=True).stdout)))
    assert [r["device"] for r in rows] == [r["device"] for r in data["rows"]]
    assert float(rows[2]["hours"]) == pytest.approx(data["rows"][2]["hours"])


def test_options_change_the_figures():
    data = json.loads(run_cli("estimate", "--device", "h100 sxm, bf16 tensor core, dense",
                              "--utilization", "0.4", "--devices", "8", "--json", check=True).stdout)
    (row,) = data["rows"]
    assert row["hours"] == pytest.approx(42e18 / (989.5e12 * 0.4 * 8) / 3600)
    assert row["device_hours"] == pytest.approx(8 * row["hours"])
    text = run_cli("estimate", "--device", "H100 SXM, FP8 tensor core, dense", "--utilization",
                   "0.5", check=True).stdout
    assert "at 50% utilization" in text


@pytest.mark.parametrize(("args", "needle"), [
    (["--params", "-7B"], "--params must be > 0"),
    (["--params", "seven"], "--params must be a count"),
    (["--utilization", "0"], "--utilization must be in (0, 1]"),
    (["--devices", "1.5"], "--devices must be a whole number"),
    (["--device", "H10"], "unknown device 'H10'; closest"),
])
def test_bad_input_one_line_exit_2(args, needle):
    proc = run_cli("estimate", *args)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_devices_listing():
    rows = json.loads(run_cli("devices", "--json", check=True).stdout)
    assert len(rows) >= 30 and all(r["source"] for r in rows)
    assert "H100 SXM, BF16 tensor core, dense" in run_cli("devices", check=True).stdout


def test_every_command_has_help():
    for name in cli.commands:
        proc = run_cli(name, "--help", check=True)
        assert "Usage:" in proc.stdout and cli.commands[name].help.split(".")[0][:30] in proc.stdout
