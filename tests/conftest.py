"""Shared fixtures: the seed document, a subprocess runner for the `trainbudget` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEED_DIR = ROOT.parent / "shared" / "seed"


@pytest.fixture(scope="session")
def seed_text() -> str:
    files = sorted(SEED_DIR.glob("*"))
    assert files, f"the seed document is missing from {SEED_DIR}"
    return "\n".join(f.read_text("utf-8") for f in files)


def run_cli(*args: str, check: bool = False, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`trainbudget ARGS` as a user runs it (through the installed entry point's module)."""
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "trainbudget.addin.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="session")
def soffice():
    """LibreOffice must be installed wherever the tests run (the README's test command installs it)."""
    from trainbudget.addin import engine

    path = engine.soffice()
    assert path, "LibreOffice is not installed: run the README's test command (tests/run-all.sh)"
    return path


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """The template built afresh into a temporary folder."""
    from trainbudget.addin import template

    return template.build(tmp_path_factory.mktemp("built") / "TrainingBudget.xlsm")
