/**
 * npm run bench:serve — how much of a bare Fastify route's throughput `batchline serve` keeps.
 * Both servers run the same JSON parse in their own process and get the same closed-loop load
 * from autocannon in this process; the ratio of requests per second is the figure.
 *
 * The two servers alternate for several rounds and the median of the per-round ratios is the
 * figure, so a burst of other work on the machine skews one round, not the result.
 *
 * Options (env): BENCH_CONNECTIONS (64), BENCH_DURATION_S (5), BENCH_ROUNDS (5). Arguments after
 * `--` go to `batchline serve` (for example `-- --max-batch-size 32`).
 */
import autocannon from 'autocannon';
import { fileURLToPath } from 'node:url';
import { startChildServer, type ChildServer } from './lib/child-server.js';

const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const durationS = Number(process.env.BENCH_DURATION_S ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const body = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
const root = fileURLToPath(new URL('../../', import.meta.url));

async function drive(server: ChildServer, seconds: number): Promise<{ rps: number; p50: number; p99: number; failed: number }> {
  const result = await autocannon({
    url: `${server.url}/v1/infer`,
    connections,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { rps: result.requests.total / result.duration, p50: result.latency.p50, p99: result.latency.p99, failed: result.errors + result.non2xx };
}

async function measure(name: string, start: () => Promise<ChildServer>): Promise<number> {
  const server = await start();
  try {
    await drive(server, 2); // warm-up: JIT, connection set-up, onnxruntime's first runs
    const run = await drive(server, durationS);
    console.log(`${name.padEnd(22)} ${run.rps.toFixed(0).padStart(7)} req/s  p50 ${run.p50} ms  p99 ${run.p99} ms  failed ${run.failed}`);
    return run.rps;
  } finally {
    await server.stop();
  }
}

const startServe = () =>
  startChildServer(process.execPath, [`${root}bin/batchline.js`, 'serve', '--port', '0', ...process.argv.slice(2)], {
    MODEL_LATENCY_MS: '0',
  });
const startBare = () => startChildServer(process.execPath, [`${root}dist/scripts/bare-fastify-server.js`]);

console.log(`bench:serve — ${connections} keep-alive connections from autocannon, ${durationS} s per run, ${rounds} rounds, toy model, MODEL_LATENCY_MS=0 ${process.argv.slice(2).join(' ')}`);
const ratios: number[] = [];
for (let round = 1; round <= rounds; round++) {
  const bare = await measure('bare fastify route', startBare);
  const serve = await measure('batchline serve', startServe);
  ratios.push(serve / bare);
  console.log(`round ${round}: batchline serve / bare fastify = ${(serve / bare).toFixed(3)}`);
}
const sorted = [...ratios].sort((a, b) => a - b);
const median = sorted[Math.floor((sorted.length - 1) / 2)]! / 2 + sorted[Math.ceil((sorted.length - 1) / 2)]! / 2;
console.log(`ratio batchline serve / bare fastify: median ${median.toFixed(3)} of ${rounds} rounds (range ${sorted[0]!.toFixed(3)}–${sorted.at(-1)!.toFixed(3)}; target >= 0.75)`);
