"""What `verify` reports: one Problem per finding, an error or a warning; `grouped` turns many
findings of one kind into one line with the count, the first places and the fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass

FIRST = 3  # places named on a grouped line before "..."


@dataclass(frozen=True)
class Problem:
    """One finding: where (Sheet!Cell, or a part of the file) and what.

    `severity` 'error' makes `verify` exit 1; a 'warning' is printed but leaves the exit status 0.
    `kind` (a plural phrase, "formula cells have no cached value") groups findings of one kind on
    one line of text output, and `fix` says what to do about them; findings without a kind are
    grouped when their messages are equal.
    """

    where: str
    message: str
    severity: str = "error"
    kind: str = ""
    fix: str = ""

    def __str__(self) -> str:
        fix = f" ({self.fix})" if self.fix else ""
        return f"{self.where}: {'warning: ' if self.severity == 'warning' else ''}{self.message}{fix}"

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def errors(problems: list[Problem]) -> list[Problem]:
    """The problems that make a workbook fail verification (warnings left out)."""
    return [p for p in problems if p.severity == "error"]


def grouped(problems: list[Problem]) -> list[str]:
    """One line per kind of finding, in the order each kind first appears: a lone finding as
    str(Problem); several as "N KIND (A, B, C, ...): FIX" (or "MESSAGE (N places: A, B, C, ...)")."""
    groups: dict[tuple[str, str], list[Problem]] = {}
    for p in problems:
        groups.setdefault((p.severity, p.kind or p.message), []).append(p)
    lines = []
    for (severity, _), found in groups.items():
        first = found[0]
        if len(found) == 1:
            lines.append(str(first))
            continue
        places = ", ".join(p.where for p in found[:FIRST]) + (", ..." if len(found) > FIRST else "")
        warn = "warning: " if severity == "warning" else ""
        if first.kind:
            lines.append(f"{warn}{len(found)} {first.kind} ({places})" + (f": {first.fix}" if first.fix else ""))
        else:
            lines.append(f"{warn}{first.message} ({len(found)} places: {places})")
    return lines
