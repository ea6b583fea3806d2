"""LibreOffice, headless, as the spreadsheet engine: recalculate workbooks, export PDF.

LibreOffice trusts cached values by default; a private profile whose registry sets
`OOXMLRecalcMode` and `ODFRecalcMode` to 0 ("always recalculate") makes it recompute every
formula on load. Files are converted from copies in a private folder, so a user's file is
never opened in place (and a stale `.~lock` file cannot block the run).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from .. import calc

_PROFILE_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">
 <prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">
 <prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""


class EngineError(calc.TrainingBudgetError):
    """LibreOffice is missing or failed."""


def soffice() -> str | None:
    """Path of LibreOffice's `soffice`, or None when it is not installed."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def _profile(root: Path) -> str:
    user = root / "profile" / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "registrymodifications.xcu").write_text(_PROFILE_XCU, "utf-8")
    return (root / "profile").as_uri()


def convert(paths: list[Path], to: str, outdir: Path, timeout: float | None = None) -> list[Path]:
    """Convert copies of `paths` with LibreOffice (`to`: 'xlsx', 'pdf', a filter string);
    every formula is recalculated on load. Returns the output paths, in order."""
    exe = soffice()
    if exe is None:
        raise EngineError("LibreOffice (soffice) is not installed; see the README's test command")
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tb-lo-") as tmp:
        root = Path(tmp)
        sources = []
        for i, p in enumerate(paths):
            src = root / "in" / str(i) / Path(p).name  # same stem, private folder per file
            src.parent.mkdir(parents=True)
            shutil.copyfile(p, src)
            sources.append(src)
        cmd = [exe, f"-env:UserInstallation={_profile(root)}", "--headless", "--norestore",
               "--convert-to", to, "--outdir", str(root / "out"), *map(str, sources)]
        env = {**os.environ, "HOME": str(root)}
        done = _run(cmd, env, timeout if timeout is not None else timeout_s(), [Path(p).name for p in paths])
        ext = to.split(":")[0]
        outs = []
        for src in sources:
            made = root / "out" / f"{src.stem}.{ext}"
            if not made.exists():
                raise EngineError(f"LibreOffice did not convert {src.name}: {done.stderr.strip()[-300:]}")
            target = outdir / made.name
            shutil.move(made, target)
            outs.append(target)
        return outs


def _run(cmd: list[str], env: dict[str, str], timeout_s: float, names: list[str]) -> subprocess.CompletedProcess:
    """LibreOffice run in its own process group; past `timeout_s` the whole group is killed and
    the run refused with one line."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise EngineError(f"LibreOffice did not finish converting {', '.join(names)} within {timeout_s:g} s; "
                              "nothing was written (set TRAINBUDGET_LO_TIMEOUT to allow longer)") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


MAX_TIMEOUT_S = 3600.0  # an hour: the slowest real conversion here takes seconds


def timeout_s() -> float:
    """Seconds LibreOffice may take per conversion (TRAINBUDGET_LO_TIMEOUT, default 180)."""
    text = os.environ.get("TRAINBUDGET_LO_TIMEOUT", "180")
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 1.0 <= seconds <= MAX_TIMEOUT_S:  # nan and inf fail too: a hung LibreOffice is always stopped
        raise EngineError(f"TRAINBUDGET_LO_TIMEOUT must be seconds in [1, {MAX_TIMEOUT_S:g}] (got {text!r})")
    return seconds


def recalculate(path: Path, outdir: Path) -> Path:
    """`path` recalculated by LibreOffice and saved as .xlsx in `outdir` (read it with data_only)."""
    return convert([path], "xlsx", outdir)[0]


def pdf(path: Path, out: Path, page_range: str | None = None) -> Path:
    """`path` printed to PDF by LibreOffice (its print areas; fonts embedded)."""
    spec = "pdf"
    if page_range:
        spec = 'pdf:calc_pdf_Export:{"PageRange":{"type":"string","value":"' + page_range + '"}}'
    with tempfile.TemporaryDirectory(prefix="tb-pdf-") as tmp:
        made = convert([path], spec, Path(tmp))[0]
        tmp_out = out.with_name(out.name + ".tmp")
        shutil.copyfile(made, tmp_out)
        os.replace(tmp_out, out)
    return out
