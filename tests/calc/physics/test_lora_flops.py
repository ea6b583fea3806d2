"""LoRA and QLoRA train adapters over frozen base weights: 4 FLOPs per parameter per token, not a full
training step's 6 (calc_flops.FROZEN_FLOPS_PER_PARAM_TOKEN: the backward pass carries the activations'
gradients through the frozen weights, 2N, and computes no weight gradient for them; Narayanan et al.
2021, arXiv:2104.04473, on the backward pass's two matmuls; Hu et al. 2021, arXiv:2106.09685, §4.2).

Before, LoRA and QLoRA were costed as a full training step: their hours, cost and energy were 1.5 times
what the FLOPs they run take. Every door now gives two thirds of the same full job's: calc (scalars and
arrays), the command line, TRAIN_BUDGET (the UDF and the Lite runtime), and the Budget sheet
recalculated by LibreOffice. Memory does not change (calc.memory already held no gradients or optimizer
state for the frozen weights)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.conftest import invoke
from tests.sheet_cases import named_value, recalculated_copies, set_named
from trainbudget import calc
from trainbudget.addin.functions import native
from trainbudget.addin.functions.registry import BY_NAME
from trainbudget.addin.lite import runtime, spec as lite_spec
from trainbudget.addin.template import budget_sheet, ranges_block
from trainbudget.addin.udf import udfs
from trainbudget.calc.compose.budget import PRIOR_OF_FULL
from trainbudget.calc.physics import flops as calc_flops

H100 = "H100 SXM, BF16 tensor core, dense"
FORWARD, ACTIVATION_GRADS, WEIGHT_GRADS = 2.0, 2.0, 2.0  # per parameter-token: each matmul's size, 2N
FROZEN = FORWARD + ACTIVATION_GRADS  # no weight gradients for frozen weights
FULL = FORWARD + ACTIVATION_GRADS + WEIGHT_GRADS  # Kaplan et al. 2020, §2.1: 6N
TWO_THIRDS = FROZEN / FULL
FIGURES = ("hours", "days", "device_hours", "cost_usd", "energy_kwh")
METHODS = ("lora", "qlora")


def _close(a, b, rel: float = 1e-12) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel)


def _job(**changes) -> calc.Job:
    base = {"params": 7e9, "tokens": 1e12, "device": H100, "devices": 64, "utilization": 0.4, "price": 2.5}
    return calc.job(**{**base, **changes})


def _values(x):
    return x if isinstance(x, calc.Span) else (x,)


def test_frozen_weights_run_four_flops_per_parameter_token():
    for method in METHODS:
        assert calc_flops.flops_per_param_token(method) == FROZEN
    assert calc_flops.flops_per_param_token("LoRA") == FROZEN  # as calc.memory reads the name
    assert calc_flops.flops_per_param_token("full") == FULL


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("utilization", [0.4, "prior"])
def test_a_lora_job_is_two_thirds_of_the_full_job(method, utilization):
    full = calc.budget(_job(utilization=utilization))
    lora = calc.budget(_job(utilization=utilization, method=method))
    assert float(lora.flops) == FROZEN * 7e9 * 1e12
    for name in FIGURES:
        for x, y in zip(_values(getattr(lora, name)), _values(getattr(full, name)), strict=True):
            assert _close(x, y * TWO_THIRDS), (name, x, y)
    assert lora.memory.total == calc.budget(_job(utilization=utilization, method=method)).memory.total


def test_arrays_and_a_preset_follow_the_method():
    params = np.array([1e9, 7e9, 70e9])
    full = calc.budget(_job(params=params))
    lora = calc.budget(_job(params=params, method="lora"))
    assert np.allclose(lora.hours, full.hours * TWO_THIRDS, rtol=1e-12)
    for k, p in enumerate(params):  # each element equals its scalar job
        assert lora.hours[k] == calc.budget(_job(params=float(p), method="lora")).hours
    preset = calc.budget(calc.job(model="Llama 3.1 8B", tokens=1e12, device=H100, devices=8, utilization=0.4))
    adapted = calc.budget(preset.job.with_(method="qlora"))
    assert _close(adapted.flops, float(preset.flops) * TWO_THIRDS)


def test_the_command_line_follows_the_method():
    args = ("estimate", "--params", "7e9", "--tokens", "1e12", "--device", H100, "--devices", "64",
            "--utilization", "0.4", "--price", "2.5", "--json")
    (full,) = json.loads(invoke(*args, check=True).stdout)["rows"]
    (lora,) = json.loads(invoke(*args, "--method", "lora", check=True).stdout)["rows"]
    want = calc.budget(_job(method="lora"))
    assert lora["hours"] == want.hours and lora["cost_usd"] == want.cost_usd
    assert _close(lora["hours"], full["hours"] * TWO_THIRDS)
    assert "(4: no weight gradients" in invoke("estimate", "--help", check=True).stdout.replace("\n", " ")


def test_train_budget_udf_and_lite_follow_the_method():
    full = dict(udfs.TRAIN_BUDGET(7e9, 1e12, H100, 0.4, 64, 2.5, 1.0, "full"))
    lora = dict(udfs.TRAIN_BUDGET(7e9, 1e12, H100, 0.4, 64, 2.5, 1.0, "lora"))
    assert lora["Hours"] == float(calc.budget(_job(method="lora", pue=1.0)).hours)
    assert _close(lora["Hours"], full["Hours"] * TWO_THIRDS)
    spec = lite_spec.build()
    fn = next(f for f in spec["functions"] if f["name"] == "TRAIN_BUDGET")
    args = {"params": 7e9, "tokens": 1e12, "device": H100, "utilization": 0.4, "devices": 64,
            "usd_per_device_hour": 2.5, "method": "qlora"}
    lite = dict(map(tuple, runtime.call(fn, args, spec)))
    assert _close(lite["Hours"], full["Hours"] * TWO_THIRDS)
    method = next(a for a in BY_NAME["TRAIN_BUDGET"].args if a.name == "method")
    assert "frozen weights (4)" in method.help


def test_a_lora_range_says_its_prior_is_of_full_training_runs():
    """The prior is fitted on full training runs; LoRA's measured speed-up (Hu et al. 2021, footnote 5:
    1.33x) is less than its FLOPs' (1.5x), so its basis says so, as an inference job's says its own."""
    full = calc.budget(_job(utilization="prior"))
    for method in METHODS:
        b = calc.budget(_job(utilization="prior", method=method))
        assert b.utilization_basis == full.utilization_basis + PRIOR_OF_FULL
        assert "1.33x" in b.utilization_basis and "1.5x" in b.utilization_basis
    assert "LoRA ran" not in calc.budget(_job(utilization="prior", method="inference")).utilization_basis
    assert "LoRA ran" not in calc.budget(_job(method="lora")).utilization_basis  # a given utilization: no prior


def test_the_native_factor_names_each_method_once():
    expr = native.flops_per_param_token("Method")
    assert expr == 'IF(OR(Method="lora",Method="qlora"),4,IF(Method="inference",2,6))'


@pytest.fixture(scope="module")
def book(soffice, built, tmp_path_factory):
    return recalculated_copies(built.path, tmp_path_factory.mktemp("lora"),
                               [lambda wb: set_named(wb, "Method", "lora")])[0]


def test_budget_sheet_lora_equals_calc(book):
    ws = book["Budget"]
    got = {ws[f"A{r}"].value: ws[f"B{r}"].value for r in range(1, ws.max_row + 1) if isinstance(ws[f"A{r}"].value, str)}
    v = {name: default for name, _, default, *_ in budget_sheet.INPUTS}
    v["method"] = "lora"
    b, full = ranges_block.budget(v, calc.catalog()), ranges_block.budget({**v, "method": "full"}, calc.catalog())
    assert named_value(book, "FLOPs_per_token") == FROZEN
    ranged = ranges_block.budget(v, calc.catalog(), utilization="prior")
    assert named_value(book, "Prior_basis") == ranged.utilization_basis[len("prior: "):]
    for label, value, whole in (("Training compute (FLOPs)", b.flops, full.flops),
                                ("Wall-clock hours", b.hours, full.hours),
                                ("Device-hours", b.device_hours, full.device_hours),
                                ("Energy (kWh)", b.energy_kwh, full.energy_kwh)):
        assert _close(got[label], value, 1e-9) and _close(got[label], whole * TWO_THIRDS, 1e-9), label
