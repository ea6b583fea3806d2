"""Counts written the way people say them: 7e9, 7B, 1.5T, 350M, 70k, 7,000,000."""

from __future__ import annotations

import math

from .errors import TrainingBudgetError

# Short-scale suffixes, as model cards use them (7B = 7e9 parameters, 2T = 2e12 tokens), as
# powers of ten: "8.03B" reads as the text 8.03e9 (8030000000 exactly, not 8.03 * 1e9).
SUFFIX = {"k": 3, "m": 6, "b": 9, "g": 9, "t": 12, "p": 15}


def parse_count(name: str, text: str | float) -> float:
    """`text` as a positive count: '7e9', '7B', '1.5T', '350M' -> 7e9, 7e9, 1.5e12, 3.5e8."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        s = str(text).strip().replace(",", "").replace("_", "")
        exponent = SUFFIX.get(s[-1:].lower()) if s[-1:].isalpha() else None
        try:
            value = float(s) if exponent is None else _scaled(float(s[:-1]), exponent)
        except ValueError:
            raise TrainingBudgetError(
                f"{name} must be a count such as 7e9, 7B, 1.5T or 350M (got {text!r})") from None
    if not math.isfinite(value) or value <= 0:
        raise TrainingBudgetError(f"{name} must be > 0 (got {text!r})")
    return value


def _scaled(mantissa: float, exponent: int) -> float:
    """mantissa · 10^exponent through the text "8.03e9" where it can (exact to the last digit)."""
    r = repr(mantissa)
    return float(f"{r}e{exponent}") if "e" not in r and math.isfinite(mantissa) else mantissa * 10.0 ** exponent


def parse_share(name: str, text: str | float) -> float:
    """A share in (0, 1] written as 0.4 or 40%; 40 is refused with "did you mean 0.40?"."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        number, percent = float(text), False
    else:
        s = str(text).strip()
        percent = s.endswith("%")
        try:
            number = float(s[:-1]) / 100 if percent else float(s)
        except ValueError:
            raise TrainingBudgetError(f"{name} must be a fraction such as 0.4 or 40% (got {text!r})") from None
    if 1 < number <= 100 and not percent:
        raise TrainingBudgetError(f"{name} must be in (0, 1] (got {text!r}); did you mean {number / 100:.2f}?")
    if not (math.isfinite(number) and 0 < number <= 1):
        raise TrainingBudgetError(f"{name} must be in (0, 1] (got {text!r})")
    return number


def parse_number(name: str, text: str | float, minimum: float = 0.0) -> float:
    """A finite number >= `minimum` written as text or given as a number (nan, inf, 1e309 refused)."""
    if isinstance(text, bool):
        raise TrainingBudgetError(f"{name} must be a number (got {text!r})")
    try:
        value = float(str(text).strip().replace(",", "")) if isinstance(text, str) else float(text)
    except (TypeError, ValueError):
        raise TrainingBudgetError(f"{name} must be a number (got {text!r})") from None
    if not math.isfinite(value):
        raise TrainingBudgetError(f"{name} must be a finite number (got {text!r})")
    if value < minimum:
        raise TrainingBudgetError(f"{name} must be >= {minimum:g} (got {text!r})")
    return value
