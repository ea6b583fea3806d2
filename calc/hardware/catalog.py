"""The device catalog: one row per rate (hardware + precision + vendor peak or measured).

The packaged catalog is `data/devices.csv`; every row carries `source` and `as_of`. Vendor
figures are dense peaks: NVIDIA and AMD quote tensor/matrix rates with 2:4 sparsity, which
are halved here (see each row's note). Memory: `memory_gib` is the vendor's figure as sold
("80GB"), a capacity in GiB: HBM and GDDR capacities are binary, so the device holds memory_gib · 2^30 bytes
(80 GiB = 85.9e9 bytes; TPU v4's 32 GiB = 34.36e9; H200's "141GB" and B200's "180GB" are
within 0.5% of 141 and 180 GiB as nvidia-smi reports them). `devices_needed` and
`fit_layouts` use those physical bytes. A user's CSV, or the rows of a workbook's Devices
table, load through the same `DeviceTable` and the same checks.
"""

from __future__ import annotations

import csv
import difflib
import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..base.checks import positive
from ..base.errors import TrainingBudgetError, UnknownDeviceError, out, show
from ..base.textfile import read_text

KINDS = ("vendor dense peak", "measured")
NUMERIC = ("tflops", "memory_gib", "memory_tbps", "watts", "usd_per_device_hour")


@dataclass(frozen=True)
class Device:
    """One rate: `tflops` in TFLOP/s (1e12 FLOP/s), `memory_gib` the vendor's memory figure
    (binary: memory_gib · 2^30 bytes on the device, see the module doc), `watts` board power."""

    name: str
    tflops: float
    kind: str = "measured"
    hardware: str = ""
    precision: str = ""
    memory_gib: float | None = None
    memory_tbps: float | None = None
    watts: float | None = None
    usd_per_device_hour: float | None = None
    source: str = ""
    as_of: str = ""
    note: str = ""


COLUMNS = tuple(f.name for f in fields(Device))


def normalize(name: str) -> str:
    """Lookup key: case- and whitespace-insensitive ('h100 sxm, bf16 ...' == 'H100 SXM, BF16 ...')."""
    return "".join(str(name).lower().split())


