"""Re-run every transcript of a deterministic command in README.md and docs/*.md and rewrite its output.

    python -m tests.readme_transcripts          # rewrite README.md and docs/*.md in place
    python -m tests.readme_transcripts --check  # exit 1 when one of them differs

A transcript is a fenced block of lines `$ trainbudget ARGS` (a trailing backslash continues the
command on the next line) each followed by the command's output (stdout, or stderr when it
fails). `export` and `verify` run on a scratch copy of the template, named as the README names
it; a time they print ("in 3.5 s") is compared as a number of seconds, not digit by digit.
`measure` depends on this machine's speed and takes 20 s: it is kept as once run.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from tests.conftest import ROOT, run_cli

README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))  # every page a user reads
TEMPLATE = ROOT / "workbook" / "TrainingBudget.xlsm"
KEPT = ("measure",)  # this machine's speed, 20 s of it: shown as once run
ON_FILES = ("export", "verify")  # run on a scratch copy of the template
_SECONDS = re.compile(r"\bin \d+(?:\.\d+)? s\b")


def _output(command: str) -> str:
    args = shlex.split(command)[1:]  # drop "trainbudget"
    if args[0] not in ON_FILES:
        proc = run_cli(*args)
    else:
        with tempfile.TemporaryDirectory(prefix="tb-readme-") as tmp:
            (Path(tmp) / "workbook").mkdir()
            for copy in (Path(tmp) / TEMPLATE.name, Path(tmp) / "workbook" / TEMPLATE.name):
                shutil.copyfile(TEMPLATE, copy)
            proc = run_cli(*args, cwd=Path(tmp))
    return (proc.stdout if proc.returncode == 0 else proc.stderr).rstrip("\n")


def same(a: str, b: str) -> bool:
    """Two README texts agree, a printed time ("in 3.5 s") read as any number of seconds."""
    return _SECONDS.sub("in # s", a) == _SECONDS.sub("in # s", b)


def _commands(block: list[str]) -> list[tuple[list[str], str]]:
    """(the command's lines as written, the command) of each `$ ` line in a fenced block."""
    out, i = [], 0
    while i < len(block):
        if block[i].startswith("$ trainbudget"):
            lines = [block[i]]
            while lines[-1].endswith("\\") and i + 1 < len(block):
                i += 1
                lines.append(block[i])
            text = " ".join(line.rstrip("\\").strip() for line in lines)[2:]
            out.append((lines, text))
        i += 1
    return out


def regenerate(text: str) -> str:
    """The README with every deterministic transcript re-run."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        out.append(lines[i])
        if lines[i] != "```" or i + 1 >= len(lines) or not lines[i + 1].startswith("$ trainbudget"):
            i += 1
            continue
        end = lines.index("```", i + 1)
        block = lines[i + 1:end]
        commands = _commands(block)
        if any(shlex.split(cmd)[1] in KEPT for _, cmd in commands):
            out += block
        else:
            for written, cmd in commands:
                out += [*written, *_output(cmd).split("\n")]
        out.append("```")
        i = end + 1
    return "\n".join(out)


def main(argv: list[str]) -> int:
    stale = []
    for page in PAGES:
        text = page.read_text("utf-8")
        fresh = regenerate(text)
        if same(fresh, text):
            continue
        stale.append(page.relative_to(ROOT))
        if "--check" not in argv:
            page.write_text(fresh, "utf-8")
    if stale:
        print(("stale: " if "--check" in argv else "rewrote: ") + ", ".join(map(str, stale)))
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
