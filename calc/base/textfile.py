"""Reading a user's text file (a CSV of devices or plans, a config.json): bounded, regular files
only, UTF-8 with or without the byte-order mark that Excel's "CSV UTF-8" format writes.

A file named on the command line may be anything: /dev/zero, a FIFO, a 10 GB log. Only regular
files are read, and at most MAX_TEXT_BYTES of them, so a wrong path is one clear error rather
than a process that fills memory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from .errors import TrainingBudgetError

# 16 MiB: a device or plan table of ~100,000 rows, far above any real one; a config.json is KBs.
MAX_TEXT_BYTES = 16 * 2**20


def open_regular(path: Any, what: str) -> BinaryIO:
    """`path` opened for binary reading if it is a regular file; TrainingBudgetError otherwise.

    O_NONBLOCK: opening a FIFO with no writer returns at once (a plain open() waits for one
    forever); the fstat of the open file then refuses it, so nothing blocks and nothing races."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise TrainingBudgetError(f"{what} {p}: cannot be read ({e.strerror or e})") from None
    f = open(fd, "rb")  # noqa: SIM115 (the caller closes it)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise TrainingBudgetError(f"{what} {p}: not a regular file")
    return f


def size_text(n: int) -> str:
    """A byte limit as a reader sees it: 16 MiB, or 1,000,000 bytes (0.95 MiB) when not a whole MiB."""
    if n % 2**20 == 0:
        return f"{n // 2**20} MiB"
    return f"{n:,} bytes ({n / 2**20:.2g} MiB)"


def read_text(path: Any, what: str, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The text of the regular file `path` (UTF-8, a leading BOM dropped); `what` names the file
    in messages (e.g. "--catalog"). TrainingBudgetError for anything else."""
    p = Path(path)
    with open_regular(p, what) as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise TrainingBudgetError(f"{what} {p}: cannot be read ({e.strerror or e})") from None
    if len(data) > max_bytes:
        raise TrainingBudgetError(f"{what} {p} is larger than {size_text(max_bytes)}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise TrainingBudgetError(f"{what} {p} is not UTF-8 text (byte {e.start})") from None
