"""The device side of a step: its dense rates, memory bandwidth and interconnect, with their basis.

Topology lives in the catalog (calc/data/devices.csv) as optional columns on every row:
`scale_up_GBps` (per device, both directions, the scaling book's convention), `scale_up_domain`
(devices that share it: 8 for HGX, 72 for NVL72, the slice or pod for TPUs), `scale_out_Gbps` (the
device's NIC, one direction, or its share of the host's DCN), optionally `scale_up_axis_GBps` (per device,
both directions, what a tensor- or context-parallel group gets along one axis of a torus: a TPU's ICI
sends a small group's collective over that axis's links only, jax-ml/scaling-book sharding.md "How is an
AllGather actually performed?" and tpus.md's per-link table; blank: a switched fabric such as NVLink,
where any group gets all of scale_up_GBps) and `topology_source`. The `Device`
row type does not carry them, so a user's CSV or a workbook's Devices row works unchanged: a row
without them takes the packaged catalog's figures for the same hardware, and failing that the
stated FALLBACK, named in `Hardware.basis` (never silently).
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..base.errors import TrainingBudgetError
from ..base.memo import identity_memo
from ..hardware.catalog import SIXTEEN_BIT, Device, DeviceTable, catalog, sixteen_bit_row

TOPOLOGY = ("scale_up_GBps", "scale_up_domain", "scale_out_Gbps")
AXIS = "scale_up_axis_GBps"  # optional: blank is a switched scale-up fabric (every group gets scale_up_GBps)
# A row with no topology of its own or of its hardware: one PCIe Gen4 x16 device (32 GB/s each way,
# PCI-SIG) per domain behind a 100 Gb/s NIC. Stated in the result's basis whenever it is used.
FALLBACK = (64.0, 1.0, 100.0)
FALLBACK_WORDS = "PCIe Gen4 x16 (64 GB/s both ways), 1 device per domain, a 100 Gb/s NIC"
# Device generations with their own fitted matmul fraction (calc.step.calibrate); anything else
# borrows Hopper's, said in the basis.
FAMILIES = ("ampere", "hopper", "blackwell", "tpu")
_FAMILY_KEYS = (("tpu", "tpu"), ("gb200", "blackwell"), ("gb300", "blackwell"), ("b200", "blackwell"),
                ("b300", "blackwell"), ("h100", "hopper"), ("h200", "hopper"), ("h800", "hopper"),
                ("gh200", "hopper"), ("a100", "ampere"), ("a800", "ampere"), ("v100", "ampere"))


@dataclass(frozen=True)
class Hardware:
    """One device as the step sees it. tflops: the row's dense peak (TFLOP/s) at its precision;
    tflops_16bit: the same hardware's BF16/FP16 dense peak (MFU's usual basis, and on an FP8 row the
    rate of work that stays 16-bit; every other row runs all its work at its own tflops); fp8: the row
    runs matmuls at an FP8 rate; memory_tbps: HBM TB/s;
    scale_up_GBps (both directions), scale_up_domain (devices), scale_out_Gbps (one direction);
    scale_up_axis_GBps (both directions, a TP or CP group's share on a torus; scale_up_GBps when switched);
    family: index into FAMILIES for the fitted matmul fraction; basis: where each figure came from."""

    name: str
    tflops: float
    tflops_16bit: float
    fp8: bool
    memory_tbps: float
    scale_up_GBps: float  # noqa: N815 (the catalog column, units in the name)
    scale_up_domain: float
    scale_out_Gbps: float  # noqa: N815 (the catalog column, units in the name)
    family: int
    basis: str
    scale_up_axis_GBps: Any = None  # noqa: N815 (the catalog column; None: scale_up_GBps, a switched fabric)

    @property
    def axis_GBps(self) -> Any:  # noqa: N802 (units in the name, as the columns)
        """What a TP or CP group gets, GB/s both directions: scale_up_axis_GBps, or on a switched fabric
        (None) all of scale_up_GBps."""
        return self.scale_up_GBps if self.scale_up_axis_GBps is None else self.scale_up_axis_GBps


@functools.lru_cache(maxsize=1)
def _catalog_topology() -> dict[str, dict[str, str]]:
    """Topology cells of the packaged catalog by hardware name (the first row of each hardware)."""
    text = resources.files(__name__.rsplit(".", 2)[0]).joinpath("data/devices.csv").read_text("utf-8")
    found: dict[str, dict[str, str]] = {}
    for row in csv.DictReader(text.splitlines()):
        if all(row.get(c) for c in TOPOLOGY):
            found.setdefault(row["hardware"].strip().lower(), row)
    return found


def _family(hw: str) -> tuple[int, str]:
    key = hw.lower().replace(" ", "")
    for k, fam in _FAMILY_KEYS:
        if k in key:
            return FAMILIES.index(fam), ""
    return FAMILIES.index("hopper"), f"no fitted matmul fraction for {hw or 'this device'}: Hopper's used"


def _topology(dev: Device, record: dict[str, Any] | None) -> tuple[tuple[float, float, float, float], str]:
    """(scale-up GB/s, domain, scale-out Gb/s, a TP/CP group's GB/s along one axis) and their basis: the
    row's own, its hardware's, or FALLBACK (the axis: scale-up GB/s where the row gives none)."""
    own_axis = bool(record) and record.get(AXIS) not in (None, "")
    if record and all(record.get(c) not in (None, "") for c in TOPOLOGY):
        names = (*TOPOLOGY, AXIS) if own_axis else TOPOLOGY
        try:
            vals = tuple(float(record[c]) for c in names)
        except (TypeError, ValueError):
            raise TrainingBudgetError(f"device {dev.name!r}: {', '.join(names)} must be numbers") from None
        if not all(0 < v < math.inf for v in vals):  # NaN fails both
            raise TrainingBudgetError(f"device {dev.name!r}: {', '.join(names)} must be finite numbers > 0 "
                                      f"(got {vals})")
        return (*vals[:3], vals[3] if len(vals) > 3 else vals[0]), "topology from the row itself"
    if own_axis:  # an axis without the fabric it is an axis of
        raise TrainingBudgetError(f"device {dev.name!r}: {AXIS} needs {', '.join(TOPOLOGY)} beside it")
    row = _catalog_topology().get(dev.hardware.strip().lower())
    if row is not None:
        up, dom, out = (float(row[c]) for c in TOPOLOGY)
        return ((up, dom, out, float(row[AXIS]) if row.get(AXIS) else up),
                f"topology from the catalog's {dev.hardware} rows ({row['topology_source'][:60]}...)")
    return (*FALLBACK, FALLBACK[0]), f"no topology for {dev.name!r}: assumed {FALLBACK_WORDS}"


def _rate_16bit(dev: Device, table: DeviceTable) -> tuple[float, str]:
    """The hardware's 16-bit dense peak, MFU's usual basis and on an FP8 row the rate of the work that
    stays 16-bit: the row the prior's utilizations are shares of (sixteen_bit_row, one rule)."""
    row = sixteen_bit_row(dev, table)
    if row is dev and dev.kind != "measured" and dev.precision.strip().lower() not in SIXTEEN_BIT:
        return dev.tflops, f"no 16-bit row for {dev.hardware or dev.name}: its {dev.precision or 'row'} rate used"
    return row.tflops, ""


def hardware(device: str | Device, table: DeviceTable | None = None,
             record: dict[str, Any] | None = None) -> Hardware:
    """The step's view of a catalog row: `device` a name in `table` (the packaged catalog by default)
    or a `Device`; `record` the row's raw cells when it may carry its own topology columns."""
    table = table or catalog()
    dev = table.get(device) if isinstance(device, str) else device
    return _catalog_hardware(dev, table) if record is None else _hardware(dev, table, record)


@identity_memo(objects=2, size=256)
def _catalog_hardware(dev: Device, table: DeviceTable) -> Hardware:
    """hardware() of a row without its own cells, once per row and table objects (both frozen;
    calc/base/memo.py)."""
    return _hardware(dev, table, None)


def _hardware(dev: Device, table: DeviceTable, record: dict[str, Any] | None) -> Hardware:
    if dev.memory_tbps is None:
        raise TrainingBudgetError(f"device {dev.name!r} has no memory_tbps: the step's memory-bound terms need it",
                                  "memory_tbps")
    (up, dom, out, axis), topo = _topology(dev, record)
    r16, r16_words = _rate_16bit(dev, table)
    fam, fam_words = _family(dev.hardware or dev.name)
    fp8 = "fp8" in dev.precision.lower()
    basis = "; ".join(w for w in (topo, r16_words, fam_words) if w)
    return Hardware(name=dev.name, tflops=dev.tflops, tflops_16bit=r16, fp8=fp8, memory_tbps=dev.memory_tbps,
                    scale_up_GBps=up, scale_up_domain=dom, scale_out_Gbps=out, family=fam, basis=basis,
                    scale_up_axis_GBps=axis)
