"""The step model against published figures it must reproduce, and its refusals."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from trainbudget import calc
from trainbudget.calc import (
    TrainingBudgetError,
    step as S,  # noqa: N812
)
from trainbudget.calc.step import terms

A100 = "A100 SXM 80GB, BF16 tensor core, dense"
GPT175 = S.Shape(params_active=1.75e11, n_layers=96, d_model=12288, vocab=51200)


def _korthikanti(recompute: str) -> float:
    """GPT-3 175B on 64 A100, TP8 PP8, batch 64 x 2048 (Korthikanti et al. 2022 Table 5's setup)."""
    lay = S.Layout(devices=64, seq_len=2048, global_batch_tokens=64 * 2048, tp=8, pp=8, vpp=3, zero_stage=0,
                   recompute=recompute)
    return float(S.step_time(GPT175, lay, S.hardware(A100)).step_seconds)


def test_korthikanti_full_vs_selective_recompute():
    """Measured 18.13 s (full) and 13.75 s (selective + sequence parallel): each within 10%, and the
    ratio (1.32) within 10%."""
    full, sel = _korthikanti("full"), _korthikanti("selective")
    assert full == pytest.approx(18.13, rel=0.10)
    assert sel == pytest.approx(13.75, rel=0.10)
    assert full / sel == pytest.approx(18.13 / 13.75, rel=0.10)


def test_fits_recompute_names_are_timed_as_the_step_it_runs():
    """fit's "op" runs as selective and "offload" as full (calc.physics.recompute.TIMED_AS), in any case;
    a name outside them is refused with all five listed."""
    assert _korthikanti("op") == _korthikanti("selective") < _korthikanti("full") == _korthikanti("Offload")
    with pytest.raises(TrainingBudgetError, match=re.escape("none, selective, op, full, offload (got 'cpu')")):
        _korthikanti("cpu")


def test_bubble_formula():
    assert terms.bubble_fraction(8.0, 1.0, 8.0) == pytest.approx(7 / 15)
    assert terms.bubble_fraction(1.0, 1.0, 3.0) == 0.0
    assert terms.bubble_fraction(4.0, 2.0, 8.0) == pytest.approx(3 / 19)


def test_interleaving_gains():
    h = S.hardware("H100 SXM, BF16 tensor core, dense")
    sh = S.Shape(params_active=4.06e11, n_layers=126, d_model=16384, kv_dim=1024, vocab=128256)

    def tps(vpp: int) -> float:
        lay = S.Layout(devices=512, seq_len=8192, global_batch_tokens=64 * 8192, tp=8, pp=8, vpp=vpp,
                       zero_stage=3, recompute="full")
        return float(S.step_time(sh, lay, h).tokens_per_second_per_device)

    assert tps(2) > 1.1 * tps(1)


def test_fp8_faster_than_bf16_on_the_same_layout():
    sh = S.Shape(params_active=8.03e9, n_layers=32, d_model=4096, kv_dim=1024, vocab=128256)
    lay = S.Layout(devices=8, seq_len=8192, global_batch_tokens=16 * 8192, zero_stage=3, micro_batch=2)
    bf16 = S.step_time(sh, lay, S.hardware("H100 SXM, BF16 tensor core, dense"))
    fp8 = S.step_time(sh, lay, S.hardware("H100 SXM, FP8 tensor core, dense"))
    assert fp8.step_seconds < bf16.step_seconds
    assert 0.5 < fp8.low_precision_share < 1.0 and bf16.low_precision_share == 0.0


def test_a_row_wider_than_16_bit_runs_its_matmuls_at_its_own_rate():
    """An FP32 or TF32 row trains at that precision: its compute is the BF16 row's times the ratio of
    the peaks, less the memory-bound part that does not scale (the MFU basis stays the 16-bit row),
    and a measured FP32 row is its own basis, not the same machine's measured BF16 row from another
    framework."""
    sh = S.Shape(params_active=1.3e9, n_layers=24, d_model=2048, vocab=50304)
    lay = S.Layout(devices=1, seq_len=2048, global_batch_tokens=8 * 2048, zero_stage=0)
    bf16 = S.step_time(sh, lay, S.hardware("H100 SXM, BF16 tensor core, dense"))
    for row in ("H100 SXM, FP32", "H100 SXM, TF32 tensor core, dense"):
        hw = S.hardware(row)
        wide = S.step_time(sh, lay, hw)
        matmul = bf16.breakdown["compute"] * hw.tflops_16bit / hw.tflops
        assert 0.7 * matmul < wide.breakdown["compute"] < matmul, row
        assert wide.mfu_16bit == pytest.approx(wide.mfu * hw.tflops / hw.tflops_16bit), row
    mlx = S.hardware("M3 Ultra, MLX fp32 matmul (measured)")
    assert mlx.tflops_16bit == mlx.tflops == calc.catalog().get(mlx.name).tflops
    assert calc.prior_device(mlx.name) == mlx.name


def test_scaling_out_at_a_fixed_model_and_batch_lowers_mfu():
    sh = S.Shape(params_active=7.06e10, n_layers=80, d_model=8192, kv_dim=1024, vocab=128256)
    h = S.hardware("H100 SXM, BF16 tensor core, dense")
    devices = np.array([64.0, 256.0, 1024.0])
    lay = S.Layout(devices=devices, seq_len=8192, global_batch_tokens=1024 * 8192, tp=8, zero_stage=3)
    mfu = S.step_time(sh, lay, h).mfu
    assert np.all(np.diff(mfu) <= 0) and mfu[-1] < mfu[0]  # flat while DP traffic hides, then falls


def test_measured_file_within_the_reached_goal():
    """In-sample with the shipped constants on the fit rows: median |error| <= 10% and >= 70% within
    15% (the thresholds reached, bench/bench_steptime.py; leave-one-out there)."""
    m = S.load_measured()
    fit = m.fit_mask
    err = np.abs(m.predict(S.CONSTANTS, fit) / m.measured[fit] - 1)
    assert np.median(err) <= 0.10
    assert np.mean(err <= 0.15) >= 0.70


def test_long_context_attention_slows_the_step_as_measured():
    """torchtitan (benchmarks/llama3_h100_202412_torchtitan.md Table 2): Llama 3.1 8B on 8 H100 at
    500 W, FP8, full recompute: 3,890 tokens/s per GPU at 32K (FSDP 8) and 548 at 262K (CP 8), 7.1x;
    within 25% of that ratio (attention's FLOPs grow with s and run at the flash kernels' rate)."""
    sh = S.Shape(params_active=8.03e9, n_layers=32, d_model=4096, kv_dim=1024, vocab=128256)
    h = S.hardware("H100 SXM 96GB 500W, FP8 tensor core, dense")
    short = S.Layout(devices=8, seq_len=32768, global_batch_tokens=8 * 32768, zero_stage=3, recompute="full")
    long = S.Layout(devices=8, seq_len=262144, global_batch_tokens=262144, cp=8, zero_stage=3, recompute="full")
    ratio = float(S.step_time(sh, short, h).tokens_per_second_per_device
                  / S.step_time(sh, long, h).tokens_per_second_per_device)
    assert ratio == pytest.approx(3890 / 548, rel=0.25)


def test_topology_comes_from_the_catalog_or_a_stated_fallback():
    h = S.hardware("GB200 (per GPU), BF16 tensor core, dense")
    assert h.scale_up_domain == 72 and "catalog" in h.basis
    from trainbudget.calc import Device
    odd = Device("Lab box", 100.0, memory_tbps=1.0, source="bench")
    assert "assumed" in S.hardware(odd).basis


def test_the_pipeline_runs_at_its_busiest_stages_pace():
    """120 layers on 16 stages put 8 on the busiest (ceil(120/16)), as 128 layers do: the same compute
    a step, where one stage of each differs by its layers."""
    def compute(layers: int, pp: int) -> float:
        sh = S.Shape(params_active=layers * 1e9, n_layers=layers, d_model=8192, kv_dim=1024, vocab=0)
        lay = S.Layout(devices=16 * 8, seq_len=4096, global_batch_tokens=512 * 4096, pp=pp, zero_stage=1)
        return float(S.step_time(sh, lay, S.hardware(A100)).breakdown["compute"])
    assert compute(120, 16) == pytest.approx(compute(128, 16), rel=1e-12)
    assert compute(120, 1) < compute(128, 1)
    assert compute(128, 16) == pytest.approx(compute(128, 1), rel=1e-9)  # 16 divides 128: a device's even share


def test_a_torus_sends_tensor_and_context_parallel_over_one_axis():
    """On TPU v6e's 2D torus a TP group shorter than the 16-chip axis sends over one ICI link each way
    (scale_up_axis_GBps 180 of the chip's 800, jax-ml/scaling-book sharding.md); FSDP's gathers run
    over the whole torus as before; NVLink, a switch, gives a TP group all of it."""
    v6e = S.hardware("TPU v6e (Trillium), BF16, dense")
    assert (v6e.scale_up_GBps, v6e.scale_up_axis_GBps) == (800.0, 180.0)
    switched = replace(v6e, scale_up_axis_GBps=None)
    sh = S.Shape(params_active=70.6e9, n_layers=80, d_model=8192, kv_dim=1024, vocab=128256)
    lay = S.Layout(devices=256, seq_len=8192, global_batch_tokens=256 * 8192, tp=4, cp=2, zero_stage=3)
    torus, switch = S.step_time(sh, lay, v6e).breakdown, S.step_time(sh, lay, switched).breakdown
    assert float(torus["tp"]) == pytest.approx(float(switch["tp"]) * 800 / 180, rel=1e-12)
    assert float(torus["dp_exposed"]) == float(switch["dp_exposed"])
    h100 = S.hardware(A100)
    assert h100.scale_up_axis_GBps == h100.scale_up_GBps  # blank in the catalog: a switched fabric
    own = S.hardware(calc.Device("Lab torus", 100.0, memory_tbps=1.0, source="bench"),
                     record={"scale_up_GBps": "400", "scale_up_domain": "64", "scale_out_Gbps": "100",
                             "scale_up_axis_GBps": "100"})
    assert own.scale_up_axis_GBps == 100.0 and "row itself" in own.basis


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"tp": 3}, "devices"), ({"tp": 0}, "tp"), ({"recompute": "some"}, "recompute"),
    ({"vpp": 2}, "vpp"), ({"zero_stage": 4}, "zero_stage"), ({"global_batch_tokens": 4 * 2048}, "global_batch_tokens"),
    ({"ep": 3}, "ep"),
])
def test_bad_layouts_are_refused_naming_the_field(kwargs, field):
    base = {"devices": 64, "seq_len": 2048, "global_batch_tokens": 64 * 2048}
    with pytest.raises(TrainingBudgetError, match=field):
        S.Layout(**{**base, **kwargs})


