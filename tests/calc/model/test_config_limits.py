"""load_config's size limit is named in its refusal."""

from __future__ import annotations

import pytest

from trainbudget import calc
from trainbudget.calc.model import hf_config as calc_config


def _message(call) -> str:
    with pytest.raises(calc.TrainingBudgetError) as err:
        call()
    return str(err.value)


def test_config_size_refusal_names_the_limit(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"pad": "' + "x" * calc_config.MAX_CONFIG_BYTES + '"}')
    message = _message(lambda: calc.load_config(path))
    assert "larger than 1,000,000 bytes (0.95 MiB)" in message and "not JSON" not in message
