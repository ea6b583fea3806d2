"""The step model's Excel functions (TRAIN_STEP, TRAIN_STEP_SECONDS, TRAIN_MFU) against calc's own
step figures (calc.step_row of calc.budget at utilization "step"), never against pinned numbers:
the step model's constants may be refitted."""

from __future__ import annotations

import random

import pytest

from trainbudget import calc
from trainbudget.addin.functions import step_calls
from trainbudget.addin.functions.registry import BY_NAME
from trainbudget.addin.udf import udfs

H100 = "H100 SXM, BF16 tensor core, dense"
MODELS = ("Llama 3.1 8B", "Llama 3.1 70B", "Mixtral 8x7B", "Qwen3-30B-A3B")


def _devices() -> list[str]:
    """Catalog rows the step can time: a memory bandwidth, not measured."""
    return [d.name for d in calc.catalog() if d.memory_tbps and d.kind != "measured"]


def _random_jobs(n: int, seed: int = 30) -> list[dict]:
    """`n` valid jobs over models, devices, layouts, batches and recompute, drawn with a fixed seed."""
    rng, devices, jobs = random.Random(seed), _devices(), []
    while len(jobs) < n:
        tp, pp, cp = rng.choice((1, 2, 4, 8)), rng.choice((1, 1, 2, 4)), rng.choice((1, 1, 2))
        dp = rng.choice((1, 2, 4, 8, 16))
        job = {"model": rng.choice(MODELS), "device": rng.choice(devices), "devices": tp * pp * cp * dp, "tp": tp,
               "pp": pp, "vpp": rng.choice((1, 2)) if pp > 1 else 1, "cp": cp, "ep": rng.choice((1, 2)) if dp % 2 == 0
               else 1, "seq_len": rng.choice((2048, 4096, 8192)), "micro_batch": rng.choice((1, 2)),
               "recompute": rng.choice(calc.RECOMPUTE), "zero_stage": rng.choice((0, 1, 2, 3))}
        job["global_batch"] = dp * job["micro_batch"] * rng.choice((4, 16, 64))
        try:
            jobs.append((job, _calc(job)))
        except calc.TrainingBudgetError:
            continue  # a layout the model refuses (heads, experts): the messages are tested below
    return jobs


def _calc(job: dict) -> dict:
    """calc's step figures for `job` (the batch in sequences, as the functions take it)."""
    flat = {k: v for k, v in job.items() if k != "global_batch"}
    b = calc.budget(calc.job(**flat, global_batch_tokens=job["global_batch"] * job["seq_len"], tokens=1e9,
                             utilization="step"))
    return calc.step_row(b)


JOBS = _random_jobs(50)
ORDER = [a.name for a in BY_NAME["TRAIN_STEP"].args]


@pytest.mark.parametrize("i", range(len(JOBS)))
def test_every_step_function_equals_calc(i):
    job, want = JOBS[i]
    args = [job[name] for name in ORDER]
    table = dict((label, value) for label, value in udfs.TRAIN_STEP(*args))
    for key, label in step_calls.ROWS:
        assert table[label] == pytest.approx(want[key], rel=1e-12), (key, job)
    assert udfs.TRAIN_STEP_SECONDS(*args) == pytest.approx(want["step_seconds"], rel=1e-12)
    assert udfs.TRAIN_MFU(*args) == pytest.approx(want["mfu"], rel=1e-12)


def test_the_random_jobs_span_the_breakdown():
    # the 50 jobs reach every part of the step, so the comparison above covers each
    for part in calc.STEP_PARTS:
        assert any(want[f"step_{part}_seconds"] > 0 for _, want in JOBS), part


def test_omitted_arguments_take_calcs_defaults():
    got = udfs.TRAIN_STEP_SECONDS("Llama 3.1 8B", H100, 64)
    b = calc.budget(calc.job(model="Llama 3.1 8B", device=H100, devices=64, tokens=1e9, utilization="step"))
    assert got == pytest.approx(float(b.step.step_seconds), rel=1e-12)


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"model": None}, "model is empty"),
    ({"model": 7e9}, "model must be a preset"),
    ({"model": "Llama 9"}, "model must be one of"),
    ({"global_batch": 0.5}, "global_batch must be a whole number"),
    ({"recompute": "some"}, "recompute must be one of"),
    ({"tp": 3}, "tensor_parallel must divide"),
    ({"devices": ((64,), (32,))}, "devices is a range of 2 cells"),
    ({"device": "no such device"}, "#N/A unknown device"),
])
def test_bad_input_is_a_short_message_naming_the_argument(kwargs, needle):
    args = {"model": "Llama 3.1 8B", "device": H100, "devices": 64, **kwargs}
    for fn in (udfs.TRAIN_STEP, udfs.TRAIN_STEP_SECONDS, udfs.TRAIN_MFU):
        got = fn(**args)
        assert isinstance(got, str) and needle in got and len(got) <= 255, got
        assert got.startswith("#VALUE! ") or got.startswith("#N/A ")