def test_run_hours_orders_its_range_and_scales_with_tokens():
    sh = S.Shape(params_active=7.06e10, n_layers=80, d_model=8192, kv_dim=1024, vocab=128256)
    lay = S.Layout(devices=1024, seq_len=8192, global_batch_tokens=2048 * 8192, tp=8, pp=4, vpp=5)
    hw = S.hardware("H100 SXM, BF16 tensor core, dense")
    one, two = S.run_hours(sh, lay, hw, 1e12), S.run_hours(sh, lay, hw, 2e12)
    assert one.low < one.expected < one.high and one.high / one.low < 2.2
    assert two.expected == pytest.approx(2 * one.expected)
    g = S.fit_goodput()
    assert 0.5 < g.low <= g.expected <= g.high <= 1.0 and len(g.runs) >= 2 and "runs.csv" in g.basis
    step = float(S.step_time(sh, lay, hw).step_seconds)
    assert one.expected == pytest.approx(1e12 / (2048 * 8192) * step / g.expected / 3600)
    with pytest.raises(TrainingBudgetError, match="tokens"):
        S.run_hours(sh, lay, hw, -1.0)


def test_context_parallel_costs_more_as_its_chunks_shrink():
    """The same job (Llama 3.1 8B, 8 H100 of one NVLink domain, 32K sequences) at CP 2 and CP 8: the
    attention kernels run on 16K- then 4K-token tiles, at a lower rate (FlashAttention-3's curve), so
    the CP 8 step loses more to CP 2 than it would at one flat attention rate; its ring send hides
    behind each step's block of attention on NVLink."""
    sh = S.Shape(params_active=8.03e9, n_layers=32, d_model=4096, kv_dim=1024, vocab=128256)
    h = S.hardware("H100 SXM, BF16 tensor core, dense")

    def steps(k: S.Constants) -> tuple[S.Step, S.Step]:
        two, eight = (S.step_time(sh, S.Layout(devices=8, seq_len=32768, global_batch_tokens=8 * 32768, cp=cp), h, k)
                      for cp in (2, 8))
        return two, eight
    two, eight = steps(S.CONSTANTS)
    flat_two, flat_eight = steps(replace(S.CONSTANTS, attention_tile=0.0))
    assert eight.step_seconds / two.step_seconds > flat_eight.step_seconds / flat_two.step_seconds
    rate = terms.attention_rate(1.0, np.array([16384.0, 4096.0]), S.CONSTANTS.attention_tile)
    assert rate[1] < rate[0] < 1.0
    assert float(two.breakdown["cp"]) == 0.0 and float(eight.breakdown["cp"]) == 0.0  # NVLink: hidden


