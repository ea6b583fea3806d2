"""Properties that must hold for any input (hypothesis)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

from trainbudget import calc

params = st.floats(1e6, 1e13)
tokens = st.floats(1e6, 1e14)
util = st.floats(0.01, 1.0)
count = st.integers(1, 4096)
H100 = "H100 SXM, BF16 tensor core, dense"


@given(params, tokens, util, count, st.integers(1, 64))
def test_hours_fall_as_devices_rise(n, d, u, k, extra):
    assert calc.train_hours(n, d, H100, utilization=u, devices=k + extra) < calc.train_hours(
        n, d, H100, utilization=u, devices=k)


@given(params, tokens, util, st.floats(0.001, 0.99), count)
def test_hours_fall_as_utilization_rises(n, d, u, step, k):
    higher = min(1.0, u + step)
    if higher > u * (1 + 1e-12):  # a step of an ulp or two can round to the same hours
        assert calc.train_hours(n, d, H100, utilization=higher, devices=k) < calc.train_hours(
            n, d, H100, utilization=u, devices=k)


@given(params, tokens, st.floats(1.0, 1000.0))
def test_flops_linear_in_tokens(n, d, scale):
    a = calc.train_flops(n, d * scale)
    b = calc.train_flops(n, d) * scale
    assert abs(a - b) <= 1e-9 * b


@given(params, st.integers(1, 1024), st.sampled_from(calc.METHODS), st.sampled_from(calc.OPTIMIZERS),
       st.floats(0, 1e11))
def test_higher_zero_stage_never_raises_bytes(n, k, method, optimizer, act):
    per_stage = [calc.train_bytes(n, method=method, optimizer=optimizer, zero_stage=s, devices=k,
                                  activations=act) for s in range(4)]
    assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(per_stage))


# The scalar fast path (plain Python floats) and the array path (numpy) must agree exactly:
# same results, same error messages (the array's element index aside). numpy warns about the
# overflows that then raise ResultOverflowError; those warnings are expected here.
pytestmark_overflow = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
H100_RATE = 989.5
anything = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 2**53),
                     st.sampled_from([0.0, -0.0, 1.0, 1.0000001, 0.5, 2.5, 1e308, 5e-324, 3.0, 4.0]))


def _exact(v) -> bool:
    """A number float64 holds exactly (the same input on both paths)."""
    return isinstance(v, float) or (isinstance(v, int) and abs(v) < 2**1023 and float(v) == v)


def _both(fn, *args, **kwargs):
    """(result or message) of `fn` for scalar args, for 0-d numpy args and for 1-element arrays."""
    def run(convert):
        try:
            r = fn(*map(convert, args), **{k: convert(v) for k, v in kwargs.items()})
            return "ok", (r.total if isinstance(r, calc.MemoryBreakdown) else r)
        except calc.TrainingBudgetError as e:
            return "error", str(e)
    scalar = run(lambda v: float(v) if _exact(v) else v)  # the same float on every path
    zero_d = run(lambda v: np.float64(v) if _exact(v) else v)
    one = run(lambda v: np.array([v], dtype=np.float64) if _exact(v) else v)
    return scalar, zero_d, one


def _agree(scalar, zero_d, one):
    assert scalar == zero_d
    if scalar[0] == "ok":
        assert one[0] == "ok" and one[1].tolist() == [scalar[1]]
    else:
        assert one[0] == "error"
        assert one[1].replace("[0]", "") == scalar[1] or ("[0]" not in one[1] and one[1] == scalar[1])


@pytestmark_overflow
@given(anything, anything, anything, anything)
def test_train_hours_scalar_and_array_paths_agree(n, d, u, k):
    _agree(*_both(lambda n, d, u, k: calc.train_hours(n, d, H100_RATE, utilization=u, devices=k), n, d, u, k))


@pytestmark_overflow
@given(anything, anything, anything)
def test_train_flops_scalar_and_array_paths_agree(n, d, layers):
    _agree(*_both(lambda n, d, L: calc.train_flops(n, d, n_layers=L, d_model=4096, seq_len=2048), n, d, layers))


@pytestmark_overflow
@given(anything, st.sampled_from([0, 1, 2, 3, 4, 1.5]), anything, anything, st.sampled_from(calc.METHODS))
def test_train_memory_scalar_and_array_paths_agree(n, stage, k, act, method):
    _agree(*_both(lambda n, s, k, a: calc.train_memory(n, method=method, zero_stage=s, devices=k, activations=a),
                  n, stage, k, act))


@pytestmark_overflow
@given(anything, anything, anything, anything, st.sampled_from(["none", "selective", "full"]), st.booleans())
def test_activation_bytes_scalar_and_array_paths_agree(L, h, s, t, recompute, sp):
    _agree(*_both(lambda L, h, s, t: calc.activation_bytes(L, h, 32, s, 1, recompute=recompute, tensor_parallel=t,
                                                           sequence_parallel=sp), L, h, s, t))


@pytestmark_overflow
@given(anything, anything)
def test_energy_and_cost_scalar_and_array_paths_agree(pue, price):
    _agree(*_both(lambda p: calc.train_energy_kwh(7e9, 1e12, "H100 SXM, BF16 tensor core, dense", pue=p), pue))
    _agree(*_both(lambda p: calc.train_cost(7e9, 1e12, H100_RATE, usd_per_device_hour=p), price))


layout_size = st.sampled_from([1, 2, 4, 8, 3, 0, -2, 1.5])


@pytestmark_overflow
@given(anything, st.sampled_from([0, 1, 2, 3]), st.integers(1, 64), layout_size, layout_size, layout_size,
       layout_size, st.sampled_from([0.0, 0.3, 0.9, 1.5]), st.sampled_from([0.0, 0.01, 0.6]), st.booleans(),
       st.sampled_from(calc.METHODS))
def test_train_memory_layouts_scalar_and_array_paths_agree(n, stage, k, t, p, c, e, expert, first, buffers, method):
    """The layout arguments (tensor, pipeline, context, expert parallel; expert and first-stage
    parameters as shares of `n`; ZeRO-3 buffers) take the same path rules: scalar and array agree."""
    def memory(n, s, k, t, p, c, e):
        size = n if isinstance(n, np.ndarray) else float(n) if _exact(n) else n
        shares = ({"expert_params": expert * size, "stage_params": first * size}
                  if isinstance(size, float | np.ndarray) else {})
        return calc.train_memory(n, method=method, zero_stage=s, devices=k, tensor_parallel=t,
                                 pipeline_parallel=p, context_parallel=c, expert_parallel=e,
                                 zero3_buffers=buffers, **shares)
    _agree(*_both(memory, n, stage, k, t, p, c, e))


@pytestmark_overflow
@given(st.sampled_from([1e8, 7e9, 7e10, 4e11, 2e12]), st.sampled_from([0, 1, 2, 3]), layout_size, layout_size,
       st.sampled_from([0.0, 1e9, 5e10, 1e12]), st.sampled_from(calc.METHODS))
def test_devices_needed_scalar_and_array_paths_agree(n, stage, t, e, act, method):
    _agree(*_both(lambda n, s, t, e, a: calc.devices_needed(n, "H100 SXM, BF16 tensor core, dense", method=method,
                                                           zero_stage=s, tensor_parallel=t, expert_parallel=e,
                                                           activations=a), n, stage, t, e, act))
