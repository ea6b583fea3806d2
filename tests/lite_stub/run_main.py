"""Runs a Lite workbook's main.py as xlwings Lite does, in a fresh interpreter started with
`python -I -S run_main.py WORKDIR`: sys.path holds the standard library, the stub `xlwings`
(beside this file) and WORKDIR/site (numpy alone), nothing else. Reads WORKDIR/main.py and
WORKDIR/cases.json ([{"name": ..., "args": [...]}]), writes WORKDIR/results.json."""

import importlib.util
import json
import sys
import types
from pathlib import Path

work = Path(sys.argv[1])
sys.path[:0] = [str(Path(__file__).resolve().parent), str(work / "site")]
found_before = importlib.util.find_spec("trainbudget") is not None

import xlwings  # noqa: E402  (the stub)

main = types.ModuleType("main")  # Lite runs main.py as module "main"
sys.modules["main"] = main
exec(compile((work / "main.py").read_text("utf-8"), "main.py", "exec"), main.__dict__)
cases = json.loads((work / "cases.json").read_text("utf-8"))
results = [xlwings.call(main, c["name"], c["args"]) for c in cases]
out = {"trainbudget_importable_before": found_before,
       "trainbudget_importable_after": importlib.util.find_spec("trainbudget") is not None,
       "xlwings_is_stub": xlwings.__version__ == "lite-stub",
       "modules": sorted(sys.modules), "meta": xlwings.meta(main), "results": results,
       "calc_origin": sys.modules["trainbudget_lite.calc.hardware.catalog"].__spec__.origin}
(work / "results.json").write_text(json.dumps(out, default=repr), "utf-8")