def test_the_ring_send_shows_only_beyond_each_steps_attention():
    """terms.cp_seconds by hand: 1,000 tokens, one layer, kv_dim 1,000, no recompute: 3 passes x K and
    V x 2 bytes = 12 MB a ring step, 10 ms at 1.2 GB/s. Behind 80 ms of attention over CP 4 (20 ms a
    step) nothing shows; behind 20 ms (5 ms a step) 3 steps x 5 ms do; TP 2 halves the send."""
    assert terms.cp_seconds(1000.0, 1.0, 1000.0, 1.0, 4.0, 0.0, 0.080, 1.2e9) == 0.0
    assert terms.cp_seconds(1000.0, 1.0, 1000.0, 1.0, 4.0, 0.0, 0.020, 1.2e9) == pytest.approx(0.015)
    assert terms.cp_seconds(1000.0, 1.0, 1000.0, 2.0, 4.0, 0.0, 0.0, 1.2e9) == pytest.approx(3 * 0.005)


def test_context_parallel_over_the_network_exposes_its_ring_send():
    """Llama 3.1 8B at 4K on 32 devices, TP 4 x CP 8 (512-token chunks): TP x CP spans four 8-GPU HGX
    domains, so the ring crosses the 400 Gb/s NIC and its send outlasts each step's attention; inside
    a GB200 NVL72 domain the same layout hides it."""
    sh = S.Shape(params_active=8.03e9, n_layers=32, d_model=4096, kv_dim=1024, vocab=128256)
    lay = S.Layout(devices=32, seq_len=4096, global_batch_tokens=64 * 4096, tp=4, cp=8, recompute="none")
    hgx = S.step_time(sh, lay, S.hardware("H100 SXM, BF16 tensor core, dense"))
    nvl = S.step_time(sh, lay, S.hardware("GB200 (per GPU), BF16 tensor core, dense"))
    assert float(hgx.breakdown["cp"]) > 0.0 and float(nvl.breakdown["cp"]) == 0.0


