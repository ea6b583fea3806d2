"""The `fit` command (layouts that fit a device) and the model resolver it uses. Thin: every
figure comes from trainbudget.calc. (`estimate`'s model and layout options: cli/jobs.py.)"""

from __future__ import annotations

import json

import click

from ... import calc
from ...calc.config import load_config
from ...calc.models import ModelPreset, model_preset

H100 = "H100 SXM, BF16 tensor core, dense"

_MODEL = click.option("--model", "model_name", default=None,
                      help="A preset model (calc/data/models.csv), e.g. 'Llama 3.1 70B'.")
_CONFIG = click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
                       default=None, help="A local Hugging Face config.json (nothing is fetched).")


def resolve(model_name: str | None, config_path: str | None) -> ModelPreset | None:
    """The preset or config named on the command line (None when neither is)."""
    if model_name and config_path:
        raise calc.TrainingBudgetError("give --model or --config, not both")
    if config_path:
        return load_config(config_path)
    return model_preset(model_name) if model_name else None


@click.command()
@_MODEL
@_CONFIG
@click.option("--device", default=H100, show_default=True, help="Device name from the catalog.")
@click.option("--devices", "n_devices", type=int, required=True, help="Devices in the whole job.")
@click.option("--seq-len", type=int, default=4096, show_default=True, help="Sequence length.")
@click.option("--micro-batch", type=int, default=1, show_default=True, help="Micro-batch per device.")
@click.option("--recompute", default="selective", show_default=True, help="none, selective or full.")
@click.option("--optimizer", default="adamw", show_default=True, help="Optimizer (see calc.OPTIMIZERS).")
@click.option("--grad-bytes", type=float, default=2.0, show_default=True,
              help="Bytes per gradient (4: fp32 gradients).")
@click.option("--limit", type=int, default=20, show_default=True, help="Rows printed (text output).")
@click.option("--json", "as_json", is_flag=True, help="Print every layout that fits as JSON.")
def fit(model_name: str | None, config_path: str | None, device: str, n_devices: int, seq_len: int,
        micro_batch: int, recompute: str, optimizer: str, grad_bytes: float, limit: int,
        as_json: bool) -> None:
    """Layouts (tensor, pipeline, expert, data, ZeRO) whose bytes per device fit the device."""
    preset = resolve(model_name, config_path)
    if preset is None:
        raise calc.TrainingBudgetError("fit needs --model NAME or --config FILE")
    found = calc.fit_layouts(preset, device, n_devices, seq_len=seq_len, micro_batch=micro_batch,
                             recompute=recompute, optimizer=optimizer, grad_bytes=grad_bytes)
    rows = found.rows()
    if as_json:
        click.echo(json.dumps({"model": preset.name, "device": device, "devices": n_devices,
                               "memory_bytes": found.memory_bytes, "layouts": rows}, indent=2))
        return
    click.echo(f"{preset.name} on {n_devices} x {device} ({found.memory_bytes / 2**30:,.0f} GiB each): "
               f"{len(rows)} layouts fit, smallest per-device bytes first")
    click.echo(f"{'TP':>3} {'PP':>3} {'EP':>4} {'DP':>6} {'ZeRO':>4} {'weights':>8} {'grads':>7} "
               f"{'optim':>7} {'activ':>7} {'total':>7} {'free':>7}  (GB per device)")
    for r in rows[:limit]:
        gb = {k: r[k] / 1e9 for k in ("weights", "gradients", "activations", "total", "headroom")}
        click.echo(f"{r['tensor']:>3} {r['pipeline']:>3} {r['expert']:>4} {r['data']:>6} {r['zero']:>4} "
                   f"{gb['weights']:>8.1f} {gb['gradients']:>7.1f} "
                   f"{(r['optimizer'] + r['master']) / 1e9:>7.1f} {gb['activations']:>7.1f} "
                   f"{gb['total']:>7.1f} {gb['headroom']:>7.1f}")
    if len(rows) > limit:
        click.echo(f"... {len(rows) - limit} more (--limit, or --json for all)")
