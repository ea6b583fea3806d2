"""Small modules and short functions: no module of calc, addin or bench over 400 lines, no function
or method there over 60 (its decorators, signature, docstring and body)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE_LINES, FUNCTION_LINES = 400, 60
SOURCES = sorted(p for folder in ("calc", "addin", "bench") for p in (ROOT / folder).rglob("*.py"))


def test_the_sources_are_found() -> None:
    assert len(SOURCES) > 100 and ROOT / "calc" / "compose" / "budget.py" in SOURCES


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_and_functions_are_short(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MODULE_LINES, f"{path.name}: {len(text.splitlines())} lines"
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - min([node.lineno, *(d.lineno for d in node.decorator_list)]) + 1 > FUNCTION_LINES]
    assert not long, f"{path.name}: {', '.join(long)}"
