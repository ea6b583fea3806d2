"""calc.deadline_devices: the fewest devices on which a layout runs the tokens within the days at
run_hours' expected hours, against every count the batch allows, timed one by one."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from trainbudget import calc

H100 = "H100 SXM, BF16 tensor core, dense"
# (preset, device, layout without devices)
LAYOUTS = [
    ("Llama 3.1 8B", H100, dict(seq_len=8192, global_batch_tokens=512 * 8192, tp=2)),
    ("Llama 3.1 8B", H100, dict(seq_len=4096, global_batch_tokens=2048 * 4096, zero_stage=3)),
    ("Llama 3.1 70B", "H100 SXM, FP8 tensor core, dense",
     dict(seq_len=8192, global_batch_tokens=256 * 8192, tp=4, pp=2, vpp=2, recompute="full")),
    ("Mixtral 8x7B", H100, dict(seq_len=4096, global_batch_tokens=1024 * 4096, ep=8, zero_stage=1)),
    ("Llama 3.1 405B", "TPU v5p, BF16, dense", dict(seq_len=8192, global_batch_tokens=512 * 8192, tp=8, pp=2,
                                                    micro_batch=2, zero_stage=3)),
]
TOKENS, DAYS = (1e10, 1e12, 1e13), (0.5, 7.0, 90.0)


def _layout(**layout) -> calc.StepLayout:
    """The layout on one count of its degrees (tp·pp·cp·ep devices)."""
    r = layout.get("tp", 1) * layout.get("pp", 1) * layout.get("cp", 1) * layout.get("ep", 1)
    return calc.StepLayout(devices=float(r), **layout)


def _every_count(shape, lay, hw, tokens, days) -> float:
    """The first count of every one the batch allows (k·r, r = tp·pp·cp·ep) that meets the deadline."""
    r = lay.tp * lay.pp * lay.cp * lay.ep
    k = np.arange(1, int(lay.global_batch_tokens / lay.seq_len / (lay.ep * lay.micro_batch)) + 1, dtype=float)
    hours = calc.run_hours(shape, dataclasses.replace(lay, devices=k * r), hw, tokens).expected
    met = k[hours <= 24 * days]
    return float(met[0] * r) if len(met) else math.inf


@pytest.mark.parametrize("preset,device,layout", LAYOUTS)
def test_the_first_count_that_meets_the_deadline(preset, device, layout):
    shape, hw = calc.step_shape(calc.model_preset(preset)), calc.step_hardware(device)
    lay = _layout(**layout)
    answers = []
    for tokens, days in itertools.product(TOKENS, DAYS):
        got = calc.deadline_devices(shape, lay, hw, tokens, days)
        assert got == _every_count(shape, lay, hw, tokens, days), (tokens, days)
        answers.append(got)
    assert len(set(answers)) >= 3  # the grid moves the answer


def test_the_bound_is_never_above_a_count_that_meets():
    """deadline_bound from any count k gives a k' with no count in [k, k') meeting the deadline."""
    shape, hw = calc.step_shape(calc.model_preset("Llama 3.1 8B")), calc.step_hardware(H100)
    lay = _layout(seq_len=8192, global_batch_tokens=1024 * 8192, tp=2)
    g, limit, tokens = calc.fit_goodput(), 24 * 7.0, 1e12
    for k in (1.0, 4.0, 40.0, 200.0):
        per_second = tokens / lay.global_batch_tokens / (3600 * g.expected)
        bound = calc.deadline_bound(calc.step_time(shape, dataclasses.replace(lay, devices=2 * k), hw), k,
                                    lay.zero_stage, limit, per_second)
        assert bound >= k
        below = np.arange(k, min(bound, 513.0))
        if len(below):
            hours = calc.run_hours(shape, dataclasses.replace(lay, devices=2 * below), hw, tokens).expected
            assert np.all(hours > limit), k


def test_a_deadline_no_count_meets_is_inf():
    shape, hw = calc.step_shape(calc.model_preset("Llama 3.1 70B")), calc.step_hardware(H100)
    lay = _layout(seq_len=8192, global_batch_tokens=64 * 8192, tp=8)
    assert calc.deadline_devices(shape, lay, hw, 1e13, 1.0) == math.inf


@pytest.mark.parametrize("days", [0.0, -1.0, math.nan])
def test_days_must_be_positive(days):
    shape, hw = calc.step_shape(calc.model_preset("Llama 3.1 8B")), calc.step_hardware(H100)
    lay = _layout(seq_len=8192, global_batch_tokens=512 * 8192)
    with pytest.raises(calc.TrainingBudgetError, match="days"):
        calc.deadline_devices(shape, lay, hw, 1e12, days)


@pytest.mark.parametrize("zero_stage,days", [(1, 7.0), (1, 60.0), (3, 7.0), (3, 14.0)])
def test_the_step_deadline_of_a_job_is_the_same_search(zero_stage, days):
    """calc.devices_for at utilization "step" (TRAIN_STEP_DEVICES_FOR_DAYS) starts from the same raised
    bound: where memory does not bind, it gives calc.deadline_devices' count. (From the bound of the
    1 / devices scaling alone, 64 counts fell short of ZeRO-3's 1,016 devices at 7 days.)"""
    preset = calc.model_preset("Llama 3.1 8B")
    job = calc.job(model=preset, tokens=3e12, device=H100, devices=2, tp=2, utilization="step", seq_len=8192,
                   global_batch_tokens=512 * 8192, zero_stage=zero_stage)
    lay = _layout(seq_len=8192, global_batch_tokens=512 * 8192, tp=2, zero_stage=zero_stage)
    want = calc.deadline_devices(calc.step_shape(preset), lay, calc.step_hardware(H100), 3e12, days)
    assert math.isfinite(want) and calc.devices_for(job, days) == want


