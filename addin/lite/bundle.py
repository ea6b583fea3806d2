"""main.py for xlwings Lite, generated from the installed package at build time.

The workbook's main.py carries the calculator and its data: the source of every module of
trainbudget.calc, its CSV tables, and runtime.py, as a dict of texts that a small importer at the
top of main.py serves from memory under the name `trainbudget_lite` (so it never shadows an
installed trainbudget). Then one `@func` per registry entry, with the desktop UDF's name,
argument docs and optional arguments, without xlwings' `caller`, each handing its arguments to
runtime.call. Lite runs main.py as module "main" and registers every member that carries
`__xlfunc__` (xlwings/pro/udfs_officejs.py custom_functions_meta: inspect.getmembers).
"""

from __future__ import annotations

from importlib import metadata, resources
from typing import Any

from ... import calc
from . import spec as lite_spec

ROOT = "trainbudget_lite"
RUNTIME = f"{ROOT}.addin.lite.runtime"

# The importer at the top of main.py: module sources and data files served from _SOURCES.
# importlib.resources.files() reaches the CSVs through the loader's resource reader
# (importlib.resources.abc.TraversableResources, Python 3.11+; Pyodide 0.27 is 3.12).
IMPORTER = '''
import importlib.abc
import importlib.machinery
import importlib.resources.abc
import io
import sys

_ROOT = "trainbudget_lite"


class _File(importlib.resources.abc.Traversable):
    """A bundled file or folder (a path inside _SOURCES), as importlib.resources sees it."""

    def __init__(self, path):
        self._path = path

    @property
    def name(self):
        return self._path.rsplit("/", 1)[-1]

    def is_file(self):
        return self._path in _SOURCES

    def is_dir(self):
        return any(p.startswith(self._path + "/") for p in _SOURCES)

    def iterdir(self):
        below = {p[len(self._path) + 1:].split("/", 1)[0] for p in _SOURCES if p.startswith(self._path + "/")}
        return iter([_File(self._path + "/" + n) for n in sorted(below)])

    def joinpath(self, *parts):
        path = "/".join([self._path, *(s for p in parts for s in str(p).split("/") if s)])
        return _File(path)

    def __truediv__(self, child):
        return self.joinpath(child)

    def read_bytes(self):
        if not self.is_file():
            raise FileNotFoundError(self._path)
        return _SOURCES[self._path].encode("utf-8")

    def read_text(self, encoding=None, errors=None):
        return self.read_bytes().decode(encoding or "utf-8", errors or "strict")

    def open(self, mode="r", *args, **kwargs):
        data = self.read_bytes()
        return io.BytesIO(data) if "b" in mode else io.StringIO(data.decode(kwargs.get("encoding") or "utf-8"))


class _Files(importlib.resources.abc.TraversableResources):
    def __init__(self, folder):
        self._folder = folder

    def files(self):
        return _File(self._folder)


class _Bundle(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the bundled modules (trainbudget_lite.*) from _SOURCES."""

    is_trainbudget_bundle = True

    def __init__(self, sources):
        self.sources = sources

    @staticmethod
    def _path(fullname):
        folder = fullname.replace(".", "/")
        if folder + "/__init__.py" in _SOURCES:
            return folder + "/__init__.py", True
        return (folder + ".py", False) if folder + ".py" in _SOURCES else (None, False)

    def find_spec(self, fullname, path=None, target=None):
        found, package = self._path(fullname)
        if found is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin="main.py:" + found, is_package=package)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        found, _ = self._path(module.__name__)
        exec(compile(_SOURCES[found], "main.py:" + found, "exec"), module.__dict__)

    def get_source(self, fullname):
        return _SOURCES.get(self._path(fullname)[0])

    def get_resource_reader(self, fullname):
        return _Files(fullname.replace(".", "/"))


def _install():
    """The bundle first on sys.meta_path. Lite executes main.py more than once: the same bundle
    again keeps the modules already imported, so functions of every run share one calc (one
    TrainingBudgetError class); a different bundle (the workbook rebuilt) replaces them."""
    mine = [f for f in sys.meta_path if getattr(f, "is_trainbudget_bundle", False)]
    if mine and mine[0].sources == _SOURCES:
        return
    sys.meta_path[:] = [f for f in sys.meta_path if f not in mine]
    for name in [m for m in sys.modules if m == _ROOT or m.startswith(_ROOT + ".")]:
        del sys.modules[name]
    sys.meta_path.insert(0, _Bundle(_SOURCES))
'''


