"""The wheel is the product: built from this checkout, installed in a fresh virtualenv, run from a
folder that is not the repository. Its dependencies are installed beside it
(no system site packages). The template travels as package data, `build` with no --out
writes ./TrainingBudget.xlsm, and the README's verify, export and measure --into work there."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import ROOT

COMMITTED = ROOT / "workbook" / "TrainingBudget.xlsm"


def _pins() -> str:
    """`name==version` for every distribution installed beside the tests (but this project): the
    wheel's dependencies resolve to the versions the tests ran with, which pip's cache holds."""
    return "".join(f"{d.metadata['Name']}=={d.version}\n" for d in metadata.distributions()
                   if d.metadata["Name"] and d.metadata["Name"].lower() != "trainbudget")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """A wheel of this checkout installed with its dependencies (from the index pip is configured
    with, pinned to the versions installed here) into a fresh virtualenv that does not see the
    system's site packages; an empty folder to run in."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(ROOT)],
                   check=True, capture_output=True, cwd=tmp)
    wheel = next(dist.glob("trainbudget-*.whl"))
    venv = tmp / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
    pins = tmp / "pins.txt"
    pins.write_text(_pins())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           "-c", str(pins), str(wheel)], capture_output=True, text=True, cwd=tmp, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    work = tmp / "work"
    work.mkdir()
    return {"wheel": wheel, "venv": venv, "work": work}


def _run(installed: dict[str, Path], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["COLUMNS"] = "200"
    return subprocess.run([str(installed["venv"] / "bin" / args[0]), *args[1:]], capture_output=True,
                          text=True, cwd=installed["work"], env=env, timeout=600)


def test_the_wheel_carries_the_committed_template(installed):
    with zipfile.ZipFile(installed["wheel"]) as z:
        assert z.read("trainbudget/addin/data/TrainingBudget.xlsm") == COMMITTED.read_bytes()
        assert not [n for n in z.namelist() if n.startswith(("tests/", "workbook/"))]


def test_the_installed_package_is_the_wheel_and_finds_its_template(installed):
    code = ("import trainbudget, trainbudget.addin as a, openpyxl, numpy; print(trainbudget.__path__[0]); "
            "print(a.TEMPLATE_PATH); print(a.TEMPLATE_PATH.is_file()); print(openpyxl.__file__, numpy.__file__)")
    proc = _run(installed, "python", "-c", code)
    assert proc.returncode == 0, proc.stderr
    package, template, exists, *dependencies = proc.stdout.split()
    venv = str(installed["venv"].resolve())
    assert package.startswith(venv) and template.startswith(venv), proc.stdout
    assert all(d.startswith(venv) for d in dependencies), proc.stdout  # the venv's own, not the system's
    assert "include-system-site-packages = false" in (installed["venv"] / "pyvenv.cfg").read_text()
    assert exists == "True" and Path(template).read_bytes() == COMMITTED.read_bytes()


def test_build_verify_export_and_measure_from_the_wheel(installed):
    work = installed["work"]
    proc = _run(installed, "trainbudget", "build")
    assert proc.returncode == 0, proc.stderr
    book = work / "TrainingBudget.xlsm"
    assert book.is_file() and proc.stdout.startswith("wrote TrainingBudget.xlsm ("), proc.stdout
    written = [p.relative_to(installed["venv"]).as_posix() for p in installed["venv"].rglob("TrainingBudget.xlsm*")]
    assert [w.split("site-packages/")[-1] for w in written] == ["trainbudget/addin/data/TrainingBudget.xlsm"]
    before = book.read_bytes()
    again = _run(installed, "trainbudget", "build")
    assert again.returncode == 2 and "--force" in again.stderr and book.read_bytes() == before

    proc = _run(installed, "trainbudget", "verify", "--no-recalc", "TrainingBudget.xlsm")
    assert proc.returncode == 0 and "clean" in proc.stdout, proc.stdout + proc.stderr
    proc = _run(installed, "trainbudget", "export", "TrainingBudget.xlsm", "--out", "budget.xlsx")
    assert proc.returncode == 0, proc.stderr
    assert zipfile.is_zipfile(work / "budget.xlsx")
    proc = _run(installed, "trainbudget", "measure", "--backend", "numpy", "--seconds", "0.2",
                "--into", "TrainingBudget.xlsm", "--name", "Wheel box", "--memory-gib", "16", "--watts", "100")
    assert proc.returncode == 0, proc.stderr
    assert "Wheel box" in proc.stdout and (work / "TrainingBudget.xlsm.bak").read_bytes() == before
    proc = _run(installed, "trainbudget", "verify", "--no-recalc", "TrainingBudget.xlsm")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = _run(installed, "trainbudget", "build", "--force")
    assert proc.returncode == 0, proc.stderr