@pytest.mark.parametrize("case", ["low", "high"])
def test_a_case_deadline_is_the_first_count_whose_case_hours_meet_it(case):
    """deadline_devices at run_hours' low or high hours: the first count of every one the batch allows
    whose case hours meet the deadline, and what calc.devices_for at "step" gives for that case."""
    preset = calc.model_preset("Llama 3.1 8B")
    shape, hw = calc.step_shape(preset), calc.step_hardware(H100)
    lay = _layout(seq_len=8192, global_batch_tokens=512 * 8192, tp=2, zero_stage=1)
    r, tokens = 2, 2e12
    k = np.arange(1, 513, dtype=float)
    hours = getattr(calc.run_hours(shape, dataclasses.replace(lay, devices=k * r), hw, tokens), case)
    job = calc.job(model=preset, tokens=tokens, device=H100, devices=2, tp=2, utilization="step", seq_len=8192,
                   global_batch_tokens=512 * 8192, zero_stage=1)
    answers = []
    for days in (7.0, 20.0, 60.0):
        want = float(k[hours <= 24 * days][0] * r)
        got = calc.deadline_devices(shape, lay, hw, tokens, days, case=case)
        assert got == want == calc.devices_for(job, days, case=case, memory=False), (case, days)
        answers.append((got, calc.deadline_devices(shape, lay, hw, tokens, days)))
    assert all((a < e) if case == "low" else (a > e) for a, e in answers)  # the case moves the answer


def test_a_step_deadline_past_the_batchs_ranks_says_so():
    """calc.devices_for at "step" where every count that could meet the deadline passes the batch's
    data-parallel ranks: the planner's words, not the layout's refusal at a count it tried."""
    job = calc.job(model=calc.model_preset("Llama 3.1 8B"), tokens=2e12, device=H100, devices=8, tp=2,
                   utilization="step", seq_len=8192, global_batch_tokens=512 * 8192, zero_stage=3)
    for case, days in (("expected", 4.0), ("high", 5.0)):  # the search tries a count past the ranks
        with pytest.raises(calc.TrainingBudgetError, match=f"no device count meets {days:g} days"):
            calc.devices_for(job, days, case=case, memory=False)


def test_the_step_deadline_in_every_case_at_once():
    """case None at utilization "step": low / expected / high on a trailing axis, each the case's own answer."""
    job = calc.job(model=calc.model_preset("Llama 3.1 8B"), device=H100, tokens=1e12, utilization="step",
                   seq_len=8192, global_batch_tokens=512 * 8192, tp=2, zero_stage=1)
    got = calc.devices_for(job, 7.0, case=None, memory=False)
    want = [calc.devices_for(job, 7.0, case=c, memory=False) for c in ("low", "expected", "high")]
    assert np.shape(got) == (3,) and list(got) == want and want[0] < want[1] < want[2]
