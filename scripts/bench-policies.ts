/**
 * `npm run bench:policies`: the four claims of docs/policies.md, proven in simulate (virtual
 * time: the figures do not depend on the machine). Service time 5 + 2n ms, one instance,
 * deadlines 200 ms, target p95 50 ms; goodput is answers within 50 ms per second.
 *   1. three loads: the best fixed configuration of a 7 × 6 sweep (the oracle), aimd, adaptive
 *   2. 2× overload for 30 s, with and without SLA admission
 *   3. 1 % poisoned items: bisecting against item-by-item retry
 *   4. a model failing for 5 s: the circuit breaker
 * BENCH_REQUESTS (default 100000) sets the requests per load of case 1 and of case 3.
 */
import {
  compareBatchPolicies,
  failingModel,
  fixedConfigsDoingBoth,
  overload,
  overloadRateRps,
  poisonedItems,
  SWEEP_MAX_BATCH,
  SWEEP_WINDOW_MS,
} from '../src/simulate/policy-cases.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 100_000);
const pad = (text: string | number, width: number) => String(text).padStart(width);
const fixed1 = (x: number) => x.toFixed(1);
const percent = (x: number) => `${(x * 100).toFixed(1)}%`;

console.log(
  `bench:policies · service 5+2n ms, 1 instance, deadline 200 ms, target p95 50 ms · ${REQUESTS.toLocaleString('en-US')} requests per load · simulated (virtual time)`,
);

console.log(
  `\n1. goodput (answers within 50 ms, per s); oracle = best of max-batch-size ${SWEEP_MAX_BATCH.join(',')} × batch-window-ms ${SWEEP_WINDOW_MS.join(',')} per load`,
);
const started = performance.now();
const loads = compareBatchPolicies(REQUESTS);
console.log(
  `${'load'.padEnd(26)}${pad('oracle', 18)}${pad('aimd', 9)}${pad('adaptive', 10)}${pad('adaptive/oracle', 17)}${pad('adaptive/aimd', 15)}`,
);
for (const r of loads) {
  const oracle = `${fixed1(r.oracle.goodputRps)} (${r.oracle.config})`;
  console.log(
    `${r.load.padEnd(26)}${pad(oracle, 18)}${pad(fixed1(r.aimd), 9)}${pad(fixed1(r.adaptive), 10)}${pad(percent(r.adaptive / r.oracle.goodputRps), 17)}${pad(percent(r.adaptive / r.aimd), 15)}`,
  );
}
const minShare = Math.min(...loads.map((r) => r.adaptive / r.oracle.goodputRps));
const beatsAimd = loads.slice(1).every((r) => r.adaptive > r.aimd);
console.log(
  `adaptive ≥ 95% of the oracle on every load: ${minShare >= 0.95 ? 'yes' : 'NO'} (worst ${percent(minShare)}); beats aimd on ramp and bursty: ${beatsAimd ? 'yes' : 'NO'}`,
);
const both = fixedConfigsDoingBoth(loads);
console.log(
  both.length === 0
    ? 'no single fixed configuration is within 95% of the oracle on all three loads and beats aimd on ramp and bursty'
    : `fixed configurations that also do both (max-batch/window, worst share of the oracle): ${both
        .slice(0, 8)
        .map((c) => `${c.config} ${percent(c.worstShare)}`)
        .join(
          ', ',
        )}${both.length > 8 ? ` … (${both.length} of ${SWEEP_MAX_BATCH.length * SWEEP_WINDOW_MS.length})` : ''}`,
);
console.log(
  `(${((performance.now() - started) / 1000).toFixed(1)} s of wall time for ${loads.length * (SWEEP_MAX_BATCH.length * SWEEP_WINDOW_MS.length + 2)} simulations)`,
);

console.log(`\n2. overload: ${overloadRateRps()} req/s (2× what batches of 64 serve) for 30 s, adaptive`);
console.log(
  `${'admission'.padEnd(10)}${pad('arrived', 9)}${pad('admitted', 10)}${pad('refused', 9)}${pad('timed out', 11)}${pad('of admitted', 13)}${pad('goodput/s', 11)}${pad('p50 ms', 9)}${pad('p99 ms', 9)}`,
);
for (const r of overload(30)) {
  console.log(
    `${r.admission.padEnd(10)}${pad(r.arrived, 9)}${pad(r.admitted, 10)}${pad(r.refused, 9)}${pad(r.timedOut, 11)}${pad(percent(r.timedOut / r.admitted), 13)}${pad(fixed1(r.goodputRps), 11)}${pad(fixed1(r.p50Ms), 9)}${pad(fixed1(r.p99Ms), 9)}`,
  );
}
console.log('(goodput here: answers within the 200 ms deadline, per s; refused = 429 at arrival)');

console.log(`\n3. poisoned items: 1% of ${REQUESTS.toLocaleString('en-US')} requests, adaptive`);
console.log(
  `${'isolation'.padEnd(10)}${pad('req/s', 7)}${pad('poisoned', 10)}${pad('bad failed', 12)}${pad('good failed', 13)}${pad('expired', 9)}${pad('failed batches', 16)}${pad('isolation runs', 16)}${pad('model runs', 12)}`,
);
for (const rate of [200, 300]) {
  for (const r of poisonedItems(REQUESTS, rate)) {
    console.log(
      `${r.isolation.padEnd(10)}${pad(r.rateRps, 7)}${pad(r.poisoned, 10)}${pad(r.badItemsFailed, 12)}${pad(r.goodItemsFailed, 13)}${pad(r.expired, 9)}${pad(r.failedBatches, 16)}${pad(r.isolationRuns, 16)}${pad(r.modelRuns, 12)}`,
    );
  }
}

console.log('\n4. failing model: every run fails from 10 s to 15 s; 300 req/s for 30 s, adaptive');
for (const r of failingModel(30)) {
  if (r.breaker) {
    const opened = r.transitions.find((t) => t.state === 'open');
    const closed = r.transitions.at(-1);
    console.log(
      `breaker   opened at ${fixed1(((opened?.atMs ?? Number.NaN) / 1000) * 1000)} ms (${fixed1((opened?.atMs ?? 0) - r.outage.startMs)} ms into the outage), ${r.transitions.filter((t) => t.state === 'half_open').length} probes, closed at ${fixed1(closed?.atMs ?? Number.NaN)} ms: ${r.probesAfterRecovery} probe after recovery, ${fixed1(r.closedAfterRecoveryMs)} ms after it`,
    );
  }
  console.log(
    `${(r.breaker ? 'with' : 'without').padEnd(10)}batches started while open ${r.batchesWhileOpen} · refused 503 ${r.refused} · answered 503 while waiting ${r.unavailable} · failed 500 ${r.failed} · model runs during the outage ${r.modelRunsDuringOutage} · mean time to a failed answer ${fixed1(r.meanFailedAnswerMs)} ms · goodput ${fixed1(r.goodputRps)}/s`,
  );
}
