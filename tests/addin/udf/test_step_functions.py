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
    """`n` valid jobs over models, devices, layouts, batches, recompute and flash attention, drawn with a fixed
    seed."""
    rng, devices, jobs = random.Random(seed), _devices(), []
    while len(jobs) < n:
        tp, pp, cp = rng.choice((1, 2, 4, 8)), rng.choice((1, 1, 2, 4)), rng.choice((1, 1, 2))
        dp = rng.choice((1, 2, 4, 8, 16))
        job = {"model": rng.choice(MODELS), "device": rng.choice(devices), "devices": tp * pp * cp * dp, "tp": tp,
               "pp": pp, "vpp": rng.choice((1, 2)) if pp > 1 else 1, "cp": cp, "ep": rng.choice((1, 2)) if dp % 2 == 0
               else 1, "seq_len": rng.choice((2048, 4096, 8192)), "micro_batch": rng.choice((1, 2)),
               "recompute": rng.choice(calc.RECOMPUTE), "zero_stage": rng.choice((0, 1, 2, 3)),
               "flash_attention": rng.random() < 0.7}
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


# --- TRAIN_BUDGET at utilization "step": the whole budget of the same Budget -----------------------------

def _budget_args(job: dict) -> dict:
    """TRAIN_BUDGET's arguments for a random job: the preset as params, 1e9 tokens, "step"."""
    rest = {k: v for k, v in job.items() if k not in ("model", "device", "devices")}
    return {"params": job["model"], "tokens": 1e9, "device": job["device"], "utilization": "step",
            "devices": job["devices"], **rest}


@pytest.mark.parametrize("i", range(0, len(JOBS), 5))
def test_train_budget_at_step_renders_the_same_budget(i):
    job, want = JOBS[i]
    table = dict((label, value) for label, value in udfs.TRAIN_BUDGET(**_budget_args(job)))
    for key, label in step_calls.ROWS:
        assert table[label[0].upper() + label[1:]] == pytest.approx(want[key], rel=1e-12), (key, job)
    flat = {k: v for k, v in job.items() if k != "global_batch"}
    b = calc.budget(calc.job(**flat, global_batch_tokens=job["global_batch"] * job["seq_len"], tokens=1e9,
                             utilization="step"))
    assert table["Hours"] == pytest.approx(b.hours.expected, rel=1e-12)
    assert (table["Hours, low"], table["Hours, high"]) == pytest.approx((b.hours.low, b.hours.high), rel=1e-12)
    assert table["Activations (GB per device)"] == pytest.approx(float(b.memory.activations) / calc.GB, rel=1e-12)
    assert table["Fits in memory"] is bool(b.fits)


def test_train_budget_takes_a_layout_at_a_given_utilization_too():
    """The degrees split the memory at any utilization; a preset's name stands for its parameters."""
    by_name = dict((k, v) for k, v in udfs.TRAIN_BUDGET("Llama 3.1 70B", 1e12, H100, 0.4, 64, tp=8, zero_stage=1))
    b = calc.budget(calc.job(model="Llama 3.1 70B", tokens=1e12, device=H100, devices=64, utilization=0.4, tp=8,
                             zero_stage=1))
    assert by_name["Weights (GB per device)"] == pytest.approx(float(b.memory.weights) / calc.GB, rel=1e-12)
    assert by_name["Hours"] == pytest.approx(float(b.hours), rel=1e-12)
    assert "Step seconds" not in by_name


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"utilization": 0.4, "seq_len": 8192}, "seq_len sets the step model's batch"),
    ({"utilization": 0.4, "global_batch": 512}, "global_batch sets the step model's batch"),
    ({"utilization": 0.4, "flash_attention": False}, "flash_attention sets the step model's attention"),
    ({"params": 8e9}, "utilization 'step' needs the model's shape"),
    ({"utilization": "prior"}, 'utilization must be a number in (0, 1] or "step"'),
    ({"cp": 2, "flash_attention": False}, "cp must be 1 with flash_attention False"),
])
def test_train_budget_refuses_what_it_cannot_time(kwargs, needle):
    args = {"params": "Llama 3.1 8B", "tokens": 1e9, "device": H100, "utilization": "step", "devices": 64, **kwargs}
    got = udfs.TRAIN_BUDGET(**args)
    assert isinstance(got, str) and got.startswith("#VALUE! ") and needle in got and len(got) <= 255, got


