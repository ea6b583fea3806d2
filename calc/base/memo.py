"""A memo for functions of frozen objects: `fn(*objects, *rest)` worked out once per the identities of
its first `objects` arguments (presets, device rows and tables are frozen, and hashing one hashes
every field it holds) and the values of the rest (scalars, keyed with their types so True and 1 stay
apart). Each entry holds its objects, so an id reused by a new object is worked out afresh.

The memo is written out for its count of objects (as calc/base/fastinit.py writes an __init__): a
question asks it several times, and the general form, slicing and mapping over *args, took twice as
long a call (about 640 against 290 ns here)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


def identity_memo(objects: int = 1, size: int = 1024) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the memo above, cleared when it holds more than `size` entries."""
    held = ", ".join(f"a{i}" for i in range(objects))
    stale = " or ".join(f"hit[{i}] is not a{i}" for i in range(objects))
    source = (f"def memo({held}, *rest):\n"
              f"    key = ({''.join(f'id(a{i}), ' for i in range(objects))}rest, tuple(map(type, rest)))\n"
              "    hit = cache.get(key)\n"
              f"    if hit is None or {stale}:\n"
              "        if len(cache) > size:\n"
              "            cache.clear()\n"
              f"        hit = cache[key] = ({held}, fn({held}, *rest))\n"
              f"    return hit[{objects}]\n")

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        namespace: dict[str, Any] = {"cache": {}, "fn": fn, "size": size}
        exec(source, namespace)
        return functools.wraps(fn)(namespace["memo"])
    return wrap
