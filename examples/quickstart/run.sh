#!/usr/bin/env bash
# Quickstart: serve a code model (model.mjs) and send it requests from a client.
#
# 1. batchline serve --model model.mjs on a free port (batches of up to 8, a 10 ms window);
# 2. client.mjs sends 24 requests at once, one bad one, and reads the JSON metrics;
# 3. SIGTERM: the server drains and exits 0. Exits 0 when all of it worked.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
log="$(mktemp)"
trap 'if [ -n "${server:-}" ]; then kill "$server" 2>/dev/null || true; fi; rm -f "$log"' EXIT

node "$root/bin/batchline.js" serve --model "$here/model.mjs" --model-name words --port 0 \
  --max-batch-size 8 --batch-window-ms 10 --model-latency-ms 0 --no-ui > "$log" 2>&1 &
server=$!
# The start-up line says where it listens (port 0: a free port).
for _ in $(seq 1 200); do
  url=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -1 | cut -d' ' -f3) && [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.05
done
echo "serving words at $url"

node "$here/client.mjs" "$url"

kill -TERM "$server"
wait "$server"
server=
echo "server drained and stopped"
# Run it: bash examples/quickstart/run.sh
