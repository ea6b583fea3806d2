"""The packaged measured layouts (calc/data/steptime_measured.csv) as broadcasting parts.

Every row: a published training configuration (model shape, device row at the precision it ran,
layout, batch, recompute) and its measured tokens/s per device, with `source`, `as_of`,
`layout_basis` (published, or what was guessed or assumed) and `use` (fit, or check: a row that
is not a steady-state step, kept beside the fit but out of it).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ..base.errors import TrainingBudgetError
from .calibrate import Constants
from .hardware import Hardware, hardware
from .layout import Layout, flag
from .shape import Shape
from .step import step_time


def stack(rows: list[Hardware]) -> Hardware:
    """Several `Hardware` rows as one with array fields (for a vectorized step over rows)."""
    def col(name: str) -> np.ndarray:
        return np.array([getattr(h, name) for h in rows])
    return Hardware(name="several", tflops=col("tflops"), tflops_16bit=col("tflops_16bit"), fp8=col("fp8"),
                    memory_tbps=col("memory_tbps"), scale_up_GBps=col("scale_up_GBps"),
                    scale_up_domain=col("scale_up_domain"), scale_out_Gbps=col("scale_out_Gbps"),
                    family=col("family"), basis="; ".join(sorted({h.basis for h in rows})),
                    scale_up_axis_GBps=col("axis_GBps"))


@dataclass(frozen=True)
class MeasuredSet:
    """The measured file: records (each row's cells), measured tokens/s per device, and the rows'
    shape, layout and hardware as arrays."""

    records: tuple[dict[str, str], ...]
    measured: np.ndarray
    shape: Shape
    layout: Layout
    hardware: Hardware

    @property
    def fit_mask(self) -> np.ndarray:
        return np.array([r["use"] == "fit" for r in self.records])

    def predict(self, constants: Constants | None = None, mask: Any = None) -> np.ndarray:
        """Predicted tokens/s per device for the rows in `mask` (all rows by default)."""
        tps = np.asarray(step_time(self.shape, self.layout, self.hardware, constants).tokens_per_second_per_device)
        return tps if mask is None else tps[mask]


def load_measured(text: str | None = None) -> MeasuredSet:
    """The packaged measured layouts (or CSV `text` with the same columns)."""
    if text is None:
        text = resources.files(__name__.rsplit(".", 2)[0]).joinpath("data/steptime_measured.csv").read_text("utf-8")
    recs = tuple(csv.DictReader(text.splitlines()))
    for line, r in enumerate(recs, start=2):
        if None in r:  # an unquoted comma in a text cell shifts every column after it
            raise TrainingBudgetError(f"measured steps, row {line}: {len(r) - 1 + len(r[None])} cells where the "
                                      f"header names {len(r) - 1} (quote a text cell that holds a comma)")

    def num(c: str) -> np.ndarray:
        return np.array([float(r[c]) for r in recs])

    def optional(c: str, blank: float) -> np.ndarray:
        return np.array([float(r.get(c) or blank) for r in recs])

    shape = Shape(params_active=num("active_params"), params_total=num("params"), n_layers=num("n_layers"),
                  d_model=num("d_model"), attn_dim=num("attn_dim"), kv_dim=num("kv_dim"), vocab=num("vocab"),
                  top_k=num("top_k"), params_expert=num("expert_params"), n_heads=optional("n_heads", 0.0))
    layout = Layout(devices=num("devices"), seq_len=num("seq_len"), global_batch_tokens=num("global_batch_tokens"),
                    tp=num("tp"), pp=num("pp"), vpp=num("vpp"), cp=num("cp"), ep=num("ep"),
                    zero_stage=num("zero_stage"), micro_batch=num("micro_batch"),
                    recompute=np.array([r["recompute"] for r in recs]),
                    flash_attention=np.array([flag(r.get("flash_attention") or "true") for r in recs]))
    hw = stack([hardware(r["device"]) for r in recs])
    return MeasuredSet(records=recs, measured=num("tokens_per_second_per_device"), shape=shape, layout=layout,
                       hardware=hw)
