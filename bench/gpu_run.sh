#!/usr/bin/env bash
# One device call: real training steps (bench/gpu_step.py), then `trainbudget measure` at BF16 and FP8.
# Run from the repository root with the scripts and wheels in .gpurun/ (see bench/gpu_step.py):
#   bash .gpurun/gpu_run.sh      (OUT: the folder whose files come back)
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
q="name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,memory.used,memory.total"
nvidia-smi --query-gpu=$q --format=csv > "$OUT/nvsmi.csv" 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpurun/whl/*.whl \
  && export PYTHONPATH=/tmp/site
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
python3 .gpurun/gpu_step.py --out "$OUT" --deadline "${DEADLINE:-200}"
nvidia-smi --query-gpu=$q --format=csv,noheader >> "$OUT/nvsmi.csv" 2>&1
for spec in bf16:25 fp8:15; do
  python3 -m trainbudget.addin.cli measure --backend torch --dtype "${spec%%:*}" --seconds "${spec##*:}" --json \
    > "$OUT/measure_${spec%%:*}.json"
  python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['dtype'], [(s['n'], round(s['tflops'],1), round(s['spread'],3)) for s in m['sizes']], 'chosen', m['n'], round(m['tflops'],1), m['sustained'])" "$OUT/measure_${spec%%:*}.json"
done
nvidia-smi --query-gpu=$q --format=csv,noheader >> "$OUT/nvsmi.csv" 2>&1
cat "$OUT/nvsmi.csv"
