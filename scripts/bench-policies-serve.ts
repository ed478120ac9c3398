/**
 * `npm run bench:policies-serve`: does `simulate` predict what `serve` does with the adaptive
 * policy? Runs `batchline serve` (embedded model, `--model-latency-ms 5+2n`, `--batch-policy
 * adaptive`, deadline 200 ms, target 50 ms) in a child process, loads it with `batchline bench`
 * in open loop (a steady Poisson load and a ramp past capacity; latency from each intended send),
 * then runs `simulate` with the same configuration, arrivals (same schedule code, same seed) and
 * `--latency 5+2n`. Compares goodput (2xx answers per second inside the run) and answers within
 * 50 ms per second. Target: within 10 %.
 */
import { availableParallelism, loadavg } from 'node:os';
import type { Histogram } from 'hdr-histogram-js';
import { mergeEncoded } from '../src/bench/histogram-codec.js';
import { resolveOptions } from '../src/options/schema.js';
import { SIMULATE_OPTIONS } from '../src/options/simulate.js';
import { prepareRun } from '../src/simulate/prepare.js';
import { runSimulation } from '../src/simulate/run-simulation.js';
import { pct, runBench, serveFlags, simulateSettings, startServe, table, within } from './lib/fidelity.js';

const SEED = 11;
const TARGET_MS = 50;
const BATCHING = { maxBatchSize: 64, maxQueueSize: 128, requestTimeoutMs: 200, instances: 1 };
const LOADS = [
  {
    name: 'steady 300 req/s, 20 s',
    bench: ['--rate', '300', '--duration', '20s'],
    simulate: { rate: '300', duration: '20s' },
    durationMs: 20_000,
  },
  {
    name: 'ramp 100→700→100 req/s, 30 s',
    bench: ['--stages', '0s:100,15s:700,15s:100'],
    simulate: { stages: '0s:100,15s:700,15s:100' },
    durationMs: 30_000,
  },
];

/** Answers at or under `limitMs`: the HDR histogram (µs) searched for the percentile that value sits at. */
function countAtOrBelow(histogram: Histogram, limitMs: number): number {
  const total = histogram.totalCount;
  if (total === 0) return 0;
  let low = 0;
  let high = 100;
  for (let i = 0; i < 40; i++) {
    const mid = (low + high) / 2;
    if (histogram.getValueAtPercentile(mid) <= limitMs * 1000) low = mid;
    else high = mid;
  }
  return Math.round((low / 100) * total);
}

/** The simulated run: answers `ok` inside the run's span, and those within the target. */
function simulated(load: (typeof LOADS)[number]): { goodputRps: number; onTimeRps: number } {
  const raw = {
    latency: '5+2n',
    batchPolicy: 'adaptive',
    targetLatencyMs: String(TARGET_MS),
    arrival: 'poisson',
    seed: String(SEED),
    ...simulateSettings(BATCHING),
    ...load.simulate,
  };
  const { setup } = prepareRun(resolveOptions(SIMULATE_OPTIONS, raw, {}), { given: Object.keys(raw) }, { trace: true });
  let ok = 0;
  let onTime = 0;
  for (const row of runSimulation(setup).trace ?? []) {
    if (row === undefined || row.outcome !== 'ok' || row.end_ms > load.durationMs) continue;
    ok++;
    if (row.end_ms - row.arrival_ms <= TARGET_MS) onTime++;
  }
  return { goodputRps: ok / (load.durationMs / 1000), onTimeRps: onTime / (load.durationMs / 1000) };
}

async function main(): Promise<void> {
  console.log(
    `bench:policies-serve · serve (embedded model, --model-latency-ms 5+2n, --batch-policy adaptive, max batch ${BATCHING.maxBatchSize}, deadline ${BATCHING.requestTimeoutMs} ms, target ${TARGET_MS} ms) under bench vs simulate · seed ${SEED} · node ${process.version} · load average ${(loadavg()[0] as number).toFixed(2)} on ${availableParallelism()} cores`,
  );
  const flags = [
    '--model-latency-ms',
    '5+2n',
    '--batch-policy',
    'adaptive',
    '--target-latency-ms',
    String(TARGET_MS),
    ...serveFlags(BATCHING),
  ];
  const rows: string[][] = [];
  let met = 0;
  for (const load of LOADS) {
    // A fresh server per load: adaptive starts from nothing in both, as simulate does.
    const serve = await startServe(flags);
    try {
      const real = await runBench(`${serve.url}/v1/infer`, [
        ...load.bench,
        '--arrival',
        'poisson',
        '--seed',
        String(SEED),
        '--warmup',
        '0s',
        '--connections',
        '256',
        '--timeout',
        '5s',
        '--method',
        'POST',
        '--body',
        '{"inputs":[0.2,1.5,-0.3]}',
      ]);
      const hdr = (real as unknown as { latency_hdr: string }).latency_hdr;
      const histogram = mergeEncoded([hdr]);
      const realOnTimeRps = countAtOrBelow(histogram, TARGET_MS) / (load.durationMs / 1000);
      histogram.destroy();
      const sim = simulated(load);
      const ok = within(sim.goodputRps, real.goodput_rps, 0.1);
      if (ok) met++;
      rows.push([
        load.name,
        real.goodput_rps.toFixed(1),
        sim.goodputRps.toFixed(1),
        pct(sim.goodputRps, real.goodput_rps),
        ok ? 'yes' : 'NO',
        realOnTimeRps.toFixed(1),
        sim.onTimeRps.toFixed(1),
        pct(sim.onTimeRps, realOnTimeRps),
        (real.send_lag_ms?.mean ?? 0).toFixed(2),
      ]);
    } finally {
      await serve.stop();
    }
  }
  console.log(
    table(
      [
        'load',
        'real goodput/s',
        'sim goodput/s',
        'err',
        '≤10%',
        `real ≤${TARGET_MS}ms/s`,
        `sim ≤${TARGET_MS}ms/s`,
        'err',
        'send lag ms',
      ],
      rows,
    ),
  );
  console.log(`goodput within 10 % of simulate's prediction: ${met} of ${LOADS.length} loads`);
  console.log(
    'real = batchline bench (latency from each intended send, HTTP included); goodput = 2xx answers inside the run per second; err = (simulated − real) / real',
  );
  console.log(`load average at the end ${(loadavg()[0] as number).toFixed(2)} on ${availableParallelism()} cores`);
}

await main();
