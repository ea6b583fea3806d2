"""Shared fixtures: the starting document's printed table, a subprocess runner for `trainbudget`
and an in-process one (`invoke`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def seed_lines() -> list[str]:
    """The six lines the project's starting document printed (its table: 7B params, 1B tokens,
    four devices at 100% utilization), kept in the repository as a fixture."""
    lines = (DATA / "seed_table.txt").read_text("utf-8").splitlines()
    assert len(lines) == 6
    return lines


def run_cli(*args: str, check: bool = False, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`trainbudget ARGS` as a user runs it (through the installed entry point's module)."""
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "trainbudget.addin.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def invoke(*args: str, check: bool = False, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`trainbudget ARGS` in this process, through click's CliRunner isolation and the entry
    point's own error handling (cli.main.run): the same stdout, stderr and exit status as
    `run_cli`, without starting a Python process (run in `cwd` when given)."""
    from click.testing import CliRunner

    from trainbudget.addin.cli.main import cli, run

    here = Path.cwd()
    with CliRunner().isolation(env={"COLUMNS": "200"}) as (out, err, _):
        try:
            if cwd is not None:
                os.chdir(cwd)
            code = run(cli, list(args))
        finally:
            os.chdir(here)
    proc = subprocess.CompletedProcess(["trainbudget", *args], code, out.getvalue().decode("utf-8"),
                                       err.getvalue().decode("utf-8"))
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="session")
def soffice():
    """LibreOffice must be installed wherever the tests run (the README's test command installs it)."""
    from trainbudget.addin import libreoffice as engine

    path = engine.soffice()
    assert path, "LibreOffice is not installed: run the README's test command (tests/run-all.sh)"
    return path


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """The template built afresh into a temporary folder."""
    from trainbudget.addin.template import build as template

    return template.build(tmp_path_factory.mktemp("built") / "TrainingBudget.xlsm")


@pytest.fixture
def copy(built, tmp_path):
    """A function making a fresh copy of the built template in this test's folder."""
    def make(name: str = "copy.xlsm") -> Path:
        return Path(shutil.copyfile(built.path, tmp_path / name))
    return make
