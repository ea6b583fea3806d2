"""Counts written the way people say them: 7e9, 7B, 1.5T, 350M, 70k, 7,000,000."""

from __future__ import annotations

import math

from .checks import TrainingBudgetError

# Short-scale suffixes, as model cards use them (7B = 7e9 parameters, 2T = 2e12 tokens).
SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}


def parse_count(name: str, text: str | float) -> float:
    """`text` as a positive count: '7e9', '7B', '1.5T', '350M' -> 7e9, 7e9, 1.5e12, 3.5e8."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        s = str(text).strip().replace(",", "").replace("_", "")
        scale = SUFFIX.get(s[-1:].lower(), 1.0) if s[-1:].isalpha() else 1.0
        try:
            value = float(s[:-1] if scale != 1.0 else s) * scale
        except ValueError:
            raise TrainingBudgetError(
                f"{name} must be a count such as 7e9, 7B, 1.5T or 350M (got {text!r})") from None
    if not math.isfinite(value) or value <= 0:
        raise TrainingBudgetError(f"{name} must be > 0 (got {text!r})")
    return value
