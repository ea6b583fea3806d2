"""Whole-run back-test of calc.step.run_hours: each published run with a published layout, its own
goodput sample left out of the goodput fit; error of the expected hours, band width, inside or not.

Run: .venv/bin/python bench/bench_runs.py. Layouts (as published; batch at its final value):
- Llama 3.1 405B: 16,384 H100, TP8 x PP16 x DP128, 16M-token batch of 8K sequences (arXiv:2407.21783
  s.3.3.2 and Table 4); 15.6T tokens; 3.084e7 GPU-hours (calc/data/runs.csv).
- BLOOM 176B: 384 A100 80GB, TP4 x PP12 x DP8, ZeRO-1, 2,048 sequences of 2,048 (arXiv:2211.05100
  s.3.4-3.5); 366B tokens; 1,082,990 GPU-hours.
- DeepSeek-V3: 2,048 H800, PP16 x EP64 (ZeRO-1), 15,360 sequences of 4,096, its GEMMs in FP8
  (arXiv:2412.19437 s.3.2, s.3.3, s.4.2; DualPipe's overlap of the all-to-all is not modelled);
  14.8T tokens; 2.664e6 GPU-hours.
Then the published whole runs whose device count is known and whose shape was read from a config.json
or paper (bench/data/whole_runs.csv, each with its sources): the layout, where not published, is the one
`fit` ranks fastest (calc.fit_layouts + calc.layout_steps) at the published batch, else the step model's
default batch; device, count, tokens and device-hours are calc/data/runs.csv's. A planner knowing only
the model, the devices and the tokens gets this figure.
Goals on whole runs the step model was not fitted on: median error <= 15%, band <= x2.2, 9 of 10 inside.
"""

from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path

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
                                   attn_dim=20480, kv_dim=576, vocab=129280, top_k=8, params_expert=6.539e11),
     calc.StepLayout(devices=2048, seq_len=4096, global_batch_tokens=15360 * 4096, pp=16, ep=64, zero_stage=1),
     "H800 SXM, FP8 tensor core, dense", 1.48e13, 2.664e6),
]


SHAPES = Path(__file__).resolve().parent / "data" / "whole_runs.csv"
CONFIG = ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
          "num_key_value_heads", "head_dim", "vocab_size")


Result = tuple[float, float, bool, float]  # |error|, band width, inside, implied goodput


def back_test(name: str, shape: calc.StepShape, lay: calc.StepLayout, dev: str, tokens: float,
              measured: float, words: str) -> Result:
    """Print one run's expected device-hours against the published; (|error|, band width, inside, the
    run's implied goodput: the step model's device-hours at goodput 1 over the published)."""
    g = calc.fit_goodput(leave_out=name)
    hw = calc.step_hardware(dev)
    r = calc.run_hours(shape, lay, hw, tokens, goodput=g)
    dh = float(lay.devices)
    lo, mid, hi = float(r.low) * dh, float(r.expected) * dh, float(r.high) * dh
    inside = lo <= measured <= hi
    print(f"{name:16} measured {measured:10.4g} GPU-h; expected {mid:10.4g} ({mid / measured - 1:+.0%}), "
          f"band x{hi / lo:.2f} {'inside' if inside else 'OUTSIDE'}; step {float(r.step_seconds):.2f} s, "
          f"{100 * float(r.mfu):.0f}% MFU, goodput {g.expected:.2f}; {words}")
    return abs(mid / measured - 1), hi / lo, inside, mid * g.expected / measured


def preset_of(row: dict[str, str], folder: Path) -> calc.ModelPreset:
    """The row's shape as a config.json read by calc.load_config (as `fit --model config.json` reads it)."""
    config = {k: int(row[k]) for k in CONFIG[1:] if row[k]}
    config.update(model_type=row["model_type"], tie_word_embeddings=row["tie_word_embeddings"] == "true")
    path = folder / f"{row['run'].replace(' ', '_')}.json"
    path.write_text(json.dumps(config))
    return calc.load_config(str(path))


