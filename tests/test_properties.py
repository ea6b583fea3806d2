"""Properties that must hold for any input (hypothesis)."""

import itertools

from hypothesis import given
from hypothesis import strategies as st

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
    if higher > u:
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
