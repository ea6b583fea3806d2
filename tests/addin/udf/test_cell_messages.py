"""A cell's error text: #VALUE! naming the argument, short and on one line, and TRAIN_BUDGET over a range
says it takes one scenario."""

from __future__ import annotations

import pytest

from trainbudget.addin.udf import cells, udfs

H100 = "H100 SXM, BF16 tensor core, dense"


def test_udf_overflow_says_so_not_does_not_fit():
    for got in (udfs.TRAIN_HOURS(1e308, 1e9, H100), udfs.TRAIN_BYTES(1e308),
                udfs.TRAIN_DEVICES_NEEDED(1e308, H100)):
        assert got.startswith("#VALUE! params (got 1e+308) out of range"), got
        assert "fit" not in got


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
