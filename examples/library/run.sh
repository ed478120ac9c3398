#!/usr/bin/env bash
# batch() inside a Fastify app (app.mjs), its refusals answered with their HTTP status.
#
# 1. start the app on a free port;
# 2. client.mjs: a burst of 48 requests (batched), an item that fails alone (400, its own error's status), a flood past the queue (429),
#    a client that hangs up while its call waits or runs (the call is cancelled);
# 3. SIGTERM: the app stops taking requests and the batcher drains. Exits 0 when all of it worked.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
log="$(mktemp)"
trap 'if [ -n "${app:-}" ]; then kill "$app" 2>/dev/null || true; fi; rm -f "$log"' EXIT

node "$here/app.mjs" > "$log" 2>&1 &
app=$!
for _ in $(seq 1 200); do
  url=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -1 | cut -d' ' -f3) && [ -n "$url" ] && break
  kill -0 "$app" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.05
done
echo "app listening at $url"

node "$here/client.mjs" "$url"

kill -TERM "$app"
wait "$app"
app=
# Fastify's log (level warn and up): a client that hung up is no error of the app.
if grep -q '"level":[56]0' "$log"; then echo "FAIL the app logged errors:"; grep '"level":[56]0' "$log" | cut -c1-300; fi
tail -1 "$log"
# Run it: bash examples/library/run.sh
