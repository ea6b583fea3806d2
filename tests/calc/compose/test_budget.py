"""calc.budget: the one composer. Its figures equal the point functions' for random jobs, arrays of
jobs equal the same jobs one by one, ranges equal train_range, and every assumption is stated."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc.compose.budget import Job, Owned, Span, budget, usable_bytes
from trainbudget.calc.physics import flops as calc_flops
from trainbudget.calc.prior import utilization as calc_prior

H100 = "H100 SXM, BF16 tensor core, dense"
DEVICES = (H100, "B200, BF16 tensor core, dense", "H200 SXM, FP8 tensor core, dense",
           "RTX 4090, BF16 tensor core, dense", "MI300X, BF16 matrix, dense")
GIB = 2.0 ** 30
budget_module = importlib.import_module("trainbudget.calc.compose.budget")  # calc.budget is the function
utilization_module = importlib.import_module("trainbudget.calc.compose.utilization_terms")


def _random_jobs(n: int, seed: int = 17) -> list[Job]:
    rng = np.random.default_rng(seed)
    jobs = []
    for _ in range(n):
        devices = int(rng.choice([1, 8, 64, 512]))
        jobs.append(calc.job(params=float(rng.choice([1e9, 7e9, 13e9, 70e9])),
                             tokens=float(rng.choice([1e10, 1e12, 2e12])),
                        device=str(rng.choice(DEVICES)), devices=devices, zero_stage=int(rng.integers(0, 4)),
                        method=str(rng.choice(["full", "lora", "qlora"])),
                        optimizer=str(rng.choice(["adamw", "sgd", "adamw_8bit"])),
                        utilization=float(rng.uniform(0.2, 0.6)), price=float(rng.uniform(1, 5)),
                        pue=float(rng.uniform(1, 1.6))))
    return jobs


@pytest.mark.parametrize("job", _random_jobs(12))
def test_points_equal_the_point_functions(job):
    b = budget(job)
    kw = {"utilization": job.utilization, "devices": job.cluster.devices}
    # the point functions cost a full training step (6 FLOPs per parameter-token); LoRA and QLoRA run 4
    k = calc_flops.flops_per_param_token(job.training.method) / calc_flops.TRAIN_FLOPS_PER_PARAM_TOKEN
    assert b.hours == pytest.approx(k * calc.train_hours(job.model.params, job.tokens, job.cluster.device, **kw))
    assert b.days == pytest.approx(b.hours / 24)
    assert b.device_hours == pytest.approx(k * calc.gpu_hours(job.model.params, job.tokens, job.cluster.device, **kw))
    assert b.cost_usd == pytest.approx(k * calc.train_cost(job.model.params, job.tokens, job.cluster.device,
                                                           usd_per_device_hour=job.pricing.price, **kw))
    assert b.energy_kwh == pytest.approx(k * calc.train_energy_kwh(job.model.params, job.tokens, job.cluster.device,
                                                                   pue=job.pricing.pue, **kw))
    mem = calc.train_memory(job.model.params, method=job.training.method, optimizer=job.training.optimizer,
                            zero_stage=job.layout.zero_stage, devices=job.cluster.devices)
    assert b.memory.total == pytest.approx(mem.total)
    assert b.flops == pytest.approx(k * calc.train_flops(job.model.params, job.tokens))
    assert b.headroom_bytes == pytest.approx(usable_bytes(job.cluster.device) - mem.total)
    assert b.fits == (mem.total <= usable_bytes(job.cluster.device))
    assert b.goodput == 1.0 and b.utilization_basis == "given" and "not counted" in b.goodput_basis


def test_ranges_equal_train_range():
    for device in DEVICES:
        b = budget(calc.job(params=13e9, tokens=1e12, device=device, devices=64, utilization="prior", price=2.0,
                            pue=1.2))
        p = calc_prior.job_prior(device, active_params=13e9, devices=64, tokens=1e12)  # the job's own prior
        r = calc.train_range(13e9, 1e12, device, devices=64, usd_per_device_hour=2.0, pue=1.2)
        for span, key in ((b.hours, "hours"), (b.device_hours, "device_hours"), (b.cost_usd, "usd"),
                          (b.energy_kwh, "kwh")):
            assert isinstance(span, Span) and span.low <= span.expected <= span.high
            assert span.as_tuple() == pytest.approx(tuple(r[key]))
        assert b.utilization.as_tuple() == (p.low, p.expected, p.high) and b.goodput == p.goodput
        assert b.prior == p and "published runs" in b.utilization_basis and b.utilization_basis == f"prior: {p.basis}"


def test_arrays_of_jobs_equal_the_jobs_one_by_one():
    rng = np.random.default_rng(3)
    params = rng.choice([1e9, 7e9, 70e9], 40)
    devices = rng.choice([8.0, 64.0], 40)
    zero = rng.integers(0, 4, 40).astype(float)
    util = rng.uniform(0.2, 0.6, 40)
    many = budget(calc.job(params=params, tokens=1e12, devices=devices, zero_stage=zero, utilization=util, price=2.5))
    assert many.hours.shape == (40,) and many.fits.shape == (40,)
    for i in range(0, 40, 7):
        one = budget(calc.job(params=float(params[i]), tokens=1e12, devices=float(devices[i]),
                              zero_stage=float(zero[i]), utilization=float(util[i]), price=2.5))
        assert many.hours[i] == pytest.approx(one.hours) and many.cost_usd[i] == pytest.approx(one.cost_usd)
        assert many.memory.total[i] == pytest.approx(one.memory.total) and bool(many.fits[i]) == one.fits
    ranged = budget(calc.job(params=params, tokens=1e12, devices=devices, utilization="prior"))
    assert ranged.hours.low.shape == (40,) and (ranged.hours.low <= ranged.hours.high).all()


def test_usable_memory_states_its_reserve():
    assert usable_bytes(H100) == 80 * GIB - max(3 * GIB, 0.05 * 80 * GIB)  # 76 GiB
    assert usable_bytes("RTX 4090, BF16 tensor core, dense") == 21 * GIB  # 24 GiB less 3 GiB
    blank = calc.DeviceTable([calc.Device("Lab box (measured)", 50.0, source="bench run")])  # no memory
    assert usable_bytes("Lab box (measured)", blank) is None
    b = budget(calc.job(params=7e9, device="Lab box (measured)", table=blank))
    assert b.fits is None and b.headroom_bytes is None


def test_a_model_gives_total_active_experts_and_layout():
    mixtral = calc.model_preset("Mixtral 8x7B")
    b = budget(calc.job(model=mixtral, tokens=1e12, devices=64, tp=2, ep=8))
    counts = mixtral.params()
    assert b.params == counts.total and b.active_params == counts.active_with_embedding
    assert b.flops == pytest.approx(calc.train_flops(counts.total, 1e12, active_params=counts.active_with_embedding))
    stage = mixtral.shape["vocab"] * mixtral.shape["d_model"]
    want = calc.train_memory(counts.total, devices=64, tensor_parallel=2, expert_parallel=8,
                             expert_params=counts.experts, stage_params=stage)
    assert b.memory.total == pytest.approx(want.total) and b.layout["dp"] == 32


@pytest.mark.parametrize(("changes", "needle"), [
    ({"tp": 7, "devices": 7}, "tensor_parallel must divide n_heads"),
    ({"pp": 81, "devices": 81}, "pipeline_parallel must be at most n_layers"),
    ({"params": 7e9}, "give params or a model, not both"),
])
def test_layouts_must_divide_what_they_split(changes, needle):
    with pytest.raises(calc.TrainingBudgetError, match=needle):
        budget(calc.job(model=calc.model_preset("Llama 3.1 70B"), **changes))
    with pytest.raises(calc.TrainingBudgetError, match="expert_parallel must divide n_experts"):
        budget(calc.job(model=calc.model_preset("Mixtral 8x7B"), ep=3, devices=3))


def test_prices_say_where_they_come_from():
    assert budget(calc.job(params=7e9)).price_label == "no price" and budget(calc.job(params=7e9)).cost_usd is None
    aws = budget(calc.job(params=7e9, price="aws:on_demand", devices=8))
    assert aws.price_as_of == "2026-11-09" and aws.price_age_days >= 0 and aws.price_source.startswith("data-receipts")
    owned = budget(calc.job(params=7e9, price=Owned(33_819, 5, 0.1)))
    assert owned.usd_per_device_hour == pytest.approx(33_819 / (5 * 8760) + 0.7 * 1.58 * 0.1)
    assert owned.pue == 1.58  # owned hardware's PUE unless one is given
    rowpriced = calc.DeviceTable([dataclasses.replace(calc.catalog().get(H100), usd_per_device_hour=2.2)])
    b = budget(calc.job(params=7e9, price=None, table=rowpriced))
    assert b.usd_per_device_hour == 2.2 and b.price_label == "the device row's own price"


@pytest.mark.parametrize(("price", "needle"), [(-5.0, "must be >= 0"), (float("nan"), "finite"),
                                               ("7e9", "must be a number or PROVIDER:PLAN"),
                                               (True, "USD per device-hour")])
def test_bad_prices_are_refused(price, needle):
    with pytest.raises(calc.TrainingBudgetError, match=needle):
        budget(calc.job(params=7e9, price=price))


def test_goodput_divides_the_hours():
    plain = budget(calc.job(params=7e9, utilization=0.4))
    good = budget(calc.job(params=7e9, utilization=0.4, goodput=0.9))
    assert good.hours == pytest.approx(plain.hours / 0.9) and good.goodput_basis == "given"
    with pytest.raises(calc.TrainingBudgetError, match="goodput"):
        budget(calc.job(params=7e9, goodput=0.0))


def test_job_and_budget_are_frozen():
    b = budget(calc.job(params=7e9))
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.hours = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.job.model.params = 1.0  # type: ignore[misc]


def test_a_given_prior_wins_else_the_jobs_own():
    mixtral = calc.model_preset("Mixtral 8x7B")
    asked = calc.utilization_prior(H100, active_params=mixtral.params().active_with_embedding, devices=64, moe=True)
    job = calc.job(model=mixtral, devices=64, ep=8, utilization=asked)
    assert budget(job).prior is asked and asked.basis in budget(job).utilization_basis
    own = calc_prior.job_prior(H100, active_params=mixtral.params().active_with_embedding, devices=64, moe=True,
                               tokens=job.tokens)
    assert budget(job.with_(utilization="prior")).prior == own   # Mixtral: fewer active than total, MoE
    every = calc.utilization_prior()
    assert budget(job.with_(utilization=every)).prior is every



def _figures(b: calc.Budget) -> dict[str, object]:
    """Every figure of a Budget by name (a Span's three as name.low, ...; memory by part)."""
    out: dict[str, object] = {f"memory.{k}": v for k, v in b.memory.as_dict().items()}
    for name in ("flops", "params", "active_params", "usable_bytes", "fits", "headroom_bytes", "hours", "days",
                 "device_hours", "cost_usd", "energy_kwh", "utilization", "goodput", "usd_per_device_hour", "pue"):
        v = getattr(b, name)
        if isinstance(v, Span):
            out.update({f"{name}.low": v.low, f"{name}.expected": v.expected, f"{name}.high": v.high})
        else:
            out[name] = v
    out["dp"] = b.layout["dp"]
    return out


GROUPS = [(H100, "full", "adamw", "prior"), ("B200, BF16 tensor core, dense", "lora", "sgd", "given"),
          ("H200 SXM, FP8 tensor core, dense", "qlora", "adamw_8bit", "prior"),
          ("MI300X, BF16 matrix, dense", "full", "lion", "given"), (H100, "inference", "adamw", "narrowed")]


@pytest.mark.parametrize(("device", "method", "optimizer", "mode"), GROUPS)
def test_random_scalar_jobs_equal_one_array_call_element_by_element(device, method, optimizer, mode):
    """The scalar path (Python floats) and the array path (numpy) are one set of formulas: every
    figure of every job agrees, element by element, to 1e-12 relative (in practice bit for bit)."""
    rng = np.random.default_rng(len(device) + len(method))
    n = 24
    tp = rng.choice([1.0, 2.0, 4.0], n)
    cols = {"params": rng.uniform(1e8, 8e10, n), "tokens": rng.uniform(1e9, 1e13, n),
            "devices": tp * rng.choice([1.0, 3.0, 8.0, 64.0], n), "tp": tp,
            "zero_stage": rng.integers(0, 4, n).astype(float), "activations": rng.choice([0.0, 2e9, 7.5e9], n),
            "price": rng.uniform(0.0, 9.0, n), "pue": rng.uniform(1.0, 1.6, n)}
    if method in ("lora", "qlora"):
        cols["trainable"] = rng.choice([0.004, 0.02, 3e7], n)
    if mode == "given":
        cols["utilization"], cols["goodput"] = rng.uniform(0.05, 1.0, n), rng.uniform(0.5, 1.0, n)
    fixed = {"device": device, "method": method, "optimizer": optimizer}
    if mode == "narrowed":
        fixed["utilization"] = calc.utilization_prior(device, devices=64)
    elif mode == "prior":
        fixed["utilization"] = "prior"
    many = _figures(budget(calc.job(**fixed, **cols)))
    for i in range(n):
        one = _figures(budget(calc.job(**fixed, **{k: float(v[i]) for k, v in cols.items()})))
        assert one.keys() == many.keys()
        for name, value in one.items():
            got = np.broadcast_to(many[name], (n,))[i] if many[name] is not None else None
            assert (got is None) == (value is None), name
            if value is not None:
                assert isinstance(value, (float, bool)), (name, type(value))
                assert got == pytest.approx(value, rel=1e-12, abs=0.0), (name, i)


def test_a_budget_holds_every_field_once():
    b = budget(calc.job(params=7e9, utilization="prior", price=2.0))
    assert set(vars(b)) == {f.name for f in dataclasses.fields(calc.Budget)}
    assert dataclasses.replace(b, cost_usd=None).cost_usd is None and b.cost_usd is not None


SCALAR_JOBS = [calc.job(params=13e9, tokens=1e12, device=H100, devices=64, tp=2, zero_stage=3,
                   utilization="prior", price=2.5, pue=1.2),
               calc.job(params=7e9, tokens=2e11, device="B200, BF16 tensor core, dense", devices=8, method="lora",
                   trainable=0.02, optimizer="sgd", activations=3e9, utilization=0.4, goodput=0.9),
               calc.job(params=70e9, tokens=1e12, device="H200 SXM, FP8 tensor core, dense", devices=512.0,
                   pp=4, tp=8, zero_stage=1.0, utilization="prior:job")]


@pytest.mark.parametrize("job", SCALAR_JOBS)
def test_the_scalar_paths_caches_give_the_general_paths_figures(job):
    """budget()'s scalar pass (_plain) and its per-key caches (the job's prior terms, the layout's
    memory) give, bit for bit, what the general path gives: int activations take the general path."""
    budget_module._MEMORY.clear()
    utilization_module._JOB_TERMS.clear()
    first, again = _figures(budget(job)), _figures(budget(job))   # worked out, then looked up
    general = _figures(budget(job.with_(activations=int(job.training.activations))))
    assert budget_module._plain(job) is not None and budget_module._plain(job.with_(activations=0)) is None
    assert budget_module._MEMORY and (job.utilization == 0.4 or utilization_module._JOB_TERMS)
    for name, value in first.items():
        assert again[name] == value and general[name] == value and type(general[name]) is type(value), name
    assert budget(job).memory is budget(job).memory   # one frozen MemoryBreakdown per layout key


@pytest.mark.parametrize(("change", "needle"), [
    ({"tp": True}, "tensor_parallel must be a number, not a boolean"),
    ({"devices": 64.5}, "devices must be a whole number"),
    ({"zero_stage": True}, "zero_stage must be a number, not a boolean"),
    ({"zero_stage": 4}, "zero_stage must be 0, 1, 2 or 3"), ({"tokens": float("inf")}, "tokens"),
    ({"activations": -1.0}, "activations must be >= 0"), ({"method": "fine"}, "method must be one of"),
    ({"devices": 63}, "devices must be divisible"), ({"pue": 0.9}, "pue must be >= 1")])
def test_a_cached_question_does_not_let_a_bad_neighbour_through(change, needle):
    job = SCALAR_JOBS[0]
    budget(job)  # its prior terms and memory now cached
    with pytest.raises(calc.TrainingBudgetError, match=needle):
        budget(job.with_(**change))


def test_the_scalar_pass_keeps_canonicalising_names_and_the_sign_of_zero():
    job = SCALAR_JOBS[0]
    assert budget(job.with_(method=" Full", optimizer="AdamW")).memory == budget(job).memory
    assert np.copysign(1.0, budget(job.with_(activations=-0.0)).memory.activations) == -1.0
    assert np.copysign(1.0, budget(job).memory.activations) == 1.0


def test_every_field_of_a_budget_holds_its_own_figure():
    """budget() fills Budget by position: each field, by name, is the figure it names."""
    job = SCALAR_JOBS[0]
    b = budget(job)
    prior = calc_prior.job_prior(H100, active_params=13e9, devices=64, tokens=1e12)
    assert b.job is job and b.device == H100 and b.flops == 6 * 13e9 * 1e12
    assert b.params == 13e9 and b.active_params == 13e9 and b.prior == prior
    assert b.memory.total == calc.train_memory(13e9, zero_stage=3, devices=64, tensor_parallel=2).total
    assert b.layout == {"tp": 2, "pp": 1, "ep": 1, "cp": 1,
                        "dp": 32.0}
    assert b.usable_bytes == usable_bytes(H100) and b.headroom_bytes == b.usable_bytes - b.memory.total
    assert b.fits is True
    assert b.days.expected == b.hours.expected / 24 and b.device_hours.low == pytest.approx(b.hours.low * 64)
    assert b.cost_usd.high == pytest.approx(b.device_hours.high * 2.5)
    assert b.energy_kwh.expected == pytest.approx(b.device_hours.expected * 700 * 1.2 / 1000)
    assert b.utilization == Span(prior.low, prior.expected, prior.high) and "prior" in b.utilization_basis
    assert b.goodput == prior.goodput and "Llama 3" in b.goodput_basis
    assert (b.usd_per_device_hour, b.price_label, b.price_source, b.price_as_of, b.price_age_days, b.pue) == (
        2.5, "2.5 USD per device-hour (given)", "given", None, None, 1.2)


def test_a_teams_calibration_changes_the_step_budget_on_its_device_only():
    """A Job's cluster may carry a team's calibration (calc.calibrate_from_measured): at utilization
    "step" its factor and band apply on the device the team measured, and nowhere else."""
    from tests.calc.step.test_team import FP8_H100, _csv, _torchtitan

    cal = calc.calibrate_from_measured(_csv(_torchtitan()))
    base = calc.job(model="Llama 3.1 8B", device=FP8_H100, devices=64, tokens=1e11, utilization="step")
    plain, team = calc.budget(base), calc.budget(base.with_(calibration=cal))
    factor = cal.factors[FP8_H100]
    assert factor != 1.0
    assert (team.hours.expected > plain.hours.expected) == (factor < 1.0)
    assert "team calibration" in team.utilization_basis and "team calibration" not in plain.utilization_basis
    lo, hi = cal.band_for(FP8_H100)  # hours' high / low is the band's width times goodput's
    fast, slow = calc.STEP_RESIDUAL
    spread = (team.hours.high / team.hours.low) / (plain.hours.high / plain.hours.low)
    assert spread == pytest.approx((hi / lo) / (slow / fast), rel=1e-9)
    other = base.with_(device="A100 SXM 80GB, BF16 tensor core, dense", calibration=cal)
    assert calc.budget(other).hours == calc.budget(other.with_(calibration=None)).hours
