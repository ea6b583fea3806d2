"""A LoRA step: the base frozen (no weight gradients to compute, reduce or update), the adapters'
share trained; QLoRA and inference refused in words; every door that times a step times it."""

from __future__ import annotations

import json

import pytest

from trainbudget import calc
from trainbudget.addin.cli.main import cli, run
from trainbudget.calc import step as S  # noqa: N812

H100 = "H100 SXM, BF16 tensor core, dense"
LLAMA8 = calc.model_preset("Llama 3.1 8B")


def _step(trained: float, **layout: float) -> calc.Step:
    lay = S.Layout(**{"devices": 8.0, "seq_len": 4096.0, "global_batch_tokens": 256 * 4096.0, **layout})
    return S.step_time(S.Shape.from_preset("Llama 3.1 8B"), lay, S.hardware(H100), None, trained)


@pytest.mark.parametrize("layout", [{}, {"tp": 2.0}, {"pp": 2.0, "micro_batch": 2.0}, {"zero_stage": 3.0},
                                    {"devices": 64.0, "tp": 4.0, "cp": 2.0}])
def test_a_lora_step_is_faster_than_full_training_by_less_than_its_flops(layout):
    """Frozen weights skip the weight-gradient GEMMs (4·N against 6·N per token): a LoRA step is faster,
    by less than 1.5x since attention, the elementwise work and the collectives stay. Hu et al. 2021
    (arXiv:2106.09685 s.4.2) measured 1.33x on GPT-3 175B."""
    full, lora = _step(1.0, **layout), _step(0.01, **layout)
    ratio = float(full.step_seconds / lora.step_seconds)
    assert 1.15 < ratio < 1.5
    assert float(lora.breakdown["optimizer"]) == pytest.approx(0.01 * float(full.breakdown["optimizer"]))


def test_lora_has_no_weight_gradients_to_reduce_but_zero3_still_gathers_its_weights():
    """ZeRO 1: only the adapters' gradients cross data parallel; ZeRO 3: every weight is gathered in
    the forward and the backward, the gradients' reduce-scatter is the adapters' alone."""
    lay = {"devices": 64.0, "zero_stage": 1.0}
    hw = S.hardware(H100)
    held = float(S.Shape.from_preset("Llama 3.1 8B").params_total)
    for stage, share in ((1.0, 0.01 * 2.0 / 2.0), (3.0, (2.0 + 0.01) / 3.0)):
        full = S.terms.dp_seconds(held, 64.0, stage, 8.0, hw.scale_up_GBps * 0.5e9, hw.scale_out_Gbps * 0.125e9)
        lora = S.terms.dp_seconds(held, 64.0, stage, 8.0, hw.scale_up_GBps * 0.5e9, hw.scale_out_Gbps * 0.125e9,
                                  0.01)
        assert lora == pytest.approx(full * share)
    assert float(_step(0.01, **lay).breakdown["dp_exposed"]) <= float(_step(1.0, **lay).breakdown["dp_exposed"])


def test_full_training_is_the_trained_share_of_one():
    """trained=1 is the step as calibrated: the same seconds, bit for bit, as the default."""
    lay = S.Layout(devices=64.0, seq_len=8192.0, global_batch_tokens=512 * 8192.0, tp=8.0, pp=2.0, zero_stage=1.0)
    shape, hw = S.Shape.from_preset("Llama 3.1 70B"), S.hardware(H100)
    assert S.step_time(shape, lay, hw).step_seconds == S.step_time(shape, lay, hw, None, 1.0).step_seconds


def test_budget_times_a_lora_step_and_says_so():
    """calc.budget at utilization "step" for LoRA: hours are the tokens over the step's tokens/s (over
    goodput), its FLOPs 4·N per token, the basis says the base is frozen and carries no caveat of the
    published full-training runs' range."""
    job = calc.job(model=LLAMA8, tokens=1e9, device=H100, devices=8, method="lora", trainable=0.02,
                   utilization="step")
    b = calc.budget(job)
    assert b.flops == pytest.approx(4.0 * b.params * 1e9)
    hours = 1e9 / (b.step.tokens_per_second_per_device * 8) / b.goodput / 3600
    assert b.hours.expected == pytest.approx(hours, rel=1e-9)
    assert "LoRA: the base frozen" in b.utilization_basis and "2% of the weights" in b.utilization_basis
    assert "fitted on full training runs" not in b.utilization_basis
    full = calc.budget(job.with_(method="full"))
    assert 1.15 < full.hours.expected / b.hours.expected < 1.5


@pytest.mark.parametrize(("method", "why"), [("qlora", "dequantized"), ("inference", "not a training step")])
def test_qlora_and_inference_are_refused_in_words(method, why):
    with pytest.raises(calc.TrainingBudgetError, match=f"method '{method}' is not modelled.*{why}"):
        calc.budget(calc.job(model=LLAMA8, tokens=1e9, device=H100, devices=8, method=method, utilization="step"))


def _fit(capsys, *args):
    code = run(cli, ["fit", "--model", "Llama 3.1 8B", "--device", H100, "--devices", "8", "--json", *args])
    got = capsys.readouterr()
    assert code == 0, got.err
    return json.loads(got.out)


def test_fit_times_lora_layouts_as_lora_and_keeps_memory_order_for_qlora(capsys):
    """fit --method lora ranks by the LoRA step (each row's seconds the step of its layout with the
    adapters' share trained); --method qlora lists fit's memory order and says why, with no step."""
    lora, full = _fit(capsys, "--method", "lora", "--trainable", "1%"), _fit(capsys)
    first = lora["layouts"][0]
    lay = S.Layout(devices=8.0, seq_len=4096.0, global_batch_tokens=1024 * 4096.0, tp=first["tp"], pp=first["pp"],
                   vpp=first["vpp"], cp=first["cp"], ep=first["ep"], zero_stage=first["zero_stage"],
                   micro_batch=first["micro_batch"], recompute=first["recompute"])
    expect = S.step_time(S.Shape.from_preset("Llama 3.1 8B"), lay, S.hardware(H100), None,
                         calc.trained_share("lora", LLAMA8, 0.01))
    assert first["step_seconds"] == pytest.approx(float(expect.step_seconds), rel=1e-12)
    assert first["step_seconds"] < full["layouts"][0]["step_seconds"]
    q = _fit(capsys, "--method", "qlora")
    assert "memory order" in q["ranking"] and "qlora" in q["ranking"]
    assert q["layouts"] and all("step_seconds" not in r for r in q["layouts"])
