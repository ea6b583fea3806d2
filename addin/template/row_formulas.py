"""The formula language of the Budget sheet's step block, evaluated in Python: names, numbers,
+ - * /, comparisons, text in quotes, TRUE and FALSE, and IF, AND, OR, MAX, MIN, INT, ROUNDUP (to whole
numbers), NA, POWER, ISBLANK (a name whose value is None). The block's cached values are worked out
with it and checked against calc, so a row's native formula and its cached value are one expression."""

from __future__ import annotations

import math
import re
from typing import Any

_FUNCTIONS = {"IF": "_if", "AND": "_and", "OR": "_or", "MAX": "max", "MIN": "min", "INT": "math.floor",
              "ROUNDUP": "_roundup", "NA": "_na", "POWER": "pow", "ISBLANK": "_isblank",
              "TRUE": "True", "FALSE": "False"}


def _roundup(x: float, digits: int) -> float:
    """Excel's ROUNDUP to whole numbers (digits 0), away from zero."""
    if digits != 0:
        raise ValueError("ROUNDUP here rounds to whole numbers only")
    return float(math.ceil(x) if x >= 0 else math.floor(x))


def evaluate(formula: str, values: dict[str, Any]) -> Any:
    """A row's formula (this module's own: names, numbers, + - * /, comparisons and the functions
    of _FUNCTIONS) evaluated in Python over `values`: the helper rows' cached values."""
    def word(m: re.Match[str]) -> str:
        token = m.group(0)
        if token.startswith('"'):
            return token
        return _FUNCTIONS.get(token, f"_v[{token!r}]")
    py = re.sub(r'"[^"]*"|(?<![0-9.])[A-Za-z_][A-Za-z0-9_]*', word, formula)
    py = re.sub(r"(?<![<>])=", "==", py)
    return eval(py, {"__builtins__": {}, "_if": lambda c, a, b: a if c else b,
                     "_and": lambda *tests: all(tests), "_or": lambda *tests: any(tests), "_roundup": _roundup,
                     "_isblank": lambda v: v is None,
                     "max": max, "min": min, "pow": pow,
                     "math": math, "_na": lambda: math.nan, "_v": values})
