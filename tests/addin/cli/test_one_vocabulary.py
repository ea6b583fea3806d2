"""One vocabulary on every command: estimate, fit and plan read their counts with one count type (16k is
16,000; 1.5, -2 and nan are refused in one line naming the option, exit 2), calc's errors reach the user
as the options typed (jobs.OPTION_OF), and plan asks calc one frozen calc.PlanQuestion, checked when made."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.conftest import invoke
from trainbudget import calc

H100 = "H100 SXM, BF16 tensor core, dense"
FIT = ("fit", "--model", "Llama 3.1 8B", "--device", H100)
PLAN = ("plan", "--params", "7B", "--tokens", "100B", "--days", "10", "--device", H100, "--utilization", "0.4",
        "--price", "2")


def _json(*args: str) -> dict:
    proc = invoke(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_fit_reads_devices_in_the_count_syntax():
    """fit --devices 16k is 16,000 devices, as estimate reads it; --seq-len 8k and --global-batch 2k too."""
    short = _json(*FIT, "--devices", "16k", "--seq-len", "8k", "--global-batch", "2k")
    long = _json(*FIT, "--devices", "16000", "--seq-len", "8000", "--global-batch", "2000")
    assert (short["devices"], short["seq_len"], short["global_batch"]) == (16000, 8000, 2000)
    assert short == long


def test_plan_reads_its_counts_in_the_count_syntax():
    """plan --seq-len 4k, --global-batch 1k and --node 8 as estimate reads counts: the same plans as spelled out."""
    short = _json(*PLAN, "--seq-len", "4k", "--global-batch", "1k", "--node", "8")
    long = _json(*PLAN, "--seq-len", "4000", "--global-batch", "1000", "--node", "8")
    assert (short["question"]["seq_len"], short["question"]["global_batch"]) == (4000, 1000)
    assert short == long
    assert len(invoke(*PLAN, "--limit", "1k").stdout) > len(invoke(*PLAN, "--limit", "1").stdout)


@pytest.mark.parametrize("command", [(*FIT, "--devices", "64"), PLAN], ids=["fit", "plan"])
@pytest.mark.parametrize(("option", "text", "words"), [
    ("--seq-len", "1.5", "--seq-len must be a whole number >= 1 (got '1.5')"),
    ("--seq-len", "-2", "--seq-len must be > 0 (got '-2')"),
    ("--seq-len", "nan", "--seq-len must be a finite count (got 'nan')"),
    ("--global-batch", "2.5", "--global-batch must be a whole number >= 1 (got '2.5')"),
    ("--limit", "1.5", "--limit must be a whole number >= 0 (got '1.5')"),
    ("--limit", "nan", "--limit must be a finite number (got 'nan')"),
])
def test_fit_and_plan_refuse_what_is_not_a_count_naming_the_option(command, option, text, words):
    proc = invoke(*command, option, text)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"trainbudget: error: {words}\n"


@pytest.mark.parametrize(("text", "words"), [
    ("1.5", "--devices must be a whole number >= 1 (got '1.5')"),
    ("-2", "--devices must be > 0 (got '-2')"),
    ("nan", "--devices must be a finite count (got 'nan')"),
])
def test_devices_are_refused_alike_by_estimate_and_fit(text, words):
    for command in (("estimate", "--device", H100), FIT):
        proc = invoke(*command, "--devices", text)
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"trainbudget: error: {words}\n"), command


def test_estimate_reads_devices_16k_as_fit_does():
    (row,) = _json("estimate", "--device", H100, "--devices", "16k", "--utilization", "0.4")["rows"]
    (want,) = _json("estimate", "--device", H100, "--devices", "16000", "--utilization", "0.4")["rows"]
    assert row == want and row["devices"] == 16000


@pytest.mark.parametrize(("command", "words"), [
    ((*FIT, "--devices", "8", "--method", "lorax"), "--method must be one of full, lora, qlora (got 'lorax')"),
    ((*FIT, "--devices", "8", "--loss", "x"), "--loss must be one of standard, parallel, fused (got 'x')"),
    ((*FIT, "--devices", "8", "--seq-len", "2g"), "--seq-len must be at most 1,073,741,824"),
    ((*FIT, "--devices", "8", "--cp", "3"), "--cp must divide devices (got 3, 8)"),
    ((*PLAN, "--global-batch", "2T"), "--global-batch must be at most 1,099,511,627,776"),
])
def test_calcs_errors_name_the_option_typed(command, words):
    """calc names its fields (method, seq_len, context_parallel, global_batch): the user reads the options."""
    proc = invoke(*command)
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith(f"trainbudget: error: {words}"), proc.stderr


def test_plan_question_is_frozen_keyword_only_and_checked_when_made():
    q = calc.PlanQuestion(1e11, 10, params=7e9, devices=[H100], price="2", utilization=0.4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.days = 20  # type: ignore[misc]
    with pytest.raises(TypeError):
        calc.PlanQuestion(1e11, 10, 7e9)  # type: ignore[misc]  # after tokens and days: by name only
    assert (q.checked.days, q.checked.case, q.checked.search.seq, q.checked.search.batch) == (
        10.0, "expected", calc.DEFAULT_SEQ_LEN, calc.DEFAULT_GLOBAL_BATCH)
    for bad, words in (({"days": 0}, "days must be > 0"), ({"case": "worst"}, "case must be one of"),
                       ({"node": 1.5}, "node must be a whole number"), ({"seq_len": 0.5}, "seq_len must be"),
                       ({"budget_usd": -1}, "budget_usd must be > 0"), ({"method": "dpo"}, "method must be one of")):
        with pytest.raises(calc.TrainingBudgetError, match=words):
            dataclasses.replace(q, **bad)


def test_rank_plans_answers_the_question_as_the_plan_command_does():
    """calc.rank_plans(question) gives the rows plan --json prints for the same question."""
    q = calc.PlanQuestion(1e11, 10, params=7e9, devices=[H100], price="2", utilization=0.4)
    rows = [p.row() for p in calc.rank_plans(q)]
    printed = _json(*PLAN)["plans"]
    assert rows and json.loads(json.dumps(rows)) == printed
    assert [p.row() for p in calc.rank_plans(dataclasses.replace(q, devices=[H100, H100]))] == rows
