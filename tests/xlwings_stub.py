"""Test helper: the UDF module reloaded under xlwings' real decorators (pywin32 stubbed), and the
VBA that xlwings' Import Functions writes for it."""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import types
from collections.abc import Iterator

import xlwings

from trainbudget.addin.udf import udfs


@contextlib.contextmanager
def udfs_with_vba(module_name: str, workbook: str) -> Iterator[tuple[types.ModuleType, str]]:
    """(the reloaded udfs module, the generated VBA); everything restored on exit."""
    stubs = {n: types.ModuleType(n) for n in ("pythoncom", "pywintypes", "win32com", "win32com.client")}
    stubs["win32com.client"].Dispatch = lambda *a, **k: None
    stubs["pywintypes"].com_error = Exception
    stubs["pythoncom"].CoInitialize = lambda: None
    saved = {n: sys.modules.get(n) for n in stubs}
    sys.modules.update(stubs)
    import xlwings.udfs as xu

    originals = (xlwings.func, xlwings.arg, xlwings.ret)
    xlwings.func, xlwings.arg, xlwings.ret = xu.xlfunc, xu.xlarg, xu.xlret
    try:
        module = importlib.reload(udfs)
        vba = io.StringIO()
        xu.generate_vba_wrapper(module_name, module, vba, types.SimpleNamespace(Name=workbook))
        yield module, vba.getvalue()
    finally:
        xlwings.func, xlwings.arg, xlwings.ret = originals
        importlib.reload(udfs)
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
