"""Counts written the way people say them: 7e9, 7B, 1.5T, 350M, 70k, 7,000,000.

One syntax for every count and number a person types (command-line options, scenarios cells):
ASCII digits, '.' for decimals, ',' only between groups of three digits (1,000,000 or 16,384:
a thousands separator, dropped). "7,5B" is refused with "write 7.5B", never read as 75B.
"""

from __future__ import annotations

import math
import re

from .errors import TrainingBudgetError, show

# A number whose ',' separate thousands: 1-3 digits, then groups of exactly three ("1,000.5e3").
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?")

# Short-scale suffixes, as model cards use them (7B = 7e9 parameters, 2T = 2e12 tokens), as
# powers of ten: "8.03B" reads as the text 8.03e9 (8030000000 exactly, not 8.03 * 1e9).
SUFFIX = {"k": 3, "m": 6, "b": 9, "g": 9, "t": 12, "p": 15}


def plain_digits(name: str, text: object, s: str, suffix: str = "") -> str:
    """`s` (the number part of `text`, `suffix` the count's letter if any) with thousands
    separators dropped; non-ASCII characters and a ',' that does not separate thousands are refused."""
    if not s.isascii():  # float() reads Arabic-Indic or full-width digits: not one syntax
        raise TrainingBudgetError(f"{name} must be written with ASCII digits 0-9 (got {show(text)})")
    if "," not in s:
        return s
    if _GROUPED.fullmatch(s.strip()):
        return s.replace(",", "")
    rule = "',' separates thousands, in groups of three digits as in 1,000,000, and '.' marks decimals"
    if s.count(",") == 1:
        decimal = s.strip().replace(",", ".") + suffix
        decimal = decimal if len(decimal) <= 20 else decimal[:19] + "…"
        raise TrainingBudgetError(f"{name}: write {decimal}: {rule} (got {show(text)})")
    raise TrainingBudgetError(f"{name}: {rule} (got {show(text)})")


def parse_count(name: str, text: str | float) -> float:
    """`text` as a positive count: '7e9', '7B', '1.5T', '350M' -> 7e9, 7e9, 1.5e12, 3.5e8."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            value = float(text)
        except OverflowError:  # a Python int beyond float64
            raise TrainingBudgetError(f"{name} must be a finite count (got {show(text)})") from None
    else:
        s = str(text).strip()
        exponent = SUFFIX.get(s[-1:].lower()) if s[-1:].isalpha() and s[-1:].isascii() else None
        body = plain_digits(name, text, s if exponent is None else s[:-1], "" if exponent is None else s[-1])
        try:
            value = float(body) if exponent is None else _scaled(float(body), exponent)
        except ValueError:
            raise TrainingBudgetError(
                f"{name} must be a count such as 7e9, 7B, 1.5T or 350M (got {show(text)})") from None
    if not math.isfinite(value):
        raise TrainingBudgetError(f"{name} must be a finite count (got {show(text)})")
    if value <= 0:
        raise TrainingBudgetError(f"{name} must be > 0 (got {show(text)})")
    return value


def _scaled(mantissa: float, exponent: int) -> float:
    """mantissa · 10^exponent through the text "8.03e9" where it can (exact to the last digit)."""
    r = repr(mantissa)
    return float(f"{r}e{exponent}") if "e" not in r and math.isfinite(mantissa) else mantissa * 10.0 ** exponent


def parse_share(name: str, text: str | float) -> float:
    """A share in (0, 1] written as 0.4 or 40%; 40 is refused with "did you mean 0.40?"."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        number, percent = (float(text) if abs(text) < 2**1024 else math.inf), False
    else:
        s = str(text).strip()
        percent = s.endswith("%")
        body = plain_digits(name, text, s[:-1] if percent else s, "%" if percent else "")
        try:
            number = float(body) / 100 if percent else float(body)
        except ValueError:
            raise TrainingBudgetError(f"{name} must be a fraction such as 0.4 or 40% (got {show(text)})") from None
    if 1 < number <= 100 and not percent:
        raise TrainingBudgetError(f"{name} must be in (0, 1] (got {show(text)}); did you mean {number / 100:.2f}?")
    if not (math.isfinite(number) and 0 < number <= 1):
        raise TrainingBudgetError(f"{name} must be in (0, 1] (got {show(text)})")
    return number


def parse_number(name: str, text: str | float, minimum: float = 0.0) -> float:
    """A finite number >= `minimum` written as text or given as a number (nan, inf, 1e309 refused)."""
    if isinstance(text, bool):
        raise TrainingBudgetError(f"{name} must be a number (got {text!r})")
    body = plain_digits(name, text, text.strip()) if isinstance(text, str) else None
    try:
        value = float(body) if body is not None else float(text)
    except (TypeError, ValueError):
        raise TrainingBudgetError(f"{name} must be a number (got {show(text)})") from None
    except OverflowError:  # a Python int beyond float64
        raise TrainingBudgetError(f"{name} must be a finite number (got {show(text)})") from None
    if not math.isfinite(value):
        raise TrainingBudgetError(f"{name} must be a finite number (got {show(text)})")
    if value < minimum:
        raise TrainingBudgetError(f"{name} must be >= {minimum:g} (got {show(text)})")
    return value + 0.0  # -0 reads as 0
