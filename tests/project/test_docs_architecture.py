"""docs/architecture.md names every module of calc and addin: each `calc/**/*.py` and `addin/**/*.py`
(but `__init__.py`, whose room the doc names by its folder) appears in it as a path string, e.g.
`calc/physics/fit.py`, and every such path the doc names exists."""

from __future__ import annotations

import re

from tests.conftest import ROOT

DOC = ROOT / "docs" / "architecture.md"


def _modules() -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() for top in ("calc", "addin") for p in (ROOT / top).rglob("*.py")
                  if p.name != "__init__.py" and "__pycache__" not in p.parts)


def test_every_module_of_calc_and_addin_is_named_in_the_architecture_doc():
    text = DOC.read_text("utf-8")
    modules = _modules()
    assert len(modules) > 50  # both packages found: the check below could not pass vacuously
    missing = [m for m in modules if m not in text]
    assert not missing, f"docs/architecture.md does not name {len(missing)} module(s): {', '.join(missing)}"


def test_every_module_path_the_doc_names_exists():
    named = set(re.findall(r"\b((?:calc|addin)/[\w/]+\.py)\b", DOC.read_text("utf-8")))
    gone = sorted(n for n in named if not (ROOT / n).is_file())
    assert not gone, f"docs/architecture.md names module(s) that do not exist: {', '.join(gone)}"
