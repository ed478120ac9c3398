#!/usr/bin/env bash
# A tuning session: measure the model, then ask the simulator which batching configuration
# keeps p99 under 50 ms at 600 req/s, with the accelerator time serve would add.
#
# 1. profile the embedded model (or pass --model your.onnx) and keep its fit;
# 2. simulate a grid of batch sizes and windows at the target load;
# 3. read the recommendation, then confirm it on the real server with bench, at the same load and
#    with connections enough to carry it (600 req/s at ~50 ms is ~30 in flight; bench opens 16
#    unless told), the recommended values in place of 16 and 5:
#      MAX_BATCH_SIZE=16 BATCH_WINDOW_MS=5 npx batchline serve &
#      npx batchline bench localhost:8080/v1/infer --rate 600 -c 64 -d 10
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

node bin/batchline.js profile --batch-sizes 1,2,4,8,16,32 --out "$work/profile.json"

# serve adds MODEL_LATENCY_MS (20 ms by default for the embedded model) to every batch, on top of the model's own time.
a=$(node -e "const p=require('$work/profile.json'); console.log((20 + p.fit.a_ms).toFixed(4))")
b=$(node -e "const p=require('$work/profile.json'); console.log(Math.max(p.fit.b_ms, 0).toFixed(4))")

node bin/batchline.js simulate --rate 600 --model-latency-ms "${a}+${b}n" --latency-cv 0.2 \
  --sweep max-batch-size=1,2,4,8,16,32 batch-window-ms=0,2,5,10 --slo 'p99<50ms'
# Run it: bash examples/tune-batching.sh
