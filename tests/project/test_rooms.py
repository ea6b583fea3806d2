"""The rooms' arrows point down: a room of trainbudget.addin or trainbudget.calc imports only rooms
below it (or its own), calc imports nothing of the addin, addin and bench take calc's public names
only (trainbudget.calc itself, never a room of it), every room says in its docstring what it holds
and what it may import, and no module of calc or addin is part of an import cycle (imports inside
functions count: a late import hides a cycle, it does not remove it)."""

from __future__ import annotations

import ast
import functools
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Top to bottom, as addin/__init__.py lists them; rooms on one line may not import each other.
LAYERS = [("cli",), ("lite", "udf"), ("export", "verify", "measure"), ("template",), ("vba",),
          ("libreoffice",), ("functions",), ("ooxml",)]
RANK = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}
# calc's rooms, top to bottom (calc/__init__.py's docstring lists them bottom up).
CALC_LAYERS = ["planning", "compose", "prior", "money", "step", "physics", "hardware", "model", "base"]
CALC_RANK = {room: i for i, room in enumerate(CALC_LAYERS)}


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = ["trainbudget", *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target(package: str, node: ast.ImportFrom) -> str:
    """The full name of the module a `from ... import` in `package` reads (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path) -> set[str]:
    """Modules of trainbudget that `path` imports, anywhere in the file, resolved to full names."""
    mod = _module(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("trainbudget")}
        elif isinstance(node, ast.ImportFrom):
            target = _target(package, node)
            if not target.startswith("trainbudget"):
                continue
            found.add(target)
            found |= {f"{target}.{a.name}" for a in node.names}
    return found


@functools.cache
def _graph() -> dict[str, set[str]]:
    files = [*ROOT.glob("calc/**/*.py"), *ROOT.glob("addin/**/*.py")]
    modules = {_module(f): f for f in files}
    return {m: {i for i in _imports(f) if i in modules and i != m} for m, f in modules.items()}


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "addin" else None


def _calc_room(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "calc" else None


def test_every_calc_room_is_listed_and_says_what_it_holds() -> None:
    rooms = {p.name for p in (ROOT / "calc").iterdir() if (p / "__init__.py").exists()}
    assert rooms == set(CALC_RANK), f"calc's rooms and the layer list differ: {sorted(rooms ^ set(CALC_RANK))}"
    assert not [p.name for p in (ROOT / "calc").glob("*.py") if p.name != "__init__.py"], "a module outside the rooms"
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert {f"trainbudget.calc.{r}" for r in rooms} <= set(listed), "a room missing from pyproject's packages"
    for room in rooms:
        doc = ast.get_docstring(ast.parse((ROOT / "calc" / room / "__init__.py").read_text())) or ""
        assert len(doc) > 80 and "imports" in doc.lower(), f"calc/{room}/__init__.py: what it holds, imports?"


@pytest.mark.parametrize("module", sorted(m for m in _graph() if _calc_room(m)))
def test_calc_rooms_import_only_downward(module: str) -> None:
    _imports_only_downward(module, _calc_room, CALC_RANK)


@pytest.mark.parametrize("path", sorted([*ROOT.glob("addin/**/*.py"), *ROOT.glob("bench/*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_addin_and_bench_take_calc_public_names_only(path: Path) -> None:
    """`from trainbudget import calc` and `from trainbudget.calc import NAME` (NAME in calc.__all__);
    never a room or module of calc."""
    import trainbudget.calc as calc
    mod = "bench.x" if "bench" in path.parts else _module(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            assert not [a.name for a in node.names if a.name.startswith("trainbudget.calc.")], path
        elif isinstance(node, ast.ImportFrom):
            target = _target(package, node)
            assert not target.startswith("trainbudget.calc."), f"{path} imports {target}"
            if target == "trainbudget.calc":
                assert {a.name for a in node.names} <= set(calc.__all__), f"{path}: not public in calc"


def test_every_room_is_listed() -> None:
    rooms = {p.stem if p.is_file() else p.name for p in (ROOT / "addin").iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert rooms <= set(RANK), f"rooms not in the layer list: {sorted(rooms - set(RANK))}"


@pytest.mark.parametrize("module", sorted(m for m in _graph() if _room(m)))
def test_rooms_import_only_downward(module: str) -> None:
    _imports_only_downward(module, _room, RANK)


def _imports_only_downward(module: str, room_of, rank: dict[str, int]) -> None:
    here = room_of(module)
    for target in _graph()[module]:
        there = room_of(target)
        if there is None or there == here:
            continue
        assert rank[there] > rank[here], f"{module} imports {target}: {there} is not below {here}"


def test_calc_imports_nothing_of_the_addin() -> None:
    for module, targets in _graph().items():
        if module.startswith("trainbudget.calc"):
            assert not {t for t in targets if t.startswith("trainbudget.addin")}, module


@pytest.mark.parametrize("package", ["trainbudget.addin", "trainbudget.calc"])
def test_no_import_cycles(package: str) -> None:
    graph = {m: t for m, t in _graph().items() if m.startswith(package)}
    # Package __init__ files re-export their modules; an edge into a package is an edge to its
    # __init__ only, so a cycle through a package's re-exports still shows.
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m] & graph.keys()):
            if t.startswith(m + "."):  # a package importing its own modules is no cycle
                continue
            if state.get(t) == 1:
                cycle = [*stack[stack.index(t):], t]
                if not any(a.startswith(b + ".") for a, b in zip(cycle[1:], cycle, strict=False)):
                    raise AssertionError("import cycle: " + " -> ".join(cycle))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("path", sorted([*ROOT.glob("addin/**/*.py"), *ROOT.glob("bench/*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_calc_name_used_is_public(path: Path) -> None:
    """`calc.NAME` in addin and bench reads a public name of calc (in calc.__all__)."""
    import trainbudget.calc as calc
    used = {n.attr for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "calc"
            and not n.attr.startswith("__")}
    assert used <= set(calc.__all__), f"{path}: not public in calc: {sorted(used - set(calc.__all__))}"


def test_every_public_name_of_calc_is_there() -> None:
    import trainbudget.calc as calc
    assert not [n for n in calc.__all__ if not hasattr(calc, n)]
