"""Scenarios files: a header naming a column twice is refused; names holding terminal escape
sequences are printed escaped; a pue whose energy overflows is named; a file of any size is read
in bounded memory (lines bounded, size checked before reading)."""

from __future__ import annotations

import pytest

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.calc.planning import scenarios

H100 = "H100 SXM, BF16 tensor core, dense"
ROW = f'7B,1T,"{H100}",8,0.4'


def _file(tmp_path, text: str):
    path = tmp_path / "s.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_duplicate_column_is_refused_naming_it(tmp_path):
    path = _file(tmp_path, f"name,params,tokens,device,devices,utilization,pue,pue\na,{ROW},1.2,1.5\n")
    got = invoke("estimate", "--scenarios", str(path))
    assert got.returncode == 2 and "names column 'pue' twice" in got.stderr, got.stderr


@pytest.mark.parametrize("form", ["text", "csv"])
def test_escape_sequences_in_a_name_never_reach_the_terminal(tmp_path, form):
    path = _file(tmp_path, f'name,params,tokens,device,devices,utilization\n"\x1b]0;pwned\x07\x1b[31mred\x9b",{ROW}\n')
    got = invoke("estimate", "--scenarios", str(path), *(["--csv"] if form == "csv" else []))
    assert got.returncode == 0, got.stderr
    assert "\x1b" not in got.stdout and "\x07" not in got.stdout and "\x9b" not in got.stdout
    assert "\\x1b]0;pwned\\x07\\x1b[31mred" in got.stdout


def test_an_error_naming_an_escaped_row_is_escaped(tmp_path):
    path = _file(tmp_path, 'name,params,tokens,device,devices,utilization\n"\x1b[2J",7B,1T,nope,8,0.4\n')
    got = invoke("estimate", "--scenarios", str(path))
    assert got.returncode == 2 and "\x1b" not in got.stderr and "scenario 1" in got.stderr


def test_a_pue_whose_energy_overflows_is_named(tmp_path):
    path = _file(tmp_path, f"name,params,tokens,device,devices,utilization,pue\na,{ROW},1e308\n")
    got = invoke("estimate", "--scenarios", str(path))
    assert got.returncode == 2 and "pue 1e+308" in got.stderr and "check pue" in got.stderr, got.stderr


def test_calc_names_the_pue_too():
    with pytest.raises(calc.TrainingBudgetError, match="check pue"):
        calc.budget(calc.job(params=7e9, tokens=1e12, device=H100, devices=8, utilization=0.4, pue=1e308))


def test_a_line_longer_than_the_limit_is_refused_there(tmp_path):
    path = tmp_path / "big.csv"
    with open(path, "w") as f:  # 4 x the limit with no line break: refused after the limit, not read whole
        f.write("name,params,tokens,device,devices,utilization\n" + "a" * (4 * scenarios.MAX_LINE_CHARS))
    got = invoke("estimate", "--scenarios", str(path))
    assert got.returncode == 2 and "line 2 is longer than 131,072 characters" in got.stderr, got.stderr


def test_read_scenarios_stops_at_the_long_line(tmp_path, monkeypatch):
    """Memory is bounded: the reader asks the file for at most MAX_LINE_CHARS + 1 characters at a time."""
    path = tmp_path / "big.csv"
    path.write_text("name\n" + "b" * (10 * scenarios.MAX_LINE_CHARS))
    monkeypatch.setattr(scenarios, "MAX_LINE_CHARS", 1000)
    with pytest.raises(calc.TrainingBudgetError, match="line 2 is longer than 1,000"):
        list(scenarios.read_scenarios(path))


def test_the_size_is_checked_before_reading(tmp_path, monkeypatch):
    path = _file(tmp_path, f"name,params,tokens,device,devices,utilization\na,{ROW}\n")
    monkeypatch.setattr(scenarios, "MAX_SCENARIO_BYTES", 10)
    with pytest.raises(calc.TrainingBudgetError, match="is larger than 10 bytes"):
        list(scenarios.read_scenarios(path))


def test_a_fifo_is_refused(tmp_path):
    import os

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(calc.TrainingBudgetError, match="not a regular file"):
        list(scenarios.read_scenarios(fifo))
