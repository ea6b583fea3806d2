"""The step model's predictions beside the training steps bench/gpu_step.py measured on one GPU.

    python bench/gpu_compare.py DIR               # DIR: gpu_step.py's --out (gpu_step.csv, config_*.json)
    python bench/gpu_compare.py --predict-only    # the planned configurations, predictions alone
    python bench/gpu_compare.py DIR --write F.csv # the measured rows as a team's measured-steps file

Each prediction is calc.budget(calc.job(model=<the run's config.json>, utilization="step", ...)) on
the catalog's H200 BF16 row, one device, micro-batch = global batch (no accumulation), at the
run's recompute. MFU on both sides: tokens/s x (6·N + 6·L·s·attn_dim) per token against the row's
dense peak (calc.step.terms.flops_per_token's model FLOPs).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

from gpu_shapes import CONFIGS, SHAPES, config_json

from trainbudget import calc

DEVICE = "H200 SXM, BF16 tensor core, dense"
SEQ = 2048
TEAM_COLUMNS = ("model", "params", "active_params", "n_layers", "d_model", "attn_dim", "kv_dim", "vocab", "top_k",
                "device", "devices", "tp", "pp", "vpp", "cp", "ep", "zero_stage", "micro_batch", "seq_len",
                "global_batch_tokens", "recompute", "step_seconds", "tokens_per_second_per_device", "source",
                "as_of", "note")


def predict(config: Path, mb: int, recompute: str, seq: int = SEQ) -> calc.Step:
    """The step model's step for the run (one H200, micro-batch `mb` sequences of `seq` tokens)."""
    job = calc.job(model=calc.load_config(config), utilization="step", device=DEVICE, devices=1, micro_batch=mb,
                   seq_len=seq, global_batch_tokens=mb * seq, recompute=recompute, tokens=1e9)
    return calc.budget(job).step


def model_flops(name: str, seq: int = SEQ) -> float:
    layers, d = SHAPES[name][:2]
    return 6.0 * _params(name) + 6.0 * layers * seq * d  # attn_dim = heads x head_dim = d here


def _params(name: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(config_json(name, SEQ)))
        return float(calc.load_config(path).params().total)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", type=Path)
    ap.add_argument("--predict-only", action="store_true")
    ap.add_argument("--write", type=Path, help="write the measured rows as a team's measured-steps CSV")
    args = ap.parse_args()
    peak = calc.catalog().get(DEVICE).tflops * 1e12
    if args.predict_only:
        rows = [{"model": n, "micro_batch": str(mb), "recompute": r, "compiled": str(c)} for n, mb, r, c in CONFIGS]
    elif args.dir:
        with (args.dir / "gpu_step.csv").open() as f:
            rows = list(csv.DictReader(f))
    else:
        sys.exit("give DIR or --predict-only")
    print(f"{'model':>10} {'mb':>3} {'recompute':>9} {'compiled':>8} | {'step s meas':>11} {'pred':>7} | "
          f"{'tok/s meas':>10} {'pred':>8} {'pred/meas':>9} | {'MFU meas':>8} {'pred':>6}")
    team = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            name, mb, rec, seq = r["model"], int(r["micro_batch"]), r["recompute"], int(r.get("seq_len", SEQ))
            cfg = Path(tmp) / f"{name}.json"
            cfg.write_text(json.dumps(config_json(name, seq)))
            st = predict(cfg, mb, rec, seq)
            tps_p = float(st.tokens_per_second_per_device)
            meas = float(r["tokens_per_second_per_device"]) if "tokens_per_second_per_device" in r else None
            step_m = f"{float(r['step_seconds']):>11.4f}" if meas else f"{'-':>11}"
            tps_m = f"{meas:>10.0f}" if meas else f"{'-':>10}"
            ratio = f"{tps_p / meas:>9.3f}" if meas else f"{'-':>9}"
            mfu_m = f"{meas * model_flops(name, seq) / peak:>8.1%}" if meas else f"{'-':>8}"
            print(f"{name:>10} {mb:>3} {rec:>9} {r['compiled']:>8} | {step_m} {float(st.step_seconds):>7.4f} | "
                  f"{tps_m} {tps_p:>8.0f} {ratio} | {mfu_m} {float(st.mfu):>6.1%}")
            if meas and r["compiled"] == "False":
                layers, d, heads, kv, _, vocab = SHAPES[name]
                n = _params(name)
                team.append({"model": f"{name} (Llama-style, bench/gpu_shapes.py)", "params": f"{n:.0f}",
                             "active_params": f"{n:.0f}", "n_layers": layers, "d_model": d, "attn_dim": d,
                             "kv_dim": kv * d // heads, "vocab": vocab, "top_k": 0, "device": DEVICE, "devices": 1,
                             "tp": 1, "pp": 1, "vpp": 1, "cp": 1, "ep": 1, "zero_stage": 0, "micro_batch": mb,
                             "seq_len": seq, "global_batch_tokens": mb * seq, "recompute": rec,
                             "step_seconds": r["step_seconds"], "tokens_per_second_per_device": r[
                                 "tokens_per_second_per_device"],
                             "source": f"measured by the team on an {r['hardware']}, {r['date']} (bench/gpu_step.py, "
                                       f"torch {r['torch']}, eager, BF16 autocast, fused AdamW)",
                             "as_of": r["date"], "note": f"median of {r['steps_timed']} steps, spread "
                                                         f"{float(r['step_spread']):.1%}"})
    if args.write and team:
        with args.write.open("w", newline="") as f:
            out = csv.DictWriter(f, fieldnames=TEAM_COLUMNS)
            out.writeheader()
            out.writerows(team)
        print(f"wrote {len(team)} rows to {args.write} ({dt.date.today()})")


if __name__ == "__main__":
    main()