def fastest_layout(row: dict[str, str], preset: calc.ModelPreset, dev: str,
                   devices: int) -> tuple[calc.StepLayout, str]:
    """fit's fastest layout of `devices` at the row's batch (sequences; blank: calc.DEFAULT_GLOBAL_BATCH),
    among those with the row's published tp, pp and micro-batch where it gives them and fit lists one
    (fit's tensor parallel divides the KV heads: a multi-query model's published TP 4 is not listed);
    and the layout in words."""
    seq, batch = int(row["seq_len"]), int(row["global_batch_sequences"] or calc.DEFAULT_GLOBAL_BATCH)
    found = calc.fit_layouts(preset, dev, devices, seq_len=seq, global_batch=batch)
    order = np.asarray(calc.layouts_by_speed(calc.layout_steps(found, preset, dev, seq)))
    keep = np.ones(len(found), dtype=bool)
    for key in ("tp", "pp", "micro_batch"):
        if row[key]:
            keep &= np.asarray(getattr(found, key)) == int(row[key])
    listed = keep[order].any()
    i = order[keep[order]][0] if listed else order[0]
    rec = "selective" if found.recompute[i] == "op" else str(found.recompute[i])
    words = (f"TP{found.tp[i]} PP{found.pp[i]} VPP{found.vpp[i]} CP{found.cp[i]} DP{found.dp[i]} "
             f"Z{found.zero_stage[i]} mb{found.micro_batch[i]} {rec}, {batch * seq / 1e6:.1f}M tokens a step"
             f"{'' if row['global_batch_sequences'] else ' (default)'}"
             f"{'' if listed else ' (fit lists no layout with the published TP/PP)'}")
    return calc.StepLayout(devices=float(devices), seq_len=float(seq), global_batch_tokens=float(batch * seq),
                           tp=float(found.tp[i]), pp=float(found.pp[i]), vpp=float(found.vpp[i]),
                           cp=float(found.cp[i]), ep=float(found.ep[i]), zero_stage=float(found.zero_stage[i]),
                           micro_batch=float(found.micro_batch[i]), recompute=rec), words


def shaped_runs() -> list[Result]:
    """The back-test of bench/data/whole_runs.csv's runs (module doc)."""
    runs = {r.run: r for r in calc.load_runs()}
    out = []
    with tempfile.TemporaryDirectory() as tmp, SHAPES.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            run = runs[row["run"]]
            preset = preset_of(row, Path(tmp))
            lay, words = fastest_layout(row, preset, run.device, int(run.devices))
            out.append(back_test(row["run"], calc.step_shape(preset), lay, run.device, run.tokens,
                                 run.device_hours, words))
    return out


def summary(label: str, rows: list[Result]) -> None:
    errs, widths, inside, _ = zip(*rows, strict=True)
    print(f"{label}: {len(rows)} runs: median error {np.median(errs):.1%}, median band x{np.median(widths):.2f}, "
          f"inside {sum(inside)} of {len(rows)} (goals: <= 15%, <= x2.2, 9 of 10)\n")


def goodput_on_the_runs(rows: list[Result]) -> None:
    """Goodput fitted on these runs themselves, leave-one-out: each run's expected hours at the geometric
    mean of the others' implied goodput, its band their p10-p90 (goodput's spread alone); and the spread
    of the implied goodput, against the log spread a x2.2 band holding 9 of 10 allows (ln 2.2 / 2 / 1.645)."""
    g = np.array([r[3] for r in rows])
    errs, widths, inside = [], [], []
    for i, own in enumerate(g):
        others = np.delete(g, i)
        mid, p10, p90 = np.exp(np.log(others).mean()), np.percentile(others, 10), np.percentile(others, 90)
        errs.append(abs(own / mid - 1))  # expected hours / published = own implied goodput / the one used
        widths.append(p90 / p10)
        inside.append(p10 <= own <= p90)
    print(f"implied goodput {g.min():.2f}-{g.max():.2f}, log sd {np.log(g).std(ddof=1):.3f} (x2.2 holding 9 of 10 "
          f"needs {np.log(2.2) / 2 / 1.645:.3f}); goodput fitted on these runs, leave-one-out: median error "
          f"{np.median(errs):.1%}, band x{np.median(widths):.2f}, inside {sum(inside)} of {len(g)}")


def main() -> None:
    published = [back_test(name, shape, lay, dev, tokens, measured, "published layout")
                 for name, shape, lay, dev, tokens, measured in RUNS]
    summary("published layouts", published)
    shaped = shaped_runs()
    summary("fit's fastest layout where none is published", shaped)
    summary("all", published + shaped)
    goodput_on_the_runs(published + shaped)


if __name__ == "__main__":
    main()
