"""Command-line pieces for models and layouts: `estimate --model/--config --tp --pp --ep` and
the `fit` command. Thin: every figure comes from trainbudget.calc."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ... import calc
from ...calc.config import load_config
from ...calc.models import ModelPreset, model_preset
from . import render as rep

H100 = "H100 SXM, BF16 tensor core, dense"

_MODEL = click.option("--model", "model_name", default=None,
                      help="A preset model (calc/data/models.csv), e.g. 'Llama 3.1 70B'.")
_CONFIG = click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
                       default=None, help="A local Hugging Face config.json (nothing is fetched).")


def estimate_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The model/layout option group of `estimate` (one decorator, kept apart from the others)."""
    for option in reversed((
        _MODEL, _CONFIG,
        click.option("--tp", type=int, default=1, show_default=True, help="Tensor-parallel size."),
        click.option("--pp", type=int, default=1, show_default=True, help="Pipeline-parallel size."),
        click.option("--ep", type=int, default=1, show_default=True,
                     help="Expert-parallel size (within data parallel)."),
    )):
        f = option(f)
    return f


def resolve(model_name: str | None, config_path: str | None) -> ModelPreset | None:
    """The preset or config named on the command line (None when neither is)."""
    if model_name and config_path:
        raise calc.TrainingBudgetError("give --model or --config, not both")
    if config_path:
        return load_config(config_path)
    return model_preset(model_name) if model_name else None


def params_for(params: float, model_name: str | None = None, config_path: str | None = None,
               **_: Any) -> tuple[float, ModelPreset | None]:
    """Parameters for FLOPs and hours: the model's active parameters when one is named."""
    preset = resolve(model_name, config_path)
    return (params if preset is None else float(preset.params().active)), preset


def apply(report: dict[str, Any], preset: ModelPreset | None, n_devices: int, tp: int = 1,
          pp: int = 1, ep: int = 1, **_: Any) -> dict[str, Any]:
    """The estimate with memory per device on the layout and the model's total/active counts."""
    if preset is None and (tp, pp, ep) == (1, 1, 1):
        return report
    total = report["params"] if preset is None else float(preset.params().total)
    experts = stage = 0.0
    if preset is not None and preset.has_shape:
        b = preset.params()
        experts = float(b.experts) if preset.shape.get("n_experts", 1) > 1 else 0.0
        stage = float(preset.shape["vocab"] * preset.shape["d_model"])
    memory = calc.train_memory(total, devices=n_devices, tensor_parallel=tp, pipeline_parallel=pp,
                               expert_parallel=ep, expert_params=experts, stage_params=stage)
    return {**report, "params": total, "active_params": report["params"],
            "model": None if preset is None else preset.name,
            "layout": {"tensor_parallel": tp, "pipeline_parallel": pp, "expert_parallel": ep,
                       "data_parallel": n_devices // (tp * pp)},
            "memory_bytes": memory.as_dict()}


def layout_text(report: dict[str, Any]) -> str:
    """One line naming the model and layout (empty when the estimate has none)."""
    if "layout" not in report:
        return ""
    lay = report["layout"]
    name = f"{report['model']}: " if report.get("model") else ""
    return (f"{name}{rep.format_count(report['params'])} parameters, "
            f"{rep.format_count(report['active_params'])} active per token; layout "
            f"TP {lay['tensor_parallel']} x PP {lay['pipeline_parallel']} x "
            f"DP {lay['data_parallel']} (EP {lay['expert_parallel']}), memory per device, "
            "ZeRO 0, before activations\n")
