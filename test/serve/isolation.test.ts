import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { infer, startTestServer, type TestServer } from './test-server.js';
import { failingWidthModelOnnx, linearModelOnnx, writeRepository } from './repository-fixture.js';

/**
 * Worker isolation: `busy` is overloaded (a queue of 1 behind 100 ms batches of 1: 429s), `broken`
 * fails every batch it is sent (500s), and `steady`, asked at the same time, answers every
 * request, correctly, with nothing refused or failed in its own counters.
 */
let server: TestServer;
beforeAll(async () => {
  const root = await writeRepository({
    'busy/1/model.onnx': linearModelOnnx([1, 1]),
    'busy/config.json': { max_queue_size: 1, max_batch_size: 1, model_latency_ms: 100 },
    'broken/1/model.onnx': failingWidthModelOnnx(),
    'broken/config.json': { isolation: 'off', breaker_failures: 0, breaker_ratio: 0 },
    'steady/1/model.onnx': linearModelOnnx([2, 3], 1),
  });
  server = await startTestServer({ modelRepository: root, batchWindowMs: 2, modelLatencyMs: 0 });
});
afterAll(() => server.close());

describe('one model overloaded and one failing', () => {
  it('leave another model’s answers and counters untouched', async () => {
    const busy = Array.from({ length: 30 }, () => infer(`${server.url}/models/busy/predict`, { inputs: [1, 1] }));
    const broken = Array.from({ length: 30 }, () =>
      infer(`${server.url}/models/broken/predict`, { inputs: [1, 2, 3] }),
    );
    const steady = Array.from({ length: 30 }, (_, i) =>
      infer(`${server.url}/models/steady/predict`, { inputs: [i, 1] }),
    );
    const [busyReplies, brokenReplies, steadyReplies] = await Promise.all([
      Promise.all(busy),
      Promise.all(broken),
      Promise.all(steady),
    ]);
    // 30 at once against 1 running + 1 queued: most are refused, however slowly they arrive.
    expect(new Set(busyReplies.map((r) => r.status))).toEqual(new Set([200, 429]));
    expect(busyReplies.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(10);
    expect(new Set(brokenReplies.map((r) => r.status))).toEqual(new Set([500]));
    steadyReplies.forEach((reply, i) => {
      expect(reply.status).toBe(200);
      expect(reply.json.outputs.y).toEqual([2 * i + 3 + 1]);
    });
    const counts = server.runtime.registry.resolve('steady')!.batcher.counts;
    expect(counts.outcomes).toMatchObject({ ok: 30, error: 0, timeout: 0 });
    expect(Object.values(counts.rejected).every((n) => n === 0)).toBe(true);
    expect(server.runtime.registry.resolve('steady')!.responsesByStatus).toEqual({ 200: 30 });
  });
});
