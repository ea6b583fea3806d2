"""Step-time model against the packaged measured layouts: per row, LOO, per source, vs Calculon, timing.

Run: .venv/bin/python bench/bench_steptime.py [--sweeps N]. Prints measured vs predicted tokens/s per
device per row (in-sample with the shipped constants, and leave-one-out: constants refitted
without the row), the median |error| and share within 15% (all rows, and fit rows), a per-source
table, the comparison with Calculon on the rows it expresses (bench/data/steptime_calculon.csv),
and timing: one scalar step and 1e6 jobs vectorized; then the whole question at utilization "step"
(calc.budget of a Job built in the call, as a door asks it: the layout's step, memory, hours, cost
and their range) asked again (a workbook recalculating) and new each call (a device count not asked
before), its bytecodes (sys.settrace: a count no load on the machine moves), and 1e6 such jobs in one
call. `--timing` runs the timing alone.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import logging
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

from trainbudget import calc

HERE = Path(__file__).resolve().parent


def summary(pred: np.ndarray, meas: np.ndarray) -> str:
    err = np.abs(pred / meas - 1.0)
    return f"median |error| {np.median(err):.1%}, within 15%: {np.sum(err <= 0.15)}/{err.size}"


def source_of(rec: dict[str, str]) -> str:
    s = rec["source"]
    for key in ("Narayanan", "Korthikanti", "Llama 3", "MegaScale", "DeepSeek-V3 README", "torchtitan",
                "NeMo docs", "Megatron-Bridge", "AutoModel", "MaxText docs", "MaxText MaxText/configs"):
        if key in s:
            return key
    return s[:20]


def calculon(m: calc.MeasuredSteps, pred: np.ndarray) -> None:
    with open(HERE / "data" / "steptime_calculon.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    ours, theirs, meas = [], [], []
    used = set()
    for r in rows:
        want = float(r["measured_tokens_per_s_per_device"])
        hits = [i for i, x in enumerate(m.records) if i not in used and int(x["devices"]) == int(r["devices"])
                and abs(float(x["tokens_per_second_per_device"]) / want - 1) < 0.002]
        if not hits:
            print("  no measured row for", r["model"], r["devices"])
            continue
        used.add(hits[0])
        ours.append(pred[hits[0]])
        theirs.append(float(r["calculon_tokens_per_s_per_device"]))
        meas.append(want)
    meas_a = np.array(meas)
    print(f"  on Calculon's {len(meas)} rows: Calculon {summary(np.array(theirs), meas_a)}")
    print(f"  on Calculon's {len(meas)} rows: this model (LOO) {summary(np.array(ours), meas_a)}")


def best_us(fn: Callable[[], object]) -> float:
    """Best-of-7 microseconds per call."""
    t = timeit.Timer(fn)
    number, _ = t.autorange()
    return min(t.repeat(7, number)) / number * 1e6


def llm_analysis_step() -> tuple[Callable[[], object], float] | None:
    """llm-analysis (the test/bench extra) asked for the same job's step time: Llama 3.1 70B shape on
    1,024 H100, TP8 x PP4 x DP32, 8K sequences, micro-batch 1 (its objects built once outside the timing;
    its step is forward latency x 3 x micro-batches, as bench/bench_scalar.py reads it)."""
    try:
        from llm_analysis.analysis import LLMAnalysis
        from llm_analysis.config import ModelConfig, ParallelismConfig, get_gpu_config_by_name
    except ImportError:
        return None
    logging.getLogger("llm_analysis").setLevel(logging.ERROR)
    logging.disable(logging.WARNING)
    model = ModelConfig(name="70b", num_layers=80, n_head=64, num_key_value_heads=8, hidden_dim=8192,
                        ffn_embed_dim=5 * 8192, vocab_size=128256)  # SwiGLU 28672 ~ MLP 43008; d multiples
    la = LLMAnalysis(model, get_gpu_config_by_name("h100-sxm-80gb"),
                     parallelism_config=ParallelismConfig(tp_size=8, pp_size=4, dp_size=32))
    micro = 16777216 / 8192 / 32

    def question() -> float:
        fwd = la.get_latency_fwd(1, 8192, is_inference=False)
        return 3.0 * (fwd[0] if isinstance(fwd, tuple) else fwd) * micro
    return question, float(question())


def timing() -> None:
    sh = calc.StepShape(params_active=70.6e9, n_layers=80, d_model=8192, attn_dim=8192, kv_dim=1024, vocab=128256)
    hw = calc.step_hardware("H100 SXM, BF16 tensor core, dense")

    def one() -> calc.Step:
        return calc.step_time(sh, calc.StepLayout(devices=1024, seq_len=8192, global_batch_tokens=16777216, tp=8, pp=4,
                                        vpp=5), hw)

    ours = one()
    print(f"  one scalar question (Layout built + step_time): {best_us(one):.1f} us (goal <= 50 us); "
          f"step {ours.step_seconds:.2f} s")
    peer = llm_analysis_step()
    if peer is None:
        print("  llm-analysis not installed (pip install -e .[test]): no peer figure")
    else:
        print(f"  llm-analysis, the same job: {best_us(peer[0]):.1f} us; step {peer[1]:.2f} s "
              "(forward latency x 3 x micro-batches; no bubble, no overlap)")
    rng = np.random.default_rng(0)
    jobs = 1_000_000
    devices = 8.0 * 2.0 ** rng.integers(3, 10, jobs)
    pp = rng.choice([1.0, 2.0, 4.0], jobs)
    rec = rng.integers(0, 3, jobs).astype(float)

    def layout() -> calc.StepLayout:
        return calc.StepLayout(devices=devices, seq_len=8192.0, global_batch_tokens=devices * 8192.0 * 4, tp=8.0, pp=pp,
                        recompute=rec)

    big = layout()
    calc.step_time(sh, big, hw)  # warm: the first pass over fresh memory page-faults it in
    step_ns = min(timeit.repeat(lambda: calc.step_time(sh, big, hw), number=1, repeat=3)) / jobs * 1e9
    all_ns = min(timeit.repeat(lambda: calc.step_time(sh, layout(), hw), number=1, repeat=3)) / jobs * 1e9
    print(f"  1e6 jobs vectorized (best of 3): {step_ns:.0f} ns per job (step_time), {all_ns:.0f} ns with the "
          f"Layout built and checked (goal <= 300 ns)")


def whole_question() -> None:
    """calc.budget at utilization "step": Llama 3.1 70B on H100, TP8 PP4 VPP5 ZeRO-1, 8K sequences,
    8,192 a step; scalar (the same question, and a new device count each call), and 1e6 jobs."""
    sys.path.insert(0, str(HERE))
    from bench_budget import bytecodes

    h100 = "H100 SXM, BF16 tensor core, dense"
    counts = itertools.count(1)

    def ask(devices: float) -> calc.Budget:
        return calc.budget(calc.job(model="Llama 3.1 70B", tokens=1e12, device=h100, devices=devices, tp=8, pp=4,
                                    vpp=5, zero_stage=1, seq_len=8192, global_batch_tokens=8192 * 8192,
                                    utilization="step", price=2.5))

    def same() -> calc.Budget:
        return ask(1024.0)

    def new() -> calc.Budget:
        return ask(32.0 * (next(counts) % 4096 + 1))

    print(f"  one whole question, calc.budget at utilization \"step\" (goal <= 50 us): {best_us(same):.1f} us asked "
          f"again, {best_us(new):.1f} us new each call; {bytecodes(same):,} and {bytecodes(new):,} bytecodes")
    rng = np.random.default_rng(0)
    devices = 32.0 * rng.integers(1, 257, 1_000_000)
    job = calc.job(model="Llama 3.1 70B", tokens=1e12, device=h100, devices=devices, tp=8, pp=4, vpp=5,
                   zero_stage=1, seq_len=8192, global_batch_tokens=8192 * 8192, utilization="step", price=2.5)
    calc.budget(job)
    per = min(timeit.repeat(lambda: calc.budget(job), number=1, repeat=3)) / devices.size * 1e9
    print(f"  1e6 whole questions in one call (best of 3): {per:.0f} ns per job (goal <= 300 ns)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--timing", action="store_true", help="the timing alone")
    args = ap.parse_args()
    if args.timing:
        timing()
        whole_question()
        return
    m = calc.load_measured_steps()
    fit = m.fit_mask
    meas = m.measured
    t0 = time.perf_counter()
    k = calc.fit_step_constants(lambda c: m.predict(c, fit), meas[fit], sweeps=args.sweeps)
    print(f"fitted on {fit.sum()} fit rows in {time.perf_counter() - t0:.1f} s: {k}")
    print(f"shipped constants: {calc.STEP_CONSTANTS}")
    pred = m.predict(calc.STEP_CONSTANTS)
    refit = m.predict(k)
    t0 = time.perf_counter()
    loo = np.array(meas)
    loo[fit] = calc.step_leave_one_out(lambda c, mask: m.predict(c, fit)[mask], meas[fit], sweeps=args.sweeps)
    loo[~fit] = refit[~fit]  # check rows are never in the fit: their prediction is already out of sample
    print(f"leave-one-out in {time.perf_counter() - t0:.0f} s\n")
    print(f"{'#':>2} {'model':32} {'device':24} {'measured':>9} {'shipped':>9} {'LOO':>9} {'LOO err':>8} use")
    for i, r in enumerate(m.records):
        print(f"{i:2d} {r['model'][:32]:32} {r['device'][:24]:24} {meas[i]:9.1f} {pred[i]:9.1f} {loo[i]:9.1f} "
              f"{loo[i] / meas[i] - 1:+8.1%} {r['use']}")
    print()
    print(f"shipped constants, all {meas.size} rows: {summary(pred, meas)}")
    print(f"shipped constants, {fit.sum()} fit rows: {summary(pred[fit], meas[fit])}")
    print(f"refit in-sample, {fit.sum()} fit rows: {summary(refit[fit], meas[fit])}")
    print(f"leave-one-out, {fit.sum()} fit rows: {summary(loo[fit], meas[fit])}")
    print(f"leave-one-out, all {meas.size} rows (check rows out of sample): {summary(loo, meas)}")
    ratio = meas[fit] / loo[fit]
    print(f"leave-one-out, measured / predicted p10 and p90 (calc.STEP_RESIDUAL): "
          f"{np.percentile(ratio, 10):.3f}, {np.percentile(ratio, 90):.3f}")
    pub = np.array([r["layout_basis"].startswith("published") for r in m.records]) & fit
    print(f"leave-one-out, {pub.sum()} fit rows with a published layout: {summary(loo[pub], meas[pub])}")
    for label, sel in (("FP8", m.hardware.fp8), ("MoE", m.shape.top_k > 0), ("TPU", m.hardware.family == 3)):
        sel = sel & fit
        print(f"leave-one-out, {label} ({sel.sum()} rows): {summary(loo[sel], meas[sel])}")
    print("\nper source (leave-one-out):")
    srcs = np.array([source_of(r) for r in m.records])
    for s in dict.fromkeys(srcs):
        sel = srcs == s
        print(f"  {s:24} {summary(loo[sel], meas[sel])}")
    print("\nagainst Calculon:")
    calculon(m, loo)
    print("\ntiming:")
    timing()
    whole_question()


if __name__ == "__main__":
    main()
