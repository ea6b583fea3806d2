"""Runs inside real Pyodide (run.mjs), the way xlwings Lite runs a workbook: xlwings imported with
XLWINGS_ON_SERVER=true (so `from xlwings import func` is xlwings.server's Office.js decorator),
main.py executed as module "main" (xlwings-server wasm/wasm_runtime.py create_module_from_string),
its metadata read with custom_functions_meta, and each call made with custom_functions_call on an
Office.js-style payload, an exception becoming {"error": str(e)} as the runtime turns it into
#VALUE! with that message.

run(REQUEST) takes JSON {"main_py", "env", "cases": [{"func", "args", "runtime"}],
"conversions": [{"value", "runtime", "through_bundle"}]}. In "args", JSON null is an empty cell or
an omitted argument; each case runs twice, nulls as None (Pyodide 0.27) and as jsnull (Pyodide 0.28
and later convert a nested JS null to jsnull). main.py is then executed a second time, as Lite
does, and every case runs again through the new module and through the first one.
It returns the answer as JSON text; run.mjs awaits it.
"""

import importlib.util
import json
import os
import sys
import traceback

import numpy as np
import pyodide
import pyodide.ffi


class JsNull:
    """Pyodide 0.27 has no jsnull: this stands in with its observable traits (falsy, hashable,
    printed "jsnull", of type JsNull), exported where xlwings' js_to_none looks for it."""

    def __repr__(self) -> str:
        return "jsnull"

    def __bool__(self) -> bool:
        return False


if hasattr(pyodide.ffi, "JsNull"):
    JSNULL, JSNULL_KIND = pyodide.ffi.jsnull, "native"
else:
    JSNULL, JSNULL_KIND = JsNull(), "emulated"
    pyodide.ffi.JsNull, pyodide.ffi.jsnull = JsNull, JSNULL


def create_module_from_string(text, name):
    """As xlwings-server's wasm runtime does it."""
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    exec(text, module.__dict__)
    sys.modules[name] = module
    return module


def nulls(value, null):
    """`value` with every None (JSON null) replaced by `null`."""
    if value is None:
        return null
    if isinstance(value, list):
        return [nulls(v, null) for v in value]
    return value


def plain(value):
    """JSON-ready: numpy scalars as Python numbers, anything else unknown as its repr."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return {"repr": repr(value), "type": type(value).__name__}


async def run(request_text):
    request = json.loads(request_text)
    os.environ.update(request["env"])
    os.environ["XLWINGS_ON_SERVER"] = "true"  # what Lite sets before importing xlwings
    import xlwings as xw
    from xlwings.pro import udfs_officejs
    from xlwings.server import custom_functions_call, custom_functions_meta

    def payload(case, null):
        """What Lite hands custom_functions_call for one call (xlwings-server custom-functions-code.js)."""
        return {"func_name": case["func"], "args": nulls(case["args"], null), "caller_address": "Functions!D2",
                "runtime": case.get("runtime", "1.4"), "client": "Office.js", "version": xw.__version__,
                "culture_info_name": "en-US", "date_format": "M/d/yyyy"}

    async def call(module, case, null):
        try:
            return {"value": plain(await custom_functions_call(payload(case, null), module))}
        except Exception as e:  # the runtime answers {"error": str(e)}: #VALUE! with this message
            return {"error": str(e), "type": type(e).__name__, "where": traceback.format_exc().splitlines()[-3:]}

    async def run_all(module):
        return {mode: [await call(module, c, null) for c in request["cases"]]
                for mode, null in (("none", None), ("jsnull", JSNULL))}

    async def convert(module, item):
        """A result through xlwings' own output conversion, as a call's result goes."""
        value, ret = item["value"], getattr(module, item["func"]).__xlfunc__["ret"]
        if item["through_bundle"]:
            value = module._runtime.value_out(np.array(value, dtype=float) if isinstance(value, list) else value,
                                              module._SPEC["does_not_fit"])
        return plain(await udfs_officejs.convert(value, ret, {"runtime": item["runtime"]}))

    first = create_module_from_string(request["main_py"], "main")
    answer = {"versions": {"python": sys.version.split()[0], "pyodide": pyodide.__version__,
                           "numpy": np.__version__, "xlwings": xw.__version__, "platform": sys.platform,
                           "jsnull": JSNULL_KIND},
              "func_is_server_func": xw.func is udfs_officejs.xlfunc,
              "meta": custom_functions_meta(first),
              "first": await run_all(first),
              "conversions": [await convert(first, c) for c in request["conversions"]]}
    second = create_module_from_string(request["main_py"], "main")  # Lite parses main.py again
    answer["second"] = await run_all(second)
    answer["stale"] = await run_all(first)  # calls still bound to the first run's functions
    answer["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in ("trainbudget", "trainbudget_lite"))
    return json.dumps(answer, default=repr)
