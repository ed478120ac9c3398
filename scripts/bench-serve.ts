/**
 * npm run bench:serve — how much of a bare Fastify route's throughput `batchline serve` keeps.
 * Both servers run the same JSON parse in their own process and get the same closed-loop load
 * from autocannon in this process; the ratio of requests per second is the figure.
 *
 * Both servers stay up for the whole run and take turns in short slices (the order flips every
 * pair), so a pair of slices sees the same machine: on a shared 2-core VM the speed of the CPU
 * drifts by up to 2x over tens of seconds, and rounds of a server restarted minutes apart
 * measured the drift more than the servers. The figure is the median of the per-pair ratios.
 *
 * Beside it, each server's CPU a request (Linux /proc): the ratio of requests/s is the ratio of
 * CPU a request only while autocannon and the server under load each have a core. When
 * something else takes one, they share the other, autocannon's own cost a request is added to
 * both, and the throughput ratio moves toward 1 (0.83-0.86 in pairs where the bare route fell
 * from 49k to 26k requests/s) while the CPU ratio stays.
 *
 * Options (env): BENCH_CONNECTIONS (64), BENCH_SLICE_S (2), BENCH_PAIRS (25). Arguments after
 * `--` go to `batchline serve` (for example `-- --max-batch-size 32`).
 */
import autocannon from 'autocannon';
import { fileURLToPath } from 'node:url';
import { startChildServer, type ChildServer } from './lib/child-server.js';
import { processCpuMs } from './lib/process-cpu.js';
import { median } from './lib/median.js';

const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const sliceS = Number(process.env.BENCH_SLICE_S ?? 2);
const pairs = Number(process.env.BENCH_PAIRS ?? 25);
const body = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
const root = fileURLToPath(new URL('../../', import.meta.url));

interface Slice {
  rps: number;
  p50: number;
  p99: number;
  failed: number;
  /** The server's CPU a request (user + system, every thread and child process), µs; NaN off Linux. */
  cpuUsPerRequest: number;
}

function cpuMsOf(server: ChildServer): number {
  try {
    // With its child processes: `-- --execution process` runs the model's instances in them.
    return processCpuMs(server.process.pid!, true);
  } catch {
    return Number.NaN; // no /proc here
  }
}

async function drive(server: ChildServer, seconds: number): Promise<Slice> {
  const cpuBeforeMs = cpuMsOf(server);
  const result = await autocannon({
    url: `${server.url}/v1/infer`,
    connections,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: result.errors + result.non2xx,
    cpuUsPerRequest: ((cpuMsOf(server) - cpuBeforeMs) * 1000) / result.requests.total,
  };
}

const format = (slice: Slice): string =>
  `${slice.rps.toFixed(0).padStart(6)} req/s, ${slice.cpuUsPerRequest.toFixed(1)} µs CPU a request (p50 ${slice.p50} ms, p99 ${slice.p99} ms${slice.failed > 0 ? `, ${slice.failed} failed` : ''})`;

console.log(
  `bench:serve — ${connections} keep-alive connections from autocannon, ${pairs} pairs of ${sliceS} s slices, toy model, MODEL_LATENCY_MS=0 ${process.argv.slice(2).join(' ')}`,
);
// `npm run bench:serve -- ARGS` hands ARGS over without the `--`; `node dist/... -- ARGS` keeps it.
const serveArgs = process.argv.slice(2).filter((arg, i) => !(i === 0 && arg === '--'));
const bare = await startChildServer(process.execPath, [`${root}dist/scripts/bare-fastify-server.js`]);
// A serve that cannot start (a bad option) must not leave the bare server running behind the bench.
const serve = await startChildServer(
  process.execPath,
  [`${root}bin/batchline.js`, 'serve', '--port', '0', ...serveArgs],
  {
    MODEL_LATENCY_MS: '0',
  },
).catch(async (error: unknown) => {
  await bare.stop();
  throw error;
});
try {
  // Warm-up: JIT, connection set-up, onnxruntime's first runs.
  await drive(bare, 2);
  await drive(serve, 2);
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  let failed = 0;
  for (let pair = 1; pair <= pairs; pair++) {
    const bareFirst = pair % 2 === 1;
    const first = await drive(bareFirst ? bare : serve, sliceS);
    const second = await drive(bareFirst ? serve : bare, sliceS);
    const [bareSlice, serveSlice] = bareFirst ? [first, second] : [second, first];
    failed += bareSlice.failed + serveSlice.failed;
    ratios.push(serveSlice.rps / bareSlice.rps);
    cpuRatios.push(bareSlice.cpuUsPerRequest / serveSlice.cpuUsPerRequest);
    console.log(
      `pair ${String(pair).padStart(2)}: bare ${format(bareSlice)}  serve ${format(serveSlice)}  ratio ${(serveSlice.rps / bareSlice.rps).toFixed(3)}`,
    );
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  const quartile = (q: number): number => sorted[Math.round(q * (sorted.length - 1))]!;
  console.log(
    `ratio batchline serve / bare fastify: median ${median(ratios).toFixed(3)} of ${pairs} pairs ` +
      `(quartiles ${quartile(0.25).toFixed(3)}–${quartile(0.75).toFixed(3)}, range ${sorted[0]!.toFixed(3)}–${sorted.at(-1)!.toFixed(3)}; target >= 0.85)` +
      (failed > 0 ? `; ${failed} requests failed` : ''),
  );
  if (cpuRatios.every(Number.isFinite))
    console.log(
      `CPU a request, bare fastify / batchline serve: median ${median(cpuRatios).toFixed(3)} ` +
        '(the throughput ratio is this when autocannon has a core of its own, and higher when it shares one with the server)',
    );
} finally {
  await Promise.all([bare.stop(), serve.stop()]);
}