def test_a_measured_row_with_more_cells_than_the_header_is_refused():
    """An unquoted comma in a note would shift the cells after it (the packaged file once held one):
    the loader names the row, not a silently wrong as_of."""
    from importlib import resources

    text = resources.files("trainbudget.calc").joinpath("data/steptime_measured.csv").read_text("utf-8")
    lines = text.splitlines()
    assert len(calc.load_measured_steps(text).measured) == len(lines) - 1  # the packaged file loads
    bad = "\n".join([lines[0], lines[1] + ",a stray cell", *lines[2:]])
    with pytest.raises(calc.TrainingBudgetError, match=r"row 2: .* cells where the header names"):
        calc.load_measured_steps(bad)


def test_routed_experts_are_reduced_over_the_expert_data_parallel_group():
    """Megatron-Core reduces a routed expert's gradients over the ranks that hold that expert (data x
    context parallel / EP), not over all of data parallel: with EP = DP every expert has one holder, so
    only the dense weights move, and Adam's states spread over every device (ZeRO-1)."""
    h = S.hardware("H100 SXM, BF16 tensor core, dense")
    moe = S.Shape(params_active=3.7e10, params_total=6.71e11, params_expert=6.539e11, n_layers=61, d_model=7168,
                  attn_dim=20480, kv_dim=576, vocab=129280, top_k=8)
    lay = S.Layout(devices=256, seq_len=4096, global_batch_tokens=2048 * 4096, pp=4, ep=64, zero_stage=1)
    no_overlap = replace(S.CONSTANTS, overlap=0.0)
    st = S.step_time(moe, lay, h, no_overlap)
    share = 16 * 4 / 61  # the busiest of the 4 stages holds 16 of the 61 layers, and their weights
    dense = (6.71e11 - 6.539e11) / 4 * share
    inside = 8.0  # DP ranks per 8-GPU node at TP1
    want = terms.dp_seconds(dense, 64.0, 1.0, inside, h.scale_up_GBps * 0.5e9, h.scale_out_Gbps * 0.125e9)
    assert float(st.breakdown["dp_exposed"]) == pytest.approx(want, rel=1e-12)
    assert float(st.breakdown["optimizer"]) == pytest.approx(6.71e11 * share / 256 * 32 / (h.memory_tbps * 1e12),
                                                             rel=1e-12)
    # every active parameter taken as dense (the default split) moves more, over the whole DP group
    coarse = S.step_time(replace(moe, params_expert=None), lay, h, no_overlap)
    assert float(coarse.breakdown["dp_exposed"]) > 1.5 * want


