"""What `verify` reports: one Problem per finding, an error or a warning."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Problem:
    """One finding: where (Sheet!Cell, or a part of the file) and what.

    `severity` 'error' makes `verify` exit 1; a 'warning' is printed but leaves the exit status 0.
    """

    where: str
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.where}: {'warning: ' if self.severity == 'warning' else ''}{self.message}"

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def errors(problems: list[Problem]) -> list[Problem]:
    """The problems that make a workbook fail verification (warnings left out)."""
    return [p for p in problems if p.severity == "error"]
