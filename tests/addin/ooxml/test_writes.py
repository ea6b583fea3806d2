"""Writes that cannot be torn, redirected or lost: `measure --into` and `build` against planted
symlinks, kills, concurrent writers, file modes and bad device names."""

from __future__ import annotations

import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from trainbudget import calc
from trainbudget.addin.measure import devices_write
from trainbudget.addin.ooxml import atomic, package
from trainbudget.addin.template import devices_table

MEASURE = ("measure", "--backend", "numpy", "--seconds", "0.2")


def _copy(built, tmp_path: Path, name: str = "book.xlsm") -> Path:
    return Path(shutil.copyfile(built.path, tmp_path / name))


def _names(path: Path) -> list[str]:
    rows = devices_table.read_rows(path)
    return [str(r[0]) for r in rows[1:]]


def _temps(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if atomic.TMP_MARK in p.name]


def test_mode_664_is_kept(built, tmp_path):
    path = _copy(built, tmp_path)
    os.chmod(path, 0o664)
    proc = run_cli(*MEASURE, "--into", str(path), "--name", "Lab")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o664
    assert stat.S_IMODE(path.with_name("book.xlsm.bak").stat().st_mode) == 0o664


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_new_file_follows_the_umask(tmp_path, umask):
    out = tmp_path / "new.xlsm"
    proc = subprocess.run([sys.executable, "-m", "trainbudget.addin.cli", "build", "--out", str(out)],
                          capture_output=True, text=True, preexec_fn=lambda: os.umask(umask))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_planted_backup_symlink_never_touches_its_target(built, tmp_path):
    path = _copy(built, tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    bak = path.with_name("book.xlsm.bak")
    bak.symlink_to(victim)
    original = path.read_bytes()
    proc = run_cli(*MEASURE, "--into", str(path), "--name", "Lab")
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious"
    assert not bak.is_symlink() and bak.read_bytes() == original
    assert "Lab" in _names(path)


def test_symlinked_workbook_updates_the_real_file(built, tmp_path):
    real_dir = tmp_path / "share"
    real_dir.mkdir()
    real = _copy(built, real_dir, "team.xlsm")
    link = tmp_path / "link.xlsm"
    link.symlink_to(real)
    proc = run_cli(*MEASURE, "--into", str(link), "--name", "Lab")
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and link.resolve() == real
    assert "Lab" in _names(real)
    assert (real_dir / "team.xlsm.bak").is_file() and not (tmp_path / "link.xlsm.bak").exists()
    assert "team.xlsm.bak" in proc.stdout


def test_stale_temp_files_are_removed_by_the_next_write(built, tmp_path):
    path = _copy(built, tmp_path)
    stale = tmp_path / f".book.xlsm{atomic.TMP_MARK}deadbeef"
    stale.write_bytes(b"left by a killed run")
    other = tmp_path / f".other.xlsm{atomic.TMP_MARK}deadbeef"  # another file's: not ours to remove
    other.write_bytes(b"x")
    devices_write.upsert_device(path, calc.Device("Lab", 1.0, source="s"))
    assert not stale.exists() and other.exists()


def test_temp_file_removed_when_the_write_fails(built, tmp_path, monkeypatch):
    path = _copy(built, tmp_path)
    before = path.read_bytes()

    def broken(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", broken)
    with pytest.raises(OSError, match="No space"):
        devices_write.upsert_device(path, calc.Device("Lab", 1.0, source="s"))
    assert path.read_bytes() == before and _temps(tmp_path) == []


def test_sigterm_during_a_write_leaves_no_temp_file(tmp_path):
    """SIGTERM arrives while the temporary file is being written: it is removed, the target kept."""
    target = tmp_path / "t.bin"
    target.write_bytes(b"old")
    code = ("import os, signal, sys\nfrom trainbudget.addin.ooxml import atomic\n"
            f"with atomic.atomic_path(__import__('pathlib').Path({str(target)!r})) as tmp:\n"
            "    tmp.write_bytes(b'new')\n    os.kill(os.getpid(), signal.SIGTERM)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert target.read_bytes() == b"old" and _temps(tmp_path) == []


def test_measure_into_killed_at_random_moments_is_never_torn(built, tmp_path):
    """SIGKILL at random delays across start-up, measuring and writing: the workbook is always
    the original bytes or a complete update; a temporary file a kill left is gone after the next write."""
    path = _copy(built, tmp_path)
    original = path.read_bytes()
    rng = random.Random(14)
    outcomes = []
    for trial in range(10):
        before = path.read_bytes()
        proc = subprocess.Popen([sys.executable, "-m", "trainbudget.addin.cli", *MEASURE, "--into", str(path),
                                 "--name", f"Lab {trial}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        after = path.read_bytes()
        names = _names(path)  # parses every part: a torn file would fail here
        if after == before:
            outcomes.append("untouched")
        else:
            assert f"Lab {trial}" in names
            outcomes.append("updated")
    print("kill outcomes:", outcomes)
    assert path.read_bytes() != original or outcomes.count("untouched") == 10
    devices_write.upsert_device(path, calc.Device("After", 1.0, source="s"))
    assert _temps(tmp_path) == []


def test_two_concurrent_writers_both_land(built, tmp_path):
    path = _copy(built, tmp_path)
    procs = [subprocess.Popen([sys.executable, "-m", "trainbudget.addin.cli", *MEASURE, "--into", str(path),
                               "--name", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("Writer A", "Writer B")]
    results = [(*p.communicate(), p.returncode) for p in procs]
    assert all(rc == 0 for _, _, rc in results), results
    names = _names(path)
    assert "Writer A" in names and "Writer B" in names


def test_second_writer_waits_then_is_refused_while_the_lock_is_held(built, tmp_path, monkeypatch):
    path = _copy(built, tmp_path)
    before = path.read_bytes()
    code = ("import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(30)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        monkeypatch.setattr(atomic, "LOCK_WAIT_S", 0.3)
        with pytest.raises(package.BadWorkbookError, match="another trainbudget is writing"), \
                atomic.locked(path, wait_s=0.3):
            pass
        with pytest.raises(package.BadWorkbookError, match="another trainbudget is writing"):
            devices_write.upsert_device(path, calc.Device("Lab", 1.0, source="s"))
    finally:
        holder.kill()
        holder.wait()
    assert path.read_bytes() == before


@pytest.mark.parametrize("name,why", [("bad\x01name", "control character U+0001"), ("   ", "blank"),
                                      ("x" * 256, "at most 255"), ("bad\udcffname", "not valid Unicode"),
                                      ("tab\tname", "control character U+0009")])
def test_bad_names_refused_before_anything_is_written(built, tmp_path, name, why):
    path = _copy(built, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir()), path.read_bytes()
    proc = run_cli(*MEASURE, "--into", str(path), "--name", name)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert why in proc.stderr and "Traceback" not in proc.stderr
    assert (sorted(p.name for p in tmp_path.iterdir()), path.read_bytes()) == before


def test_longest_name_and_unicode_are_kept(built, tmp_path):
    path = _copy(built, tmp_path)
    for name in ("é" * 255, "測定 GPU ✓"):
        devices_write.upsert_device(path, calc.Device(name, 1.0, source="s"))
        assert name in _names(path)


@pytest.mark.parametrize("seconds", ["inf", "1e9", "3601", "nan", "0"])
def test_seconds_outside_its_stated_range_is_refused(seconds):
    proc = run_cli(*MEASURE[:3], "--seconds", seconds)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "seconds" in proc.stderr and proc.stdout == ""


def test_keep_backup_keeps_a_file_and_never_follows_a_link(tmp_path):
    mine, target, link = tmp_path / "mine.xlsx", tmp_path / "target.xlsx", tmp_path / "link.xlsx"
    mine.write_bytes(b"mine")
    target.write_bytes(b"target")
    link.symlink_to(target)
    assert package.keep_backup(mine) == tmp_path / "mine.xlsx.bak"
    assert (tmp_path / "mine.xlsx.bak").read_bytes() == b"mine"
    assert package.keep_backup(link) is None and package.keep_backup(tmp_path / "absent.xlsx") is None
    assert target.read_bytes() == b"target" and not (tmp_path / "link.xlsx.bak").exists()