def _cell_number(value: Any, where: str, column: str, required: bool) -> float | None:
    """A catalog cell as a float > 0, None when blank and optional."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise TrainingBudgetError(f"{where}: {column} is required", column)
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TrainingBudgetError(f"{where}: {column} must be a number (got {value!r})", column) from None
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        raise TrainingBudgetError(f"{where}: {column} must be a number > 0 (got {value!r})", column)
    return number


def device_from_record(record: Mapping[str, Any], where: str = "row") -> Device:
    """A `Device` from a mapping of column name to cell value, checked."""
    name = str(record.get("name") or "").strip()
    if not name:
        raise TrainingBudgetError(f"{where}: name is required", "name")
    here = f"{where} ({name!r})"
    if record.get("memory_gib") in (None, "") and record.get("memory_gb") not in (None, ""):
        record = {**record, "memory_gib": record["memory_gb"]}  # earlier CSVs' name for the same GiB figure
    values = {c: _cell_number(record.get(c), here, c, c == "tflops") for c in NUMERIC}
    texts = {c: str(record.get(c) or "").strip() for c in ("hardware", "precision", "source",
                                                           "as_of", "note")}
    if not texts["source"]:
        raise TrainingBudgetError(f"{here}: source is required (a URL, paper or measurement)", "source")
    kind = str(record.get("kind") or "measured").strip().lower()
    if kind not in KINDS:
        raise TrainingBudgetError(f"{here}: kind must be one of {', '.join(KINDS)} (got {kind!r})", "kind")
    return Device(name=name, kind=kind, **values, **texts)


class DeviceTable:
    """Devices by name; names resolve case- and space-insensitively, unknown ones suggest the closest."""

    def __init__(self, devices: Iterable[Device]):
        self.devices: tuple[Device, ...] = tuple(devices)
        self._by_key: dict[str, Device] = {}
        for d in self.devices:
            key = normalize(d.name)
            if key in self._by_key:
                raise TrainingBudgetError(f"duplicate device name {d.name!r}")
            self._by_key[key] = d

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], where: str = "row") -> DeviceTable:
        """A table from mappings (CSV rows, a workbook's table rows), each checked."""
        return cls(device_from_record(r, f"{where} {i}") for i, r in enumerate(records, start=1))

    def __len__(self) -> int:
        return len(self.devices)

    def __iter__(self):
        return iter(self.devices)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and normalize(name) in self._by_key

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.devices]

    def closest(self, name: str, n: int = 3) -> list[str]:
        """Up to `n` known names closest to `name`: names containing it first, then by similarity."""
        q = normalize(name)[:256]  # no known name is longer; keeps a pasted essay from costing seconds

        def score(key: str) -> tuple[bool, float]:
            return (bool(q) and q in key, difflib.SequenceMatcher(None, q, key).ratio())

        ranked = sorted(self._by_key, key=score, reverse=True)
        return [self._by_key[k].name for k in ranked[:n]]

    def get(self, name: str) -> Device:
        """The device called `name`, or a `TrainingBudgetError` naming the closest known names."""
        found = self._by_key.get(normalize(name))
        if found is None:
            near = "; ".join(self.closest(name)) or "none"
            raise UnknownDeviceError(f"unknown device {show(name)}; closest: {near}")
        return found

    def with_fallback(self, other: DeviceTable) -> DeviceTable:
        """This table's rows first, then `other`'s rows whose names this table lacks."""
        return DeviceTable([*self.devices, *(d for d in other if d.name not in self)])

    def value(self, device: Any, column: str = "tflops") -> np.ndarray | float:
        """`column` of each device in `device`: a name, a number (TFLOP/s), or an array of them.

        A number stands for its own TFLOP/s, so it has no memory, watts or price.
        """
        if isinstance(device, str):
            return self._column(self.get(device), column)
        if type(device) is float or type(device) is int:  # a scalar rate: no array machinery
            return self._number(device, column, "device")
        arr = device if isinstance(device, np.ndarray) else np.asarray(device, dtype=object)
        if arr.dtype.kind in "fiu" or not any(isinstance(v, str) for v in arr.reshape(-1)):
            return self._number(device, column, "device")
        flat = arr.reshape(-1)
        seen: dict[Any, float] = {}
        result = np.empty(flat.shape, dtype=np.float64)
        for i, v in enumerate(flat):
            if v not in seen:
                seen[v] = (self._column(self.get(v), column) if isinstance(v, str)
                           else float(self._number(v, column, f"device[{i}]")))
            result[i] = seen[v]
        return result.reshape(arr.shape)

    @staticmethod
    def _number(device: Any, column: str, name: str) -> np.ndarray | float:
        if column != "tflops":
            raise TrainingBudgetError(
                f"device given as a number ({device!r}) has no {column}; name a device "
                f"from the table or pass {column} directly")
        return out(positive(name, device))

    @staticmethod
    def _column(d: Device, column: str) -> float:
        v = getattr(d, column)
        if v is None:
            raise TrainingBudgetError(f"device {d.name!r} has no {column} in its table row")
        return v


SIXTEEN_BIT = ("bf16", "fp16")


def sixteen_bit_row(dev: Device, table: DeviceTable) -> Device:
    """The row whose rate published utilizations and MFU are shares of: a 16-bit or measured row
    itself (a team's measurement stands for its own framework and precision); for a vendor FP8, TF32
    or FP32 peak, the same hardware's BF16/FP16 row of the same kind; the row itself where there is none."""
    if dev.kind == "measured" or dev.precision in SIXTEEN_BIT:
        return dev
    same = [r for r in table if r.hardware == dev.hardware and r.kind == dev.kind and r.precision in SIXTEEN_BIT]
    return same[0] if same else dev


def load_devices(path: str | Path | None = None) -> DeviceTable:
    """The packaged catalog, or a user's CSV with the same column names (name, tflops, source required)."""
    if path is None:
        text = resources.files(__name__.rsplit(".", 2)[0]).joinpath("data/devices.csv").read_text("utf-8")
        where = "devices.csv row"
    else:
        text = read_text(path, "catalog")
        where = f"{path} row"
    return table_from_csv(text, where)


def table_from_csv(text: str, where: str = "CSV row") -> DeviceTable:
    """A device table from CSV text (header: the catalog's column names); `where` prefixes messages."""
    return DeviceTable.from_records(csv.DictReader(text.splitlines()), where)


@functools.lru_cache(maxsize=1)
def catalog() -> DeviceTable:
    """The packaged catalog, loaded once per process."""
    return load_devices()