def sources() -> dict[str, str]:
    """Every bundled file by its path under ROOT: calc's modules and CSVs, runtime.py, the add-in
    modules over calc alone (spec.BUNDLED), and empty package markers for the folders between them."""
    files: dict[str, str] = {f"{ROOT}/__init__.py": "", f"{ROOT}/addin/__init__.py": "",
                             f"{ROOT}/addin/lite/__init__.py": ""}
    here = resources.files(calc.__name__)
    for entry in sorted(here.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".py"):
            files[f"{ROOT}/calc/{entry.name}"] = entry.read_text("utf-8")
        elif entry.is_dir() and entry.joinpath("__init__.py").is_file():  # a room of calc
            for module in sorted(entry.iterdir(), key=lambda e: e.name):
                if module.name.endswith(".py"):
                    files[f"{ROOT}/calc/{entry.name}/{module.name}"] = module.read_text("utf-8")
    for entry in sorted(here.joinpath("data").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".csv"):
            files[f"{ROOT}/calc/data/{entry.name}"] = entry.read_text("utf-8")
    files[f"{ROOT}/addin/lite/runtime.py"] = resources.files(__package__).joinpath("runtime.py").read_text("utf-8")
    root = calc.__name__.rsplit(".", 1)[0]
    for module in lite_spec.BUNDLED:  # add-in modules over calc alone (the step model's functions)
        folder, _, leaf = module.rpartition(".")
        files.setdefault(f"{ROOT}/{folder.replace('.', '/')}/__init__.py", "")
        source = resources.files(f"{root}.{folder}").joinpath(leaf + ".py").read_text("utf-8")
        files[f"{ROOT}/{module.replace('.', '/')}.py"] = source
    return files


def _version() -> str:
    try:
        return metadata.version("trainbudget")
    except metadata.PackageNotFoundError:
        return "unknown"


def declaration(fn: dict[str, Any]) -> str:
    """One Lite function: `@func`, one `@arg` per argument (raw values, the desktop's docs),
    required arguments first and optional ones defaulting to None, as the desktop UDF."""
    lines = ["@func"]
    lines += [f"@arg({a['name']!r}, 'raw', doc={a['doc']!r})" for a in fn["args"]]
    params = ", ".join(a["name"] if a["required"] else f"{a['name']}=None" for a in fn["args"])
    lines += [f"def {fn['name']}({params}):", f"    {fn['description']!r}",
              f"    return _runtime.call(_FUNCTIONS[{fn['name']!r}], locals(), _SPEC)", "", "", ""]
    return "\n".join(lines)


def runtime_spec(spec: dict[str, Any]) -> str:
    """`_SPEC = {...}`: what runtime.call reads (the docs live in the @arg lines), one function a line."""
    lines = ["_SPEC = {"]
    lines += [f"    {k!r}: {v!r}," for k, v in spec.items() if k != "functions"]
    lines.append("    'functions': [")
    for fn in spec["functions"]:
        slim = {**fn, "args": [{k: v for k, v in a.items() if k != "doc"} for a in fn["args"]]}
        slim.pop("description")
        lines.append(f"        {slim!r},")
    return "\n".join([*lines, "    ],", "}", ""])


def main_py() -> str:
    """The text of main.py: docstring, importer, bundled sources, spec, one function per entry."""
    spec = lite_spec.build()
    names = ", ".join(f["name"] for f in spec["functions"])
    head = (f'"""TrainingBudget {_version()} for xlwings Lite: {names}.\n\n'
            "GENERATED by `trainbudget lite` from the trainbudget package; edits here are lost when the\n"
            "workbook is built again. The calculator (trainbudget.calc), its data tables (CSV, each row with\n"
            "its source and as_of) and the Lite runtime are bundled below as texts and imported from memory\n"
            f"as `{ROOT}`, so this workbook needs nothing but numpy. Device names resolve against the\n"
            f"bundled catalog, or first against a Devices range passed as the last argument, {spec['table_arg']}.\n"
            '"""\n\n')
    body = [head, "from xlwings import arg, func\n", IMPORTER, "\n_SOURCES = {\n"]
    body += [f"    {path!r}: {text!r},\n" for path, text in sources().items()]
    body += ["}\n\n_install()\n\n", f"from {ROOT}.addin.lite import runtime as _runtime  # noqa: E402\n\n",
             runtime_spec(spec), '_FUNCTIONS = {f["name"]: f for f in _SPEC["functions"]}\n\n\n']
    body += [declaration(fn) for fn in spec["functions"]]
    return "".join(body).rstrip() + "\n"
