import { describe, expect, it } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import { EventLog, type CoreEvent } from '../../src/core/event-log.js';
import { SeededRandom } from '../../src/core/rng.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import type { ServedModel } from '../../src/model/load-model.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { prepareRun } from '../../src/simulate/prepare.js';
import { runSimulation } from '../../src/simulate/run-simulation.js';
import { ServingRuntime } from '../../src/serve/serving-runtime.js';
import { simulateOptions } from './helpers.js';

/**
 * architecture.md rule 3: one seeded arrival trace through `simulate` and through serve's own
 * driver (ServingRuntime: createBatcher + ModelExecutor with MODEL_LATENCY_MS) on a manual
 * clock gives identical batches and times. The model stands in for an accelerator whose time
 * grows with the batch: it answers `perItemMs·n + fixedMs` virtual ms after it is called.
 */
async function serveOnManualClock(
  flags: Record<string, string>,
  times: Float64Array,
  model: { fixedMs: number; perItemMs: number },
): Promise<CoreEvent[]> {
  const clock = new VirtualClock();
  const config = resolveOptions(SERVE_OPTIONS, flags, {});
  const runtime = new ServingRuntime(config, clock);
  const fake: ServedModel = {
    version: 'fake-accelerator',
    health: () => {
      throw new Error('not used');
    },
    ready: true,
    inputs: [],
    outputs: [],
    decode: (inputs) => inputs as ItemTensors,
    runBatch: (items) =>
      new Promise((resolve) => {
        clock.schedule(
          clock.now() + model.fixedMs + model.perItemMs * items.length,
          () => resolve([...items]),
          EventOrder.completion,
        );
      }),
    replyBody: (requestId) => JSON.stringify({ request_id: requestId }),
    close: async () => {},
  };
  const { batcher } = runtime.attach(fake);
  const log = new EventLog<ItemTensors, ItemTensors>(batcher);
  batcher.addObserver(log);
  times.forEach((atMs, i) => clock.schedule(atMs, () => batcher.submit(String(i), {}, () => {}), EventOrder.arrival));
  // The model answers through a Promise: let it settle at the instant it resolved, before time moves on.
  while (clock.step()) await new Promise<void>((resolve) => setImmediate(resolve));
  return log.events;
}

/** Poisson arrivals on a 1/1024 ms grid, so every sum of times and latencies is exact. */
function dyadicPoissonTrace(rateRps: number, count: number, seed: number): Float64Array {
  const rng = new SeededRandom(seed);
  const times = new Float64Array(count);
  let t = 0;
  for (let i = 0; i < count; i++) {
    t += (rng.exponential() * 1000) / rateRps;
    times[i] = Math.round(t * 1024) / 1024;
  }
  for (let i = 40; i < count; i += 40) times[i] = times[i - 1]!; // some same-instant arrivals
  return times;
}

const SCENARIOS = [
  { name: 'defaults', batching: {}, modelLatencyMs: 20, model: { fixedMs: 0.5, perItemMs: 0.25 }, rate: 300 },
  {
    name: 'overload: rejections and both kinds of expiry',
    batching: { maxBatchSize: 4, batchWindowMs: 5, maxQueueSize: 16, requestTimeoutMs: 30, instances: 2 },
    modelLatencyMs: 5,
    model: { fixedMs: 0, perItemMs: 3 },
    rate: 900,
  },
  {
    name: 'window 0, batch 1, 3 instances',
    batching: { maxBatchSize: 1, batchWindowMs: 0, maxQueueSize: 1000, requestTimeoutMs: 100_000, instances: 3 },
    modelLatencyMs: 6,
    model: { fixedMs: 1, perItemMs: 0 },
    rate: 350,
  },
];

describe("parity: simulate and serve's driver on a manual clock", () => {
  for (const s of SCENARIOS) {
    it(`identical events, batches and times (${s.name})`, async () => {
      const times = dyadicPoissonTrace(s.rate, 2000, 17);
      const flags = Object.fromEntries(Object.entries(s.batching).map(([k, v]) => [k, String(v)]));
      const served = await serveOnManualClock({ ...flags, modelLatencyMs: String(s.modelLatencyMs) }, times, s.model);
      const latency = `${s.modelLatencyMs + s.model.fixedMs}+${s.model.perItemMs}n`;
      const options = simulateOptions({ ...s.batching, latency });
      const { setup } = prepareRun(options, { given: ['arrivals', 'latency'], arrivalTimes: times }, { events: true });
      const simulated = runSimulation(setup).events!;
      expect(simulated.filter((e) => e.kind === 'batch_started').length).toBeGreaterThan(100);
      expect(simulated).toEqual(served);
    });
  }
});
