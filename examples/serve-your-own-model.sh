#!/usr/bin/env bash
# Serve an ONNX model of your own: here a tiny linear regression (one input x of four features) written with batchline's own
# ONNX writer (any model whose inputs have a dynamic batch dimension 0 works the same way).
#
# 1. write model.onnx: y = x·w + b, with x of shape [batch, 4];
# 2. serve it with --model, ask GET /v1/model what it takes, and send one item;
# 3. stop the server (SIGTERM: it drains and exits 0).
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
# Whatever happens, stop the server and remove the folder.
trap 'if [ -n "${server:-}" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$work"' EXIT

node --input-type=module -e "
import { writeFileSync } from 'node:fs';
import { writeOnnxModel } from './dist/src/model/onnx-writer.js';
writeFileSync('$work/regression.onnx', writeOnnxModel({
  name: 'regression',
  inputs: [{ name: 'x', dims: ['batch', 4] }],
  outputs: [{ name: 'y', dims: ['batch', 1] }],
  initializers: [{ name: 'w', dims: [4, 1], values: [0.5, -1, 2, 0.25] }, { name: 'b', dims: [1], values: [1] }],
  nodes: [
    { opType: 'MatMul', inputs: ['x', 'w'], outputs: ['xw'] },
    { opType: 'Add', inputs: ['xw', 'b'], outputs: ['y'] },
  ],
}));"

# Port 0: any free port; the server's start-up line says which.
node bin/batchline.js serve --model "$work/regression.onnx" --port 0 --model-latency-ms 0 --no-ui > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q 'listening on' "$work/serve.log" && break; sleep 0.1; done
port="$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/serve.log")"

curl -s "http://127.0.0.1:$port/v1/model"; echo
curl -s "http://127.0.0.1:$port/v1/infer" -H 'content-type: application/json' -d '{"inputs":[1,2,3,4]}'; echo
# {"request_id":"…","outputs":{"y":[6.5]},"model":"regression","model_version":"1"}

kill -TERM "$server"
wait "$server"
server=
# Run it: npm run build && bash examples/serve-your-own-model.sh