# --- TRAIN_STEP_DEVICES_FOR_DAYS: devices for a deadline on the step model ----------------------------

DEADLINE_ORDER = [a.name for a in BY_NAME["TRAIN_STEP_DEVICES_FOR_DAYS"].args]


def _deadlines(n: int, seed: int = 31) -> list[tuple[dict, float]]:
    """`n` deadlines on the random jobs' layouts (tokens and days drawn), with calc.devices_for's count."""
    rng, out = random.Random(seed), []
    for job, _ in JOBS:
        if len(out) == n:
            break
        ask = {**job, "tokens": rng.choice((1e10, 1e11, 1e12)), "days": rng.choice((7, 30, 90))}
        flat = {k: v for k, v in job.items() if k not in ("global_batch", "devices")}
        calc_job = calc.job(**flat, global_batch_tokens=job["global_batch"] * job["seq_len"], tokens=ask["tokens"],
                            utilization="step")
        try:
            out.append((ask, calc.devices_for(calc_job, ask["days"])))
        except calc.TrainingBudgetError:
            continue  # the batch runs out of data-parallel ranks first: the message is tested below
    return out


DEADLINES = _deadlines(30)


@pytest.mark.parametrize("i", range(len(DEADLINES)))
def test_devices_for_days_on_the_step_equals_calc(i):
    ask, want = DEADLINES[i]
    got = udfs.TRAIN_STEP_DEVICES_FOR_DAYS(*[ask[name] for name in DEADLINE_ORDER])
    if want == float("inf"):  # no count fits memory: the cell says so, as TRAIN_DEVICES_FOR_DAYS's does
        assert got.startswith("#NUM! does not fit in device memory")
    else:
        assert got == want


def test_the_count_meets_the_deadline_and_one_replica_fewer_does_not():
    """The answer is the fewest: at it the step model's expected hours meet the deadline (and memory fits);
    one replica fewer misses it. Each count is timed with its own data parallel."""
    args = ("Llama 3.1 70B", H100, 2e12, 60, 8, 4, 1, 1, 1, 8192, 2048)
    n = udfs.TRAIN_STEP_DEVICES_FOR_DAYS(*args)
    job = calc.job(model="Llama 3.1 70B", device=H100, tokens=2e12, tp=8, pp=4, seq_len=8192,
                   global_batch_tokens=2048 * 8192, utilization="step")
    assert calc.budget(job.with_(devices=n)).hours.expected <= 60 * 24
    assert calc.budget(job.with_(devices=n - 32)).hours.expected > 60 * 24
    assert sum(1 for _, want in DEADLINES if want < float("inf")) >= len(DEADLINES) // 2


@pytest.mark.parametrize(("changes", "needle"), [
    ({"days": -1}, "#VALUE! days must be > 0"),
    ({"tokens": 2e16, "days": 1}, "runs out of data-parallel ranks"),
    ({"tp": 1, "pp": 1}, "#NUM! does not fit in device memory"),
    ({"model": 7e9}, "model must be a preset"),
])
def test_devices_for_days_on_the_step_refuses_in_words(changes, needle):
    args = {"model": "Llama 3.1 70B", "device": H100, "tokens": 2e12, "days": 60, "tp": 8, "pp": 4, **changes}
    got = udfs.TRAIN_STEP_DEVICES_FOR_DAYS(**args)
    assert isinstance(got, str) and needle in got and len(got) <= 255, got