def test_expert_params_cannot_exceed_the_total():
    with pytest.raises(TrainingBudgetError, match="params_expert"):
        S.Shape(params_active=1e9, params_total=2e9, params_expert=3e9, n_layers=4, d_model=512)


def test_unfused_attention_moves_its_scores_through_memory():
    """flash_attention False: each head's s x s scores through HBM, 11 two-byte accesses a score (4 forward,
    7 backward) and 4 more where the core is recomputed; slower than the fused kernel, more so at a longer
    sequence, and the stored scores counted in memory without recompute."""
    tokens, layers, heads, s, bw = 4096.0, 32.0, 32.0, 8192.0, 3.35e12
    assert terms.unfused_attention_seconds(tokens, layers, heads, s, 0.0, bw) == tokens * layers * heads * s * 22 / bw
    assert terms.unfused_attention_seconds(tokens, layers, heads, s, 1.0, bw) == tokens * layers * heads * s * 30 / bw
    sh, hw = S.Shape.from_preset("Llama 3.1 8B"), S.hardware("H100 SXM, BF16 tensor core, dense")
    slower = []
    for seq in (2048, 8192):
        steps = [S.step_time(sh, S.Layout(devices=8, seq_len=seq, global_batch_tokens=64 * 8192, zero_stage=3,
                                          flash_attention=f), hw).step_seconds for f in (True, False)]
        slower.append(steps[1] / steps[0])
    assert 1.0 < slower[0] < slower[1]
    held = [calc.budget(calc.job(model=calc.model_preset("Llama 3.1 8B"), device="H100 SXM, BF16 tensor core, dense",
                                 devices=8, zero_stage=3, utilization="step", seq_len=8192, recompute="none",
                                 global_batch_tokens=64 * 8192, flash_attention=f)).memory.activations
            for f in (True, False)]
    scores = 2 * 32 * 8192**2 * 32  # softmax output, 2 bytes a score, every layer of the one stage
    assert held[1] - held[0] == pytest.approx(scores, rel=1e-9)


