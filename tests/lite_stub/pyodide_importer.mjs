// A manual check, not part of the test suite (it needs npm): main.py's importer and resource
// reader under Pyodide 314 (Python 3.14 on Emscripten, what current xlwings Lite runs). Pyodide 314's
// numpy comes from the Pyodide CDN, which CI cannot reach, so only the numpy-free part runs here: the
// bundled files import and read back through importlib.resources, and every bundled source compiles.
// The whole bundle runs in CI on Pyodide 0.27.7 with numpy: tests/addin/lite/test_lite_runtime.py.
//
//   cd "$(mktemp -d)" && npm install pyodide@314.0.7
//   python -c "from trainbudget.addin.lite import bundle; open('main.py','w').write(bundle.main_py())"
//   node /path/to/tests/lite_stub/pyodide_importer.mjs main.py
//
// 2026-12-01, pyodide 314.0.7: {"python": "3.14.2", "platform": "emscripten", "csv_equal": true,
// "syntax_errors": [], ...}
import { createRequire } from "module";
import fs from "fs";

const { loadPyodide } = createRequire(process.cwd() + "/")("pyodide");
const text = fs.readFileSync(process.argv[2], "utf8");
const start = text.indexOf("from xlwings import arg, func\n") + "from xlwings import arg, func\n".length;
const end = text.indexOf("_install()\n\n") + "_install()\n".length;
const py = await loadPyodide();
py.globals.set("PART", text.slice(start, end));
console.log(py.runPython(`
import importlib, importlib.resources, json, sys
g = {"__name__": "main"}
exec(compile(PART, "main.py", "exec"), g)
import trainbudget_lite.addin.lite as lite
root = importlib.resources.files("trainbudget_lite")
csv = root.joinpath("calc/data/devices.csv").read_text("utf-8")
bad = []
for path, source in g["_SOURCES"].items():
    if path.endswith(".py"):
        try:
            compile(source, path, "exec")
        except SyntaxError as e:
            bad.append([path, str(e)])
json.dumps({"python": sys.version.split()[0], "platform": sys.platform,
            "csv_equal": csv == g["_SOURCES"]["trainbudget_lite/calc/data/devices.csv"],
            "data": sorted(p.name for p in (root / "calc" / "data").iterdir()),
            "runtime_chars": len(importlib.resources.files(lite).joinpath("runtime.py").read_text("utf-8")),
            "syntax_errors": bad, "origin": lite.__spec__.origin})
`));
