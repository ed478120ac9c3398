import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/core/batcher.js';
import { EventOrder } from '../../src/core/clock.js';
import { WindowPolicy } from '../../src/core/policy.js';
import type { Batch, Executor, PendingRequest } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import { ServeMetrics } from '../../src/serve/metrics.js';
import { infer, startTestServer } from './test-server.js';

/** Doubles each input after `latencyMs`; a negative input fails its item alone. */
class ItemExecutor implements Executor<number, number> {
  constructor(
    private readonly clock: VirtualClock,
    private readonly latencyMs: number,
  ) {}

  start(batch: Batch<number, number>, done: (result: readonly (number | Error)[] | Error) => void): void {
    const results = batch.inputs.map((x) => (x < 0 ? new Error(`bad input ${x}`) : x * 2));
    this.clock.schedule(batch.startedAtMs + this.latencyMs, () => done(results), EventOrder.completion);
  }
}

/** A batcher of 4-item batches (10 ms window, 20 ms runs) observed by a version's metrics. */
function meteredBatcher() {
  const clock = new VirtualClock();
  const batcher = new Batcher<number, number>(
    clock,
    new ItemExecutor(clock, 20),
    new WindowPolicy({ maxBatchSize: 4, batchWindowMs: 10 }),
    { maxQueueSize: 64, requestTimeoutMs: 2000, instances: 1, isolation: 'off' },
  );
  const serveMetrics = new ServeMetrics(() => []);
  serveMetrics.forVersion(batcher, 4, { model: 'm', version: '1' });
  const outcomes: string[] = [];
  const requests: PendingRequest<number, number>[] = [];
  const submitAt = (atMs: number, input: number) =>
    clock.schedule(atMs, () => {
      const submitted = batcher.submit(`r${requests.length}`, input, (outcome) => outcomes.push(outcome.kind));
      if (submitted.admitted) requests.push(submitted.request);
    });
  /** The request-duration histogram's count and sum (s), as /metrics exports them. */
  const durations = async () => {
    const text = (await serveMetrics.render()).body;
    const value = (series: string) =>
      Number(new RegExp(`^batchline_request_duration_seconds_${series}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1]);
    return { count: value('count'), sumS: value('sum') };
  };
  return { clock, batcher, requests, outcomes, submitAt, durations };
}

describe('the request-duration histogram', () => {
  it('counts every request of an all-ok batch, each from its own arrival', async () => {
    const { clock, outcomes, submitAt, durations } = meteredBatcher();
    // Arrivals at 0, 1, 2, 3 ms fill a batch of 4 at 3 ms; it answers at 23 ms.
    for (let i = 0; i < 4; i++) submitAt(i, i);
    clock.advanceTo(100);
    expect(outcomes).toEqual(['ok', 'ok', 'ok', 'ok']);
    const { count, sumS } = await durations();
    expect(count).toBe(4);
    expect(sumS).toBeCloseTo((23 + 22 + 21 + 20) / 1000, 9);
  });

  it('counts only the ok requests of a batch where an item failed', async () => {
    const { clock, outcomes, submitAt, durations } = meteredBatcher();
    for (let i = 0; i < 4; i++) submitAt(i, i === 2 ? -1 : i);
    clock.advanceTo(100);
    expect(outcomes.filter((kind) => kind === 'ok')).toHaveLength(3);
    const { count, sumS } = await durations();
    expect(count).toBe(3);
    expect(sumS).toBeCloseTo((23 + 22 + 20) / 1000, 9);
  });

  it('does not count a request of the batch that was cancelled before its answer', async () => {
    const { clock, batcher, requests, outcomes, submitAt, durations } = meteredBatcher();
    for (let i = 0; i < 4; i++) submitAt(i, i);
    // While the batch runs, its third request is cancelled (its client hung up).
    clock.schedule(10, () => batcher.cancel(requests[2]!));
    clock.advanceTo(100);
    expect([...outcomes].sort()).toEqual(['cancelled', 'ok', 'ok', 'ok']);
    expect((await durations()).count).toBe(3);
  });
});

describe('the request-duration histogram on a real server', () => {
  it('observes rows, as batchline_requests_total{outcome="ok"} counts them, and its help says so', async () => {
    const server = await startTestServer({ batchWindowMs: 0 });
    try {
      const rows = (n: number) => ({
        inputs: [{ name: 'features', datatype: 'FP32', shape: [n, 3], data: Array(3 * n).fill(0.5) }],
      });
      expect((await infer(`${server.url}/v2/models/toy-logistic-v1/infer`, rows(5))).status).toBe(200);
      expect((await infer(`${server.url}/v2/models/toy-logistic-v1/infer`, rows(1))).status).toBe(200);
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const value = (name: string, label = '') =>
        Number(new RegExp(`^${name}\\{[^}]*${label}[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1]);
      // Two answers, six rows: the histogram counts the rows, as the batcher's counter does.
      expect(value('batchline_responses_total', 'code="200",protocol="http"')).toBe(2);
      expect(value('batchline_requests_total', 'outcome="ok"')).toBe(6);
      expect(value('batchline_request_duration_seconds_count')).toBe(6);
      expect(/^# HELP batchline_request_duration_seconds (.*)$/m.exec(text)?.[1]).toMatch(/\brows\b/);
    } finally {
      await server.close();
    }
  });
});
