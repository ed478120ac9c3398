#!/usr/bin/env bash
# Dynamic registration: versions of a model registered, called, replaced under load and
# deregistered through the admin API while the server runs.
#
# 1. serve a copy of models/ (greeter version 1; versions 2 and 3 wait in the repository) with an admin token;
# 2. client.mjs registers v2 with the middleware's body, replaces it by v3 under load, deregisters;
# 3. SIGTERM: the server drains and exits 0. Exits 0 when every step worked.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
work="$(mktemp -d)"
trap 'if [ -n "${server:-}" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
cp -r "$here/models" "$work/models"
token="example-$RANDOM$RANDOM"

node "$root/bin/batchline.js" serve --model-repository "$work/models" --admin-token "$token" --port 0 \
  --model-latency-ms 0 --no-ui > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 200); do
  url=$(grep -o 'listening on http://[0-9.:]*' "$work/serve.log" | head -1 | cut -d' ' -f3) && [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
  sleep 0.05
done
echo "serving at $url"

node "$here/client.mjs" "$url" "$token"

kill -TERM "$server"
wait "$server"
server=
echo "server drained and stopped"
# Run it: bash examples/dynamic-registration/run.sh
