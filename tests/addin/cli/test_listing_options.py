"""`prices` and `devices` take one output format, as estimate and plan do; a long --device or
--provider is echoed shortened, as other refusals show a value."""

from __future__ import annotations

import pytest

from tests.conftest import invoke


@pytest.mark.parametrize("command", ["prices", "devices"])
def test_json_and_csv_together_are_refused(command):
    got = invoke(command, "--json", "--csv")
    assert got.returncode == 2 and got.stdout == "" and "give --json or --csv, not both" in got.stderr


@pytest.mark.parametrize("option", ["--device", "--provider"])
def test_a_long_value_is_shortened_in_the_refusal(option):
    got = invoke("prices", option, "x" * 100_000)
    assert got.returncode == 2 and len(got.stderr) < 400 and "…" in got.stderr, got.stderr[:400]


def test_a_device_with_escapes_is_shown_escaped():
    got = invoke("prices", "--device", "a\x1b[31mred")
    assert got.returncode == 2 and "\x1b" not in got.stderr and "\\x1b[31mred" in got.stderr
