"""Every bad input raises a TrainingBudgetError that names the argument and the value."""

import math

import numpy as np
import pytest

from trainbudget import calc

H100 = "H100 SXM, BF16 tensor core, dense"

CASES = [
    (lambda: calc.train_hours(-1, 1e9, H100), "params must be > 0 (got -1)"),
    (lambda: calc.budget(calc.job(params=1e-300, tokens=1e308, device=H100, utilization="prior")),
     "tokens per parameter overflows float64 (tokens 1e+308, active_params 1e-300)"),
    (lambda: calc.train_hours(0, 1e9, H100), "params must be > 0 (got 0)"),
    (lambda: calc.train_hours(math.nan, 1e9, H100), "params must be a finite number (got nan)"),
    (lambda: calc.train_hours(7e9, math.inf, H100), "tokens must be a finite number (got inf)"),
    (lambda: calc.train_hours(True, 1e9, H100), "params must be a number, not a boolean"),
    (lambda: calc.train_hours("7e9", 1e9, H100), "params must be a number (got '7e9')"),
    (lambda: calc.train_hours(None, 1e9, H100), "params must be a number (got None)"),
    (lambda: calc.train_hours([1e9, -5], 1e9, H100), "params[1] must be > 0 (got -5)"),
    (lambda: calc.train_hours([1e9, True], 1e9, H100), "params[1] must be a number (got True)"),
    (lambda: calc.train_hours(["1e9"], 1e9, H100), "params[0] must be a number (got '1e9')"),
    (lambda: calc.train_hours([[1e9], [np.nan]], 1e9, H100), "params[1, 0] must be a finite number"),
    (lambda: calc.train_hours(7e9, 1e9, H100, utilization=0), "utilization must be in (0, 1] (got 0)"),
    (lambda: calc.train_hours(7e9, 1e9, H100, utilization=1.2), "utilization must be in (0, 1] (got 1.2)"),
    (lambda: calc.train_hours(7e9, 1e9, H100, devices=0), "devices must be a whole number >= 1 (got 0)"),
    (lambda: calc.train_hours(7e9, 1e9, H100, devices=2.5), "devices must be a whole number >= 1 (got 2.5)"),
    (lambda: calc.train_hours(7e9, 1e9, "H10"), "unknown device 'H10'; closest: H100"),
    (lambda: calc.train_hours(7e9, 1e9, -3), "device must be > 0 (got -3)"),
    (lambda: calc.train_bytes(7e9, optimizer="adam9"), "optimizer must be one of adamw"),
    (lambda: calc.train_bytes(7e9, method="dora"), "method must be one of full, lora"),
    (lambda: calc.train_bytes(7e9, zero_stage=4), "zero_stage must be 0, 1, 2 or 3 (got 4)"),
    (lambda: calc.train_energy_kwh(7e9, 1e9, H100, pue=0.5), "pue must be >= 1"),
    (lambda: calc.activation_bytes(24, 2048, 16, 0, 1), "seq_len must be a whole number >= 1 (got 0)"),
    (lambda: calc.train_hours(7e9, 1e9, H100, utilization=1.0000001), "utilization must be in (0, 1] (got 1.0000001)"),
    (lambda: calc.train_hours([1e9, 2e9], [1e9, 2e9, 3e9], H100), "params and tokens have shapes (2,) and (3,)"),
    (lambda: calc.train_hours(7e9 + 0j, 1e9, H100), "params must be a real number"),
    (lambda: calc.train_hours(1e308, 1e9, H100), "params (got 1e+308) out of range"),
    (lambda: calc.train_energy_kwh(7e9, 1e9, H100, pue=[1.1, 0.5]), "pue[1] must be >= 1 (got 0.5)"),
    (lambda: calc.train_bytes(7e9, zero_stage=[3, 4]), "zero_stage[1] must be 0, 1, 2 or 3 (got 4)"),
    (lambda: calc.activation_bytes(24, 2048, 16, 8, 1, sequence_parallel="maybe"),
     "sequence_parallel must be True or False (got 'maybe')"),
    (lambda: calc.train_bytes(7e9, master=None), "master must be True or False (got None)"),
    # arguments a mode leaves unused are checked anyway, and their shapes must agree
    (lambda: calc.train_bytes(7e9, trainable=math.nan), "trainable must be a finite number (got nan)"),
    (lambda: calc.train_memory(7e9, trainable="abc"), "trainable must be a number (got 'abc')"),
    (lambda: calc.train_bytes([7e9, 7e9], trainable=[1, 2, 3]), "params and trainable have shapes (2,) and (3,)"),
    (lambda: calc.train_bytes(7e9, vocab=math.inf), "vocab must be a finite number (got inf)"),
    (lambda: calc.train_memory(7e9, micro_batches=True), "micro_batches must be a number, not a boolean"),
    (lambda: calc.train_bytes(7e9, sequence_parallel="maybe"), "sequence_parallel must be True or False"),
    (lambda: calc.train_memory(7e9, flash_attention=None), "flash_attention must be True or False (got None)"),
    (lambda: calc.train_bytes([7e9, 7e9], devices=[1, 2, 3]), "params and devices have shapes (2,) and (3,)"),
    (lambda: calc.train_bytes([7e9, 8e9, 9e9], zero_stage=0, devices=[8, 16]),
     "params and devices have shapes (3,) and (2,)"),
    (lambda: calc.activation_bytes(24, 2048, 16, 8, 1, top_k=math.nan), "top_k must be a finite number (got nan)"),
    (lambda: calc.activation_bytes(24, 2048, 16, 8, 1, moe_ffn_dim="abc"), "moe_ffn_dim must be a number"),
    (lambda: calc.activation_bytes(24, 2048, 16, 8, 1, n_shared_experts=True), "n_shared_experts must be a number"),
    (lambda: calc.activation_bytes(24, 2048, 16, 8, 1, moe_layers=math.inf), "moe_layers must be a finite number"),
    (lambda: calc.activation_bytes([24, 24], 2048, 16, 8, 1, top_k=[1, 2, 3]),
     "n_layers and top_k have shapes (2,) and (3,)"),
    (lambda: calc.devices_needed(7e9, H100, trainable=math.inf), "trainable must be a finite number (got inf)"),
    (lambda: calc.devices_needed([7e9, 7e9], H100, tensor_parallel=[1, 2, 3]),
     "params and tensor_parallel have shapes (2,) and (3,)"),
    (lambda: calc.devices_needed([7e9, 7e9], H100, pipeline_parallel=[1, 2, 3]),
     "params and pipeline_parallel have shapes (2,) and (3,)"),
    (lambda: calc.fit_layouts("llama 3.1 8b", H100, 8, trainable="abc"), "trainable must be a number (got 'abc')"),
    (lambda: calc.fit_layouts("llama 3.1 8b", H100, 8, memory_gib=1e308), "memory_gib (got 1e+308) out of range"),
    (lambda: calc.fit_layouts("llama 3.1 8b", H100, 8, reserve_gib=1e308), "reserve_gib (got 1e+308) out of range"),
    (lambda: calc.owned_usd_per_device_hour([1e4, 2e4], watts=[700.0, 700.0, 700.0], usd_per_kwh=0.1),
     "capex_usd and watts have shapes (2,) and (3,)"),
    (lambda: calc.owned_usd_per_device_hour([1e4, 2e4], life_years=[1, 2, 3], watts=700.0, usd_per_kwh=0.1),
     "capex_usd and life_years have shapes (2,) and (3,)"),
    (lambda: calc.train_range([7e9, 7e9], [1e12, 1e12, 1e12], H100), "params and tokens have shapes (2,) and (3,)"),
    (lambda: calc.train_range([7e9, 7e9], 1e12, H100, devices=[1, 2, 3]),
     "params and devices have shapes (2,) and (3,)"),
    (lambda: calc.train_range([7e9, 7e9], 1e12, H100, pue=[1, 2, 3]), "params and pue have shapes (2,) and (3,)"),
    (lambda: calc.train_range(1e308, 1e12, H100), "params (got 1e+308) out of range"),
    (lambda: calc.train_range(7e9, 1e12, H100, usd_per_device_hour=1e308),
     "usd_per_device_hour (got 1e+308) out of range"),
    (lambda: calc.train_range(7e9, 1e12, H100, watts=1e308), "watts (got 1e+308) out of range"),
    (lambda: calc.train_range(7e9, 1e12, H100, pue=1e308), "pue (got 1e+308) out of range"),
]


