"""Whole-run back-test of calc.step.run_hours: each published run with a published layout, its own
goodput sample left out of the goodput fit; error of the expected hours, band width, inside or not.

Run: .venv/bin/python bench/bench_runs.py. Layouts (as published; batch at its final value):
- Llama 3.1 405B: 16,384 H100, TP8 x PP16 x DP128, 16M-token batch of 8K sequences (arXiv:2407.21783
  s.3.3.2 and Table 4); 15.6T tokens; 3.084e7 GPU-hours (calc/data/runs.csv).
- BLOOM 176B: 384 A100 80GB, TP4 x PP12 x DP8, ZeRO-1, 2,048 sequences of 2,048 (arXiv:2211.05100
  s.3.4-3.5); 366B tokens; 1,082,990 GPU-hours.
- DeepSeek-V3: 2,048 H800, PP16 x EP64 (ZeRO-1), 15,360 sequences of 4,096 (arXiv:2412.19437
  s.3.2, s.4.2); 14.8T tokens; 2.664e6 GPU-hours.
Goals on whole runs the step model was not fitted on: median error <= 15%, band <= x2.2, 9 of 10 inside.
"""

from __future__ import annotations

import numpy as np

from trainbudget import calc

RUNS = [
    ("Llama 3.1 405B", calc.StepShape(params_active=4.06e11, n_layers=126, d_model=16384, kv_dim=1024, vocab=128256),
     calc.StepLayout(devices=16384, seq_len=8192, global_batch_tokens=16777216, tp=8, pp=16, vpp=8, zero_stage=1),
     "H100 SXM, BF16 tensor core, dense", 1.56e13, 3.084e7),
    ("BLOOM 176B", calc.StepShape(params_active=1.762e11, n_layers=70, d_model=14336, vocab=250880),
     calc.StepLayout(devices=384, seq_len=2048, global_batch_tokens=2048 * 2048, tp=4, pp=12, zero_stage=1,
                     micro_batch=2),
     "A100 SXM 80GB, BF16 tensor core, dense", 3.66e11, 1082990.0),
    ("DeepSeek-V3", calc.StepShape(params_active=3.7e10, params_total=6.71e11, n_layers=61, d_model=7168,
                                   attn_dim=20480, kv_dim=576, vocab=129280, top_k=9),
     calc.StepLayout(devices=2048, seq_len=4096, global_batch_tokens=15360 * 4096, pp=16, ep=64, zero_stage=1),
     "H800 SXM, BF16 tensor core, dense", 1.48e13, 2.664e6),
]


def main() -> None:
    errs, widths, inside = [], [], []
    for name, shape, lay, dev, tokens, measured in RUNS:
        hw = calc.step_hardware(dev)
        g = calc.fit_goodput(leave_out=name)
        r = calc.run_hours(shape, lay, hw, tokens, goodput=g)
        dh = lay.devices
        lo, mid, hi = r.low * dh, r.expected * dh, r.high * dh
        errs.append(abs(mid / measured - 1))
        widths.append(hi / lo)
        inside.append(lo <= measured <= hi)
        print(f"{name:16} measured {measured:10.4g} GPU-h; expected {mid:10.4g} ({mid / measured - 1:+.0%}), "
              f"band {lo:.4g}-{hi:.4g} (x{hi / lo:.2f}) {'inside' if inside[-1] else 'OUTSIDE'}; "
              f"step {r.step_seconds:.2f} s, goodput {g.expected:.2f} from {len(g.runs)} runs")
    print(f"\n{len(RUNS)} runs: median error {np.median(errs):.1%}, median band x{np.median(widths):.2f}, "
          f"inside {sum(inside)} of {len(RUNS)} (goals: <= 15%, <= x2.2, 9 of 10)")


if __name__ == "__main__":
    main()
