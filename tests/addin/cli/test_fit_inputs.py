"""fit's memory and adapter inputs: a reserve at or above the device's memory is refused (nothing
would be usable); --trainable is a share ("1%", "0.01", as the help says) or a whole count of
adapter parameters at most the model's."""

from __future__ import annotations

import json

import pytest

from tests.conftest import invoke
from trainbudget import calc

FIT = ("fit", "--model", "Llama 3.1 70B", "--devices", "8")


@pytest.mark.parametrize("args", [("--reserve-gib", "1000"), ("--reserve-gib", "80"),
                                  ("--memory-gib", "10", "--reserve-gib", "10")])
def test_a_reserve_of_all_the_memory_is_refused(args):
    got = invoke(*FIT, *args)
    assert got.returncode == 2 and got.stdout == ""
    assert "--reserve-gib must be less than the device's" in got.stderr, got.stderr


def test_calc_refuses_the_reserve_too():
    with pytest.raises(calc.TrainingBudgetError, match="reserve_gib must be less than"):
        calc.fit_layouts("Llama 3.1 70B", "H100 SXM, BF16 tensor core, dense", 8, reserve_gib=1000)


@pytest.mark.parametrize(("value", "words"), [
    ("100B", "--trainable '100B' is more than the model's"),
    ("1.5", "--trainable must be a share of the model (1% or 0.01) or a whole count"),
    ("200%", "--trainable must be in (0, 1]"), ("1,5", "--trainable: write 1.5"),
])
def test_trainable_refusals(value, words):
    got = invoke(*FIT, "--method", "lora", "--trainable", value)
    assert got.returncode == 2 and words in got.stderr, got.stderr


def test_trainable_as_a_share_reads_as_the_help_says():
    share, decimal, default = (json.loads(invoke(*FIT, "--method", "lora", *extra, "--json", check=True).stdout)
                               for extra in (("--trainable", "1%"), ("--trainable", "0.01"), ()))
    assert share["layouts"] == decimal["layouts"] == default["layouts"] and share["layouts"]


@pytest.mark.parametrize(("call", "words"), [
    (lambda: calc.train_memory(7e9, method="lora", trainable=1.5), "trainable must be a share"),
    (lambda: calc.train_memory(7e9, method="lora", trainable=1e11), "trainable must be at most params"),
    (lambda: calc.train_memory([7e9, 1e9], method="lora", trainable=[2e7, 2e9]), "got trainable 2000000000"),
    (lambda: calc.budget(calc.job(params=7e9, tokens=1e9, device="H100 SXM, BF16 tensor core, dense",
                                  method="lora", trainable=8e9)), "trainable must be at most params"),
    (lambda: calc.fit_layouts("Llama 3.1 8B", "H100 SXM, BF16 tensor core, dense", 8, method="lora",
                              trainable=1e11), "trainable must be at most params"),
])
def test_calc_checks_trainable_against_the_parameters(call, words):
    with pytest.raises(calc.TrainingBudgetError, match=words.replace("(", r"\(")):
        call()
