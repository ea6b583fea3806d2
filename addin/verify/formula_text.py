"""What a formula's text may not do: ask another program (DDE), refer to another workbook, or call
a function that is neither Excel's nor TrainingBudget's (a typo such as TRAIN_HOURZ keeps its
last cached value in Excel and turns #NAME? on the next recalculation).

Checked on the text alone (regular expressions over the formula with its "strings" and 'quoted
names' blanked), so a 1,048,576-row sheet streams through in seconds.
"""

from __future__ import annotations

import re

from openpyxl.utils.formulas import FORMULAE

from ..functions.registry import FUNCTIONS
from .problems import Problem

# Excel's functions: openpyxl's list (Excel 2007's) and the later ones a file may hold without the
# _xlfn. prefix Excel itself writes for them ([MS-XLSX] §2.2.2 "Formulas": future functions);
# https://support.microsoft.com/office/excel-functions-alphabetical-b3944572-255d-4efb-bb96-c6d90033e188
LATER = frozenset(("IFS", "IFNA", "SWITCH", "XOR", "MAXIFS", "MINIFS", "CONCAT", "TEXTJOIN", "XLOOKUP", "XMATCH",
                   "LET", "LAMBDA", "FILTER", "SORT", "SORTBY", "UNIQUE", "SEQUENCE", "RANDARRAY", "AGGREGATE",
                   "STDEV.S", "STDEV.P", "VAR.S", "VAR.P", "NORM.DIST", "NORM.INV", "NORM.S.DIST", "NORM.S.INV",
                   "PERCENTILE.INC", "PERCENTILE.EXC", "QUARTILE.INC", "QUARTILE.EXC", "RANK.EQ", "RANK.AVG",
                   "MODE.SNGL", "CEILING.MATH", "FLOOR.MATH", "ISOWEEKNUM", "DAYS", "NUMBERVALUE", "FORMULATEXT",
                   "ISFORMULA", "SHEET", "SHEETS", "IFERROR", "AVERAGEIFS", "COUNTIFS", "SUMIFS", "TEXTBEFORE",
                   "TEXTAFTER", "TEXTSPLIT", "VSTACK", "HSTACK", "TAKE", "DROP", "CHOOSEROWS", "CHOOSECOLS",
                   "TOCOL", "TOROW", "WRAPROWS", "WRAPCOLS", "EXPAND", "BYROW", "BYCOL", "MAP", "REDUCE", "SCAN",
                   "MAKEARRAY", "ISOMITTED", "ARRAYTOTEXT", "VALUETOTEXT"))
KNOWN = frozenset(FORMULAE) | LATER | {f.name.upper() for f in FUNCTIONS}
OWN_PREFIXES = ("_XLFN._XLWS.", "_XLFN.", "_XLWS.")  # Excel's own marks of a newer function
PARAM_PREFIX = "_XLPM."  # a LAMBDA's parameter, called as a function inside it
DDE = "formula cells ask another program (DDE)"
EXTERNAL = "formula cells refer to another workbook"
UNKNOWN = "formula cells call a function that is neither Excel's nor TrainingBudget's"

_NUMBERED_BOOK = re.compile(r"\[\d+\]")  # [1]Sheet!A1: an external reference as Excel stores it
_BRACKETED = re.compile(r"\[[^\]]*\]")  # in formula text (not XML): a structured reference's [...]
_QUOTED_SHEET = re.compile(r"'((?:[^']|'')*)'!")  # 'C:\x\[book.xlsx]Sheet1'!A1
_BARE_BOOK = re.compile(r"(?<![A-Za-z0-9_.\]])\[[^\]]+\][A-Za-z0-9_.]+!")  # [book.xlsx]Sheet1!A1
_CALL = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_.]*)\s*\(")


def outside_quotes(formula: str) -> str:
    """The formula with its "strings" and 'quoted names' blanked out."""
    out, quote = [], None
    for ch in formula:
        if quote:
            quote = None if ch == quote else quote  # a doubled quote closes and reopens: same result
            out.append(" ")
        elif ch in "\"'":
            quote = ch
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def refers_outside(formula: str, bare: str | None = None) -> bool:
    """Whether a formula refers to another workbook ([1]Sheet!A1, [book.xlsx]Sheet!A1,
    'C:\\path\\[book.xlsx]Sheet'!A1)."""
    bare = outside_quotes(formula) if bare is None else bare
    if _NUMBERED_BOOK.search(bare) or _BARE_BOOK.search(bare):
        return True
    return any("[" in m and "]" in m for m in _QUOTED_SHEET.findall(_strings_blanked(formula)))


def _strings_blanked(formula: str) -> str:
    """The formula with only its "strings" blanked (quoted sheet names kept)."""
    return re.sub(r'"(?:[^"]|"")*"', lambda m: " " * len(m.group()), formula)


def unknown_calls(formula: str, bare: str | None = None) -> list[str]:
    """The functions a formula calls that are neither Excel's nor the registry's, as written."""
    bare = _BRACKETED.sub("", outside_quotes(formula) if bare is None else bare)
    found = []
    for name in _CALL.findall(bare):
        upper = name.upper()
        if upper.startswith(PARAM_PREFIX):
            continue
        plain = next((upper[len(p):] for p in OWN_PREFIXES if upper.startswith(p)), upper)
        if plain not in KNOWN and not upper.startswith(OWN_PREFIXES):
            found.append(name)
    return found


def problems(where: str, formula: str) -> list[Problem]:
    """The findings in one formula's text (`formula` without its '=')."""
    if "(" not in formula and "|" not in formula and "[" not in formula and "'" not in formula:
        return []  # references and arithmetic only (most cells of a large sheet): nothing to find
    bare = outside_quotes(formula)
    shown = f"={formula[:60]}"
    if "|" in _BRACKETED.sub("", bare):  # `|` is no Excel operator: it is DDE's app|topic!item
        # (a table column such as Devices[a|b] may hold one: bracketed text is left out)
        return [Problem(where, f"DDE formula (asks another program, e.g. to run a command): {shown}", kind=DDE,
                        fix="delete the formula")]
    if refers_outside(formula, bare):
        return [Problem(where, f"formula refers to another workbook: {shown}", kind=EXTERNAL,
                        fix="type the value instead, or refer to a sheet of this workbook")]
    unknown = unknown_calls(formula, bare)
    if unknown:
        return [Problem(where, f"formula calls {unknown[0]}, which is neither an Excel function nor "
                               f"TrainingBudget's: {shown}", kind=UNKNOWN,
                        fix="correct the name (see `trainbudget functions`) or delete the call")]
    return []
