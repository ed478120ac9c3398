import type { BenchPlan } from '../../src/bench/plan.js';
import { startTestServer, type TestServer } from '../serve/test-server.js';
import { planFor } from './plan-helper.js';

/** serve with batches of 1 that take 10 ms: 100 req/s at most, its queue long enough for any backlog a step builds. */
export function serveOf100RequestsPerSecond(): Promise<TestServer> {
  return startTestServer({ maxBatchSize: 1, modelLatencyMs: 10, maxQueueSize: 100_000, requestTimeoutMs: 60_000 });
}

/**
 * A sweep's plan against serve's `/v1/infer` at `url`: 1 s steps after 300 ms of warm-up, the toy
 * model's body, room for every request in flight (300 connections) and a 20 s timeout.
 */
export function sweepPlanFor(url: string, rate: number): BenchPlan {
  const base = planFor(`${url}/v1/infer`, {
    rate: String(rate),
    duration: '1s',
    warmup: '300ms',
    connections: '300',
    timeout: '20s',
    method: 'POST',
  });
  return {
    ...base,
    bodies: [Buffer.from('{"inputs":[0.2,1.5,-0.3]}')],
    headers: { ...base.headers, 'content-type': 'application/json' },
  };
}
