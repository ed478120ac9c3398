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
port=18765

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

node bin/batchline.js serve --model "$work/regression.onnx" --port "$port" --model-latency-ms 0 --no-ui > "$work/serve.log" &
server=$!
for _ in $(seq 100); do grep -q 'listening on' "$work/serve.log" && break; sleep 0.1; done

curl -s "http://127.0.0.1:$port/v1/model"; echo
curl -s "http://127.0.0.1:$port/v1/infer" -H 'content-type: application/json' -d '{"inputs":[1,2,3,4]}'; echo
# {"request_id":"…","outputs":{"y":[6.5]},"model_version":"regression"}

kill -TERM "$server"
wait "$server"
# Run it: npm run build && bash examples/serve-your-own-model.sh
