"""Record (or replay) the JSON that `estimate`, `fit` and `plan` print for 200 seeded random jobs.

The fixture `tests/data/doors_json.json.gz` was recorded before calc moved into rooms; the test
`tests/addin/cli/test_no_figure_change.py` replays the same command lines and compares every figure.
Run `python -m tests.doors_record` to record it again (only when a figure is meant to change).
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import random
from pathlib import Path

FIXTURE = Path(__file__).parent / "data" / "doors_json.json.gz"
JOBS = 200
DEVICES = ["H100 SXM, BF16 tensor core, dense", "H100 SXM, FP8 tensor core, dense",
           "A100 SXM 80GB, BF16 tensor core, dense", "H200 SXM, BF16 tensor core, dense",
           "MI300X, BF16 matrix, dense", "TPU v6e (Trillium), BF16, dense",
           "B200, BF16 tensor core, dense", "M3 Ultra, MLX fp32 matmul (measured)"]
MODELS = ["Llama 3.1 8B", "Llama 3.1 70B", "Mistral 7B", "Mixtral 8x7B", "Qwen3-30B-A3B", "Llama 3.1 405B"]
PRICES = ["2.5", "aws:on_demand", "gcp:3yr", "lambda", "coreweave:on_demand", "0.9"]


def _estimate(r: random.Random) -> list[str]:
    args = ["estimate", "--json", "--params", f"{r.choice([1, 3, 7, 13, 34, 70, 180, 405])}B",
            "--tokens", f"{r.choice([1, 10, 100, 2000, 15000])}B", "--device", r.choice(DEVICES),
            "--devices", str(r.choice([1, 8, 64, 512, 4096]))]
    args += ["--range"] if r.random() < 0.5 else ["--utilization", str(r.choice([0.2, 0.35, 0.5]))]
    if r.random() < 0.5:
        args += ["--zero-stage", str(r.choice([1, 2, 3]))]
    if r.random() < 0.4:
        args += ["--price", r.choice(PRICES)]
    if r.random() < 0.3:
        args += ["--method", r.choice(["lora", "qlora", "inference"])]
    if r.random() < 0.3:
        args += ["--goodput", "0.9"]
    return args


def _fit(r: random.Random) -> list[str]:
    args = ["fit", "--json", "--model", r.choice(MODELS), "--device", r.choice(DEVICES[:6]),
            "--devices", str(r.choice([8, 16, 64, 256])), "--seq-len", str(r.choice([2048, 4096, 8192]))]
    if r.random() < 0.3:
        args += ["--method", r.choice(["lora", "qlora"])]
    if r.random() < 0.3:
        args += ["--recompute", r.choice(["none", "selective", "full"])]
    return args


def _plan(r: random.Random) -> list[str]:
    args = ["plan", "--json", "--tokens", f"{r.choice([100, 1000, 15000])}B", "--device", r.choice(DEVICES[:7]),
            "--days", str(r.choice([7, 30, 90]))]
    args += ["--model", r.choice(MODELS)] if r.random() < 0.5 else ["--params", f"{r.choice([7, 70])}B"]
    if r.random() < 0.4:
        args += ["--price", r.choice(PRICES[:3])]
    if r.random() < 0.3:
        args += ["--budget", "50M"]
    if r.random() < 0.3:
        args += ["--utilization", "0.4"]
    if r.random() < 0.3:
        args += ["--node", "8"]
    return args


def command_lines() -> list[list[str]]:
    """The 200 seeded command lines, in a fixed order: estimate, fit and plan by turns."""
    r = random.Random(20261204)
    makers = [_estimate, _fit, _plan]
    return [makers[i % 3](r) for i in range(JOBS)]


def run(args: list[str]) -> dict:
    """One command line's exit code and parsed JSON (or its error text)."""
    import contextlib
    import io

    from trainbudget.addin.cli.main import cli, run as run_cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli(cli, args)
    return {"args": args, "exit": code, "out": json.loads(out.getvalue()) if code == 0 else err.getvalue().strip()}


def _dated(value: object) -> object:
    """`value` with each price's age in days (which grows by one a day) replaced by whether it is
    today less the price's as-of date, so the record holds on any day and still checks the age."""
    if isinstance(value, list):
        return [_dated(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _dated(v) for k, v in value.items()}
    if "price_age_days" in out and out.get("price_as_of") and out["price_age_days"] is not None:
        age = (dt.date.today() - dt.date.fromisoformat(out["price_as_of"])).days
        out["price_age_days"] = "today - price_as_of" if out["price_age_days"] == age else out["price_age_days"]
    return out


def digest(row: dict) -> dict:
    """A fit row keeps its first 40 layouts whole and a SHA-256 of all of them (thousands each);
    prices' ages are checked against today (_dated)."""
    out = _dated(row["out"])
    if row["args"][0] == "fit" and row["exit"] == 0:
        layouts = out["layouts"]
        text = json.dumps(layouts, sort_keys=True)
        out = {**out, "layouts": {"count": len(layouts), "head": layouts[:40],
                                  "sha256": hashlib.sha256(text.encode()).hexdigest()}}
    return {**row, "out": out}


def record() -> None:
    rows = [digest(run(a)) for a in command_lines()]
    FIXTURE.write_bytes(gzip.compress(json.dumps(rows, sort_keys=True).encode(), mtime=0))
    print(f"{len(rows)} command lines, {sum(r['exit'] == 0 for r in rows)} answered, {FIXTURE.stat().st_size} bytes")


if __name__ == "__main__":
    record()
