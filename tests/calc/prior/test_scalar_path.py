"""The scalar question's quick paths give what the general paths give:
the job's prior of one job equals its element of an array of jobs, bit for bit; its basis text
(cached by decades and by which figures lie beyond the runs) equals the text worked out afresh."""

from __future__ import annotations

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc.compose.budget import budget
from trainbudget.calc.prior import utilization as calc_prior, utilization as prior_module

H100 = "H100 SXM, BF16 tensor core, dense"
DEVICES = (H100, "A100 SXM 80GB, BF16 tensor core, dense", "B200, BF16 tensor core, dense", 312.0)
QUESTIONS = [(13e9, 64.0, 1e12), (7e9, 8.0, 2e11), (4.05e11, 16384.0, 1.5e13), (1e6, 1.0, 1e6), (3e12, 2e5, 1e9)]


@pytest.mark.parametrize("device", DEVICES)
def test_a_scalar_jobs_prior_is_its_element_of_the_array_bit_for_bit(device):
    p, n, tok = (np.array(col) for col in zip(*QUESTIONS, strict=True))
    many = calc_prior.job_prior(device, active_params=p, devices=n, moe=False, tokens=tok)
    for i, (p1, n1, t1) in enumerate(QUESTIONS):
        one = calc_prior.job_prior(device, active_params=p1, devices=n1, moe=False, tokens=t1)
        assert (one.low, one.expected, one.high) == (many.low[i], many.expected[i], many.high[i])
        assert type(one.expected) is float


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("question", QUESTIONS)
def test_the_cached_basis_is_the_basis_worked_out_afresh(device, question):
    p, n, tok = question
    prior_module.BASES.clear()
    fresh = calc_prior.job_prior(device, active_params=p * (1 + 1e-9), devices=n, moe=True, tokens=tok).basis
    again = calc_prior.job_prior(device, active_params=p * (1 + 2e-9), devices=n, moe=True, tokens=tok).basis
    zero_d = prior_module.job_basis(prior_module.device_families(device, None), device, np.float64(p * (1 + 1e-9)),
                                     np.float64(n), np.float64(1.0), np.float64(tok), calc_prior.coefficients())
    assert fresh == again == zero_d and "MoE" in fresh


def _beyond_by_loop(goodput: float, values: tuple[float, float, float]) -> str:
    spans = prior_module.run_spans(goodput)
    names = {"params": prior_module.COUNT_SIZES, "devices": ((1e3, "k"),), "tokens/param": ((1e3, "k"),)}
    out = [f"{prior_module.scaled_count(lo, names[k], '.2g')}-{prior_module.scaled_count(hi, names[k], '.2g')} {k}"
           for (k, (lo, hi)), v in zip(spans.items(), values, strict=True) if not lo * 0.999 <= v <= hi * 1.001]
    return f" (extrapolated: the runs span {', '.join(out)})" if out else ""


def test_beyond_says_what_its_loop_says_at_the_edges():
    g = calc_prior.GOODPUT
    (p0, p1), (d0, d1), (t0, t1) = prior_module.run_spans(g).values()
    for values in [(p0, d0, t0), (p1, d1, t1), (p0 * 0.998, d0, t0), (p1 * 1.002, d1 * 1.002, t0 * 0.5),
                   (13e9, 64.0, 76.9), (1e6, 1.0, 1e6), (p0 * 0.999, d1 * 1.001, t1)]:
        assert prior_module.beyond_words(g, *values) == _beyond_by_loop(g, values), values


@pytest.mark.parametrize("active", [None, 0.3])  # dense, and a mixture of experts (its prior's MoE term)
@pytest.mark.parametrize("device", [H100, "TPU v5p, BF16, dense", "H100 SXM, FP8 tensor core, dense",
                                    "M3 Ultra, PyTorch MPS bf16 matmul (measured)"])
def test_scalar_budgets_equal_their_elements_of_an_array_bit_for_bit(active, device):
    p, n, tok = (np.array(col) for col in zip(*QUESTIONS, strict=True))
    fixed = {"device": device, "utilization": "prior", "price": 2.5, "pue": 1.2}
    many = budget(calc.job(params=p, devices=n, tokens=tok, active_params=None if active is None else p * active,
                      **fixed))
    for i, (p1, n1, t1) in enumerate(QUESTIONS):
        one = budget(calc.job(params=p1, devices=n1, tokens=t1, active_params=None if active is None else p1 * active,
                         **fixed))
        for name in ("hours", "days", "device_hours", "cost_usd", "energy_kwh", "utilization"):
            if getattr(many, name) is None:  # a row with no watts
                assert getattr(one, name) is None, name
                continue
            assert tuple(getattr(one, name)) == tuple(x[i] for x in getattr(many, name)), (name, i)
        assert one.memory.total == many.memory.total[i] and one.flops == many.flops[i]
