"""The model resolver and the --model/--config options that `estimate`, `fit` and `plan` share,
--trainable (estimate's and fit's), and the --catalog option of every command that takes one.
Thin: every figure comes from trainbudget.calc. (`estimate`'s layout options: cli/jobs.py; `fit`:
cli/fit.py.)"""

from __future__ import annotations

import click

from ... import calc
from ...calc import ModelPreset, load_config, model_preset, parse_share, show_value as show

MODEL = click.option("--model", "model_name", default=None,
                      help="A preset model (calc/data/models.csv), e.g. 'Llama 3.1 70B'.")
CONFIG = click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
                       default=None, help="A local Hugging Face config.json (nothing is fetched).")
# Every command's --catalog: a missing path or a folder is one line naming the option, as --config.
CATALOG = click.option("--catalog", "catalog_path", type=click.Path(exists=True, dir_okay=False),
                       help="A CSV of devices, or a TrainingBudget workbook (its Devices table), "
                            "to use instead of the packaged catalog.")


TRAINABLE = click.option("--trainable", default=None,
                         help="LoRA/QLoRA adapter parameters: a whole count (20M), or a share of the model's "
                              "parameters (1% or 0.01; a number up to 1 is a share, above 1 a count). Default 1%.")


def trainable(text: str | None) -> float | None:
    """--trainable as calc takes it: a share in (0, 1] ("1%", "0.01") or a whole count of adapter
    parameters above 1 ("20M"); calc checks it against the model's parameters. None: not given."""
    if text is None:
        return None
    if str(text).strip().endswith("%"):
        return parse_share("--trainable", text)
    value = calc.parse_count("--trainable", text)
    if value > 1 and not value.is_integer():
        raise calc.TrainingBudgetError(f"--trainable must be a share of the model (1% or 0.01) or a whole count of "
                                       f"adapter parameters such as 20M (got {show(text)})")
    return value


def resolve(model_name: str | None, config_path: str | None) -> ModelPreset | None:
    """The preset or config named on the command line (None when neither is)."""
    if model_name and config_path:
        raise calc.TrainingBudgetError("give --model or --config, not both")
    if config_path:
        return load_config(config_path)
    return model_preset(model_name) if model_name else None


