"""Careless input at calc's edges: shape mismatches, complex numbers, overflow, string flags, array elements
and values as given. Each case asserts the one-line error that names the argument (and the element), or
the safe result. (tests/hostile/census.py reads the (call, text) lists of this file as data.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc.base import checks as calc_checks, errors

H100 = "H100 SXM, BF16 tensor core, dense"

ACT = (32, 4096, 32, 4096, 1)  # n_layers, d_model, n_heads, seq_len, micro_batch


def _message(call) -> str:
    with pytest.raises(calc.TrainingBudgetError) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize(("call", "text"), [
    (lambda: calc.train_hours([1e9, 2e9], [1e9, 2e9, 3e9], H100),
     "params and tokens have shapes (2,) and (3,) that do not broadcast"),
    (lambda: calc.train_flops([1e9, 2e9], [1e9, 2e9, 3e9]),
     "params and tokens have shapes (2,) and (3,) that do not broadcast"),
    (lambda: calc.train_hours([1e9, 2e9], 1e9, H100, utilization=[0.3, 0.4, 0.5]),
     "params and utilization have shapes (2,) and (3,)"),
    (lambda: calc.train_hours(1e9, np.ones((2, 3)) * 1e9, H100, devices=np.ones(4)),
     "tokens and devices have shapes (2, 3) and (4,)"),
    (lambda: calc.train_memory([1e9, 2e9], zero_stage=3, devices=[1, 2, 4]),
     "params and devices have shapes (2,) and (3,)"),
    (lambda: calc.train_cost([1e9, 2e9], 1e9, H100, usd_per_device_hour=[1.0, 2.0, 3.0]),
     "params and usd_per_device_hour have shapes (2,) and (3,)"),
    (lambda: calc.train_flops(7e9, 1e9, n_layers=[1, 2], d_model=[1, 2, 3], seq_len=8),
     "n_layers and d_model have shapes (2,) and (3,)"),
    (lambda: calc.activation_bytes([1, 2], [64, 128, 256], 4, 8, 1),
     "n_layers and d_model have shapes (2,) and (3,)"),
])
def test_shape_mismatch_names_both_arguments(call, text):
    message = _message(call)
    assert text in message and "\n" not in message


def test_broadcasting_shapes_still_broadcast():
    got = calc.train_hours(np.array([[7e9], [70e9]]), [1e9, 2e9, 3e9], H100)
    assert got.shape == (2, 3)
    assert got[1, 2] == calc.train_hours(70e9, 3e9, H100)


@pytest.mark.parametrize(("call", "text"), [
    (lambda: calc.train_hours(7e9 + 1j, 1e9, H100), "params must be a real number (got (7000000000+1j))"),
    (lambda: calc.train_hours(np.complex128(7e9), 1e9, H100), "params must be a real number"),
    (lambda: calc.train_hours(np.array([7e9, 7e9 + 2j]), 1e9, H100), "params[1] must be a real number"),
    (lambda: calc.train_hours([7e9, 2j], 1e9, H100), "params[1] must be a real number (got 2j)"),
    (lambda: calc.train_bytes(7e9, devices=np.array([1, 2], dtype=object) + 0j, zero_stage=3),
     "devices[0] must be a real number (got (1+0j))"),
    (lambda: calc.activation_bytes(32, 4096 + 0j, 32, 4096, 1), "d_model must be a real number"),
])
def test_complex_numbers_refused(call, text):
    assert text in _message(call)


@pytest.mark.parametrize(("call", "text"), [
    (lambda: calc.train_flops(1e308, 1e12), "params (got 1e+308) out of range: the result overflows"),
    (lambda: calc.train_hours(1e9, 1e308, H100), "tokens (got 1e+308) out of range"),
    (lambda: calc.train_hours([1e9, 1e308], 1e9, H100), "the result[1] overflows"),
    (lambda: calc.train_bytes(1e308), "params (got 1e+308) out of range"),
    (lambda: calc.train_memory(1e308).total, "params (got 1e+308) out of range"),
    (lambda: calc.activation_bytes(1e100, 1e100, 1, 1e100, 1e100), "n_layers (got 1e+100)"),
    (lambda: calc.chinchilla_tokens(1e308), "params (got 1e+308) out of range"),
    (lambda: calc.train_cost(1e300, 1e300, H100, usd_per_device_hour=1.0), "params (got 1e+300)"),
])
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy's, before the error
def test_overflow_is_an_error_naming_the_argument(call, text):
    with pytest.raises(errors.ResultOverflowError) as err:
        call()
    assert text in str(err.value)


def test_large_but_finite_results_pass_and_never_fitting_is_still_inf():
    assert calc.train_flops(1e150, 1e150) == pytest.approx(6e300)
    assert calc.devices_needed(7e12, H100) == math.inf  # "never fits" is the answer, not an overflow


@pytest.mark.parametrize(("given", "means"), [
    (True, True), (False, False), (np.True_, True), (np.False_, False),
    ("no", False), ("False", False), ("FALSE", False), ("0", False), (" false ", False),
    ("yes", True), ("True", True), ("TRUE", True), ("1", True),
])
def test_string_flags_read_as_written(given, means):
    assert calc_checks.flag("f", given) is means
    plain = calc.activation_bytes(*ACT, sequence_parallel=means, flash_attention=means)
    assert calc.activation_bytes(*ACT, sequence_parallel=given, flash_attention=given) == plain
    assert calc.train_bytes(7e9, master=given) == calc.train_bytes(7e9, master=means)


def test_no_and_false_differ_from_true():
    assert (calc.activation_bytes(*ACT, tensor_parallel=8, sequence_parallel="no")
            != calc.activation_bytes(*ACT, tensor_parallel=8, sequence_parallel=True))
    assert (calc.activation_bytes(*ACT, flash_attention="False")
            != calc.activation_bytes(*ACT, flash_attention=True))


@pytest.mark.parametrize(("name", "given", "shown"), [
    ("sequence_parallel", "maybe", "'maybe'"), ("flash_attention", 1, "1"), ("flash_attention", None, "None"),
    ("sequence_parallel", "", "''"), ("flash_attention", [True], "[True]"), ("sequence_parallel", 0.0, "0"),
])
def test_other_flag_values_refused(name, given, shown):
    assert _message(lambda: calc.activation_bytes(*ACT, **{name: given})) == (
        f"{name} must be True or False (got {shown})")


def test_master_flag_refuses_text_it_cannot_read():
    assert _message(lambda: calc.train_bytes(7e9, master="nope")) == "master must be True or False (got 'nope')"


@pytest.mark.parametrize(("call", "text"), [
    (lambda: calc.train_energy_kwh(7e9, 1e9, H100, pue=[1.2, 0.5]), "pue[1] must be >= 1 (got 0.5)"),
    (lambda: calc.train_energy_kwh(7e9, 1e9, H100, pue=0.9), "pue must be >= 1 (got 0.9)"),
    (lambda: calc.train_energy_kwh(7e9, 1e9, H100, pue=[[1.1], [math.nan]]), "pue[1, 0] must be a finite number"),
    (lambda: calc.train_bytes(7e9, zero_stage=[0, 4]), "zero_stage[1] must be 0, 1, 2 or 3 (got 4)"),
    (lambda: calc.train_bytes(7e9, zero_stage=[1, 2, 1.5]), "zero_stage[2] must be 0, 1, 2 or 3 (got 1.5)"),
    (lambda: calc.train_bytes(7e9, zero_stage=-1), "zero_stage must be 0, 1, 2 or 3 (got -1)"),
    (lambda: calc.devices_needed(7e9, H100, zero_stage=[3, 5]), "zero_stage[1] must be 0, 1, 2 or 3 (got 5)"),
])
def test_array_errors_name_the_element(call, text):
    assert text in _message(call)


@pytest.mark.parametrize(("kwargs", "shown"), [
    ({"utilization": 1.0000001}, "1.0000001"),
    ({"utilization": np.float64(1.0000001)}, "1.0000001"),
    ({"utilization": [0.5, 1.0000001]}, "1.0000001"),
    ({"utilization": np.float32(1.1)}, "1.1"),
    ({"utilization": np.array([0.5, 1.1], dtype=np.float32)}, "1.1"),
    ({"utilization": 1.000000000000001}, "1.000000000000001"),
    ({"utilization": -1.0}, "-1"),
    ({"utilization": 0}, "0"),
    ({"utilization": 3}, "3"),
    ({"devices": 2.5}, "2.5"),
    ({"devices": 0.1 + 0.2}, "0.30000000000000004"),
    ({"devices": 1e-300}, "1e-300"),
])
def test_message_shows_the_value_as_given(kwargs, shown):
    assert f"(got {shown})" in _message(lambda: calc.train_hours(7e9, 1e9, H100, **kwargs))


def test_numpy_text_and_ragged_lists_are_named():
    assert _message(lambda: calc.train_hours(np.array(["7e9"]), 1e9, H100)) == (
        "params[0] must be a number (got '7e9')")
    assert "params[1] must be a number" in _message(lambda: calc.train_hours([1e9, [1e9, 2e9]], 1e9, H100))


def test_huge_values_are_cut_in_messages():
    text = "x" * 32_767
    for call in (lambda: calc.train_hours(text, 1e9, H100), lambda: calc.train_hours(10**400, 1e9, H100),
                 lambda: calc.train_bytes(7e9, method=text), lambda: calc.train_hours(7e9, 1e9, text)):
        message = _message(call)
        assert len(message) < 300 and "…" in message