def test_unfused_attention_needs_the_head_count_and_a_flag():
    sh = S.Shape(params_active=8e9, n_layers=32, d_model=4096)
    lay = S.Layout(devices=8, seq_len=4096, global_batch_tokens=64 * 4096, flash_attention=False)
    with pytest.raises(TrainingBudgetError, match="n_heads"):
        S.step_time(sh, lay, S.hardware("H100 SXM, BF16 tensor core, dense"))
    with pytest.raises(TrainingBudgetError, match="flash_attention must be True or False"):
        S.Layout(devices=8, seq_len=4096, global_batch_tokens=64 * 4096, flash_attention="perhaps")
    with pytest.raises(TrainingBudgetError, match="flash_attention must be True or False"):
        S.Layout(devices=8, seq_len=4096, global_batch_tokens=64 * 4096, flash_attention=np.array([1, 2]))


@pytest.mark.parametrize(("device", "seq_len"), [("H100 SXM, BF16 tensor core, dense", 256),
                                                 ("H100 SXM, BF16 tensor core, dense", 512),
                                                 ("H100 SXM, TF32 tensor core, dense", 8192), ("H100 SXM, FP32", 8192)])
def test_unfused_attention_is_never_the_faster(device, seq_len):
    """The unfused path does the fused kernel's math and moves its scores besides, on every row and length
    (a short sequence, a row whose matmuls are slow): never faster, MFU never above 1."""
    sh, hw = S.Shape.from_preset("Llama 3.1 8B"), S.hardware(device)
    lay = {"devices": 8, "seq_len": seq_len, "global_batch_tokens": 512 * 8192}
    fused, unfused = (S.step_time(sh, S.Layout(**lay, flash_attention=f), hw) for f in (True, False))
    assert unfused.step_seconds > fused.step_seconds
    long = S.step_time(sh, S.Layout(devices=8, seq_len=262144, global_batch_tokens=8 * 262144,
                                    recompute="none", flash_attention=False), hw)
    assert long.mfu <= 1.0


def test_flash_attention_reads_one_rule_scalar_or_array():
    base = {"devices": 8, "seq_len": 8192, "global_batch_tokens": 512 * 8192}
    for fused, unfused in ((True, False), (1, 0), ("true", "no")):
        assert S.Layout(**base, flash_attention=fused).flash_attention is True
        assert S.Layout(**base, flash_attention=unfused).flash_attention is False
    assert S.Layout(**base, flash_attention=np.array([1, 0])).flash_attention.tolist() == [True, False]
    with pytest.raises(TrainingBudgetError, match="n_heads"):
        S.Shape(params_active=8e9, n_layers=32, d_model=4096, n_heads=1.5)


def test_an_array_of_flags_is_timed_and_held_flag_by_flag():
    """calc.budget of a job whose flash_attention is an array: each element the job with that flag."""
    kw = {"model": calc.model_preset("Llama 3.1 8B"), "device": "H100 SXM, BF16 tensor core, dense", "devices": 16,
          "seq_len": 8192, "recompute": "none", "utilization": "step"}
    both = calc.budget(calc.job(**kw, flash_attention=np.array([True, False])))
    for i, f in enumerate((True, False)):
        one = calc.budget(calc.job(**kw, flash_attention=f))
        assert both.step.step_seconds[i] == pytest.approx(one.step.step_seconds, rel=1e-12)
        assert both.memory.activations[i] == pytest.approx(one.memory.activations, rel=1e-12)


