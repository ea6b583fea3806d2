"""Uneven pipeline stages (80 layers on PP 3: 26/27/27, legal): every door gives the largest stage's memory
per device, as calc.fit_layouts counts it (calc.stages: Budget, estimate's text, JSON and CSV), and says the
stages are uneven; even stages give the same floats as an even split."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import invoke
from trainbudget import calc
from trainbudget.calc.money import totals as calc_schedule
from trainbudget.calc.physics import stages

H100 = "H100 SXM, BF16 tensor core, dense"

L70 = calc.model_preset("Llama 3.1 70B")  # 80 layers


def _job(pp: float, **options) -> calc.Job:
    return calc.job(model=L70, tokens=1e12, device=H100, devices=8 * pp, tp=8.0, pp=pp,
                    **options)


def test_stages_put_the_extra_layers_in_the_middle_then_last():
    """Llama 3 405B's split (arXiv:2407.21783 s.3.3.2): one layer fewer on the first and the last stage."""
    assert stages.stage_layers(126, 16) == [7] + [8] * 14 + [7]
    assert stages.stage_layers(80, 3) == [26, 27, 27] and stages.stage_layers(7, 2) == [3, 4]
    assert stages.stage_layers(10, 4) == [2, 3, 3, 2] and stages.stage_layers(80, 4) == [20] * 4


def test_the_busiest_activations_are_the_layers_times_the_micro_batches_in_flight():
    """1F1B: device d keeps p - d micro-batches; the peak of layers x in flight over the split, even
    splits unchanged."""
    for L, p in ((126, 16), (80, 3), (7, 2), (10, 4), (61, 16), (80, 4), (32, 1)):
        split = stages.stage_layers(L, p)
        peak = max(n * (p - d) for d, n in enumerate(split))
        assert stages.activation_layers(L, p) == peak
    from trainbudget.calc.compose.step_terms import ACTIVATION_SEARCH
    from trainbudget.calc.physics.fit import stage_activations

    shape, o = calc.model_preset("Llama 3.1 405B").shape, {**ACTIVATION_SEARCH, "seq_len": 8192}
    meta = stage_activations(shape, (8, 16, 1, 1), 1, "none", o)          # 126 layers: 7 / 8 x 14 / 7
    eight = stage_activations({**shape, "n_layers": 128}, (8, 16, 1, 1), 1, "none", o)  # 8 on every stage
    assert float(meta / eight) == pytest.approx(120 / 128, rel=0.01)


def test_the_budget_counts_the_busiest_stage_as_fit_does():
    b = calc.budget(_job(3.0))
    lay = calc.fit_layouts(L70, H100, 24, memory_gib=1000, zero_stages=(0,), context_parallel=1)
    i = int(np.flatnonzero((np.asarray(lay.tp) == 8) & (np.asarray(lay.pp) == 3))[0])
    assert b.memory.weights == pytest.approx(float(np.asarray(lay.weights_bytes)[i]), rel=1e-12)
    shape = L70.shape
    embedding = shape["vocab"] * shape["d_model"]
    p = L70.params()
    even = calc.train_memory(p.total, devices=24, tensor_parallel=8, pipeline_parallel=3, stage_params=embedding)
    busiest = calc.train_memory(embedding + (p.total - embedding) * 27 * 3 / 80, devices=24, tensor_parallel=8,
                                pipeline_parallel=3, stage_params=embedding)
    assert b.memory.total == pytest.approx(busiest.total, rel=1e-12) and b.memory.total > even.total * 1.01


def test_even_stages_are_the_same_floats_as_before():
    b = calc.budget(_job(4.0))
    p, shape = L70.params(), L70.shape
    m = calc.train_memory(p.total, devices=32, tensor_parallel=8, pipeline_parallel=4,
                          stage_params=shape["vocab"] * shape["d_model"])
    assert b.memory.total == m.total


def test_estimate_says_the_stages_are_uneven_and_prints_the_largest():
    args = ("estimate", "--model", "Llama 3.1 70B", "--tokens", "1T", "--devices", "24", "--tp", "8", "--pp", "3",
            "--device", H100)
    want = float(calc.budget(_job(3.0)).memory.total) / calc_schedule.GIB
    text = invoke(*args, check=True).stdout
    assert f"({want:,.1f} GiB) of weights" in text and "uneven stages 26/27/27 layers: memory of the largest" in text
    row = json.loads(invoke(*args, "--json", check=True).stdout)["rows"][0]
    assert row["pipeline_stage_layers"] == "26/27/27" and row["memory_per_device_gib"] == pytest.approx(want)
    csv_text = invoke(*args, "--csv", check=True).stdout
    assert "pipeline_stage_layers" in csv_text.splitlines()[0] and ",26/27/27," in csv_text
    even = invoke(*args[:-4], "--pp", "4", "--devices", "32", "--device", H100, check=True).stdout
    assert "uneven" not in even