@pytest.mark.parametrize(("call", "message"), CASES)
def test_message_names_argument_and_value(call, message):
    with pytest.raises(calc.TrainingBudgetError) as err:
        call()
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)


def test_parse_count():
    assert calc.parse_count("p", "7B") == 7e9
    assert calc.parse_count("p", "1.5T") == 1.5e12
    assert calc.parse_count("p", "350M") == 350e6
    assert calc.parse_count("p", "7e9") == 7e9
    for bad in ("7Q", "", "-1B", "nan"):
        with pytest.raises(calc.TrainingBudgetError, match="p must"):
            calc.parse_count("p", bad)


@pytest.mark.parametrize(("call", "words"), [
    (lambda: calc.reserve_words(math.nan), "reserve_gib must be a finite number"),
    (lambda: calc.price_rows(today=-1), "today must be a date"),
    (lambda: calc.prior_coefficients(1.5), "goodput must be in"),
    (lambda: calc.layout_data_parallel([2, 4], [1, 2, 3]), "shapes .* that do not broadcast"),
    (lambda: calc.scenario_plan_row([1e9, 2e9], [1e9, 2e9, 3e9], "H100 SXM, BF16 tensor core, dense"),
     "shapes .* that do not broadcast"),
])
def test_public_helpers_refuse_by_name_not_by_traceback(call, words):
    """The hostile census's finds among calc's public helpers: each refused in words naming the input."""
    with pytest.raises(calc.TrainingBudgetError, match=words):
        call()