def test_context_parallel_needs_fused_attention():
    """No unfused backend runs CP (Transformer Engine turns UnfusedDotProductAttention off under it):
    the layout is refused naming cp, and fit's search keeps CP at 1 without flash attention."""
    base = {"devices": 16, "seq_len": 8192, "global_batch_tokens": 64 * 8192}
    with pytest.raises(TrainingBudgetError, match="cp must be 1 with flash_attention False") as e:
        S.Layout(**base, cp=2, flash_attention=False)
    assert e.value.field == "cp"
    with pytest.raises(TrainingBudgetError, match=r"got cp=4\)"):
        S.Layout(**base, cp=np.array([1, 4]), flash_attention=np.array([True, False]))
    assert S.Layout(**base, cp=np.array([1, 4]), flash_attention=np.array([False, True])).cp.tolist() == [1, 4]
    preset = calc.model_preset("Llama 3.1 8B")
    fused = calc.fit_layouts(preset, "H100 SXM, BF16 tensor core, dense", 64, seq_len=32768)
    unfused = calc.fit_layouts(preset, "H100 SXM, BF16 tensor core, dense", 64, seq_len=32768, flash_attention=False)
    assert fused.cp.max() > 1 and unfused.cp.size and unfused.cp.max() == 1
    with pytest.raises(TrainingBudgetError, match="context_parallel must be 1 with flash_attention False"):
        calc.fit_layouts(preset, "H100 SXM, BF16 tensor core, dense", 64, context_parallel=2, flash_attention=False)


def _limits(sh: S.Shape, **layout) -> tuple[str, ...]:
    return S.step_time(sh, S.Layout(**layout), S.hardware("H100 SXM, BF16 tensor core, dense")).limits


def test_limits_say_what_bounds_the_layout():
    """The step's words for its layout: TP past the 8-GPU NVLink domain, EP over the network, unfused
    attention, a batch that is not whole micro-batches per data-parallel rank (Megatron's
    num_microbatches calculator asserts that it is), a communication-bound rank of one sequence; and
    none of them on a plain layout that has none."""
    llama8 = S.Shape(params_active=8.03e9, n_layers=32, d_model=4096, kv_dim=1024, vocab=128256, n_heads=32)
    moe = S.Shape(params_active=1.29e10, params_total=4.67e10, n_layers=32, d_model=4096, kv_dim=1024,
                  vocab=32000, top_k=2, params_expert=4.51e10)
    plain = dict(devices=64, seq_len=8192, global_batch_tokens=512 * 8192, tp=2)
    assert _limits(llama8, **plain) == ()
    assert "TP 16 spans 2 scale-up domains of 8" in _limits(llama8, **{**plain, "tp": 16})
    assert "EP 16 crosses the scale-out network (scale-up domain 8)" in _limits(moe, **{**plain, "tp": 1, "ep": 16})
    assert "attention unfused: its scores through memory" in _limits(llama8, **plain, flash_attention=False)
    uneven = _limits(llama8, **{**plain, "global_batch_tokens": 100 * 8192})  # 100 sequences over 32 ranks
    assert "the batch is 3.125 micro-batches of 1 per data-parallel rank, not a whole number" in " ".join(uneven)
    assert not any("micro-batches" in w for w in _limits(llama8, **{**plain, "global_batch_tokens": 96 * 8192}))
    lone = _limits(S.Shape(params_active=7e10, n_layers=80, d_model=8192, kv_dim=1024, vocab=128256),
                   devices=1024, seq_len=2048, global_batch_tokens=1024 * 2048, zero_stage=3)
    assert any(w.startswith("the batch gives each data-parallel rank 1 sequence: communication-bound") for w in lone)
