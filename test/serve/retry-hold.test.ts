/**
 * `serve --hold-retries` (the default): a connection refused 429 that sends again before its
 * Retry-After, and is refused again, gets that 429 when the Retry-After has passed; a full queue
 * refuses before the body is decoded. A real server and real connections.
 */
import { Client } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { infer, startTestServer, type TestServer } from './test-server.js';
import { PATIENCE, PATIENCE_MS } from '../patience.js';
import { inferRequest, RawConnection } from '../reliability/raw-http.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * Fills the queue of 1 behind a running batch of 1; resolves when it is full. It stays full for
 * 30 s (the model's time and the deadlines), far past the tests' two seconds however slow the host.
 */
async function fullQueue(flags: Record<string, unknown>): Promise<{ server: TestServer; busy: Promise<unknown>[] }> {
  const started = await startTestServer({
    maxQueueSize: 1,
    maxBatchSize: 1,
    batchWindowMs: 0,
    modelLatencyMs: 30_000,
    requestTimeoutMs: 30_000,
    ...flags,
  });
  const batcher = started.runtime.defaultVersion!.batcher;
  const busy = [infer(started.url, { inputs: [1, 1, 1] })];
  await vi.waitFor(() => expect(batcher.runningCount).toBe(1), PATIENCE);
  busy.push(infer(started.url, { inputs: [2, 2, 2] }));
  await vi.waitFor(() => expect(batcher.queueDepth).toBe(1), PATIENCE);
  expect([batcher.runningCount, batcher.queueDepth]).toEqual([1, 1]);
  return { server: started, busy };
}

/** POSTs to /v1/infer on one connection; the status and when the answer came (ms after `fromMs`). */
async function post(client: Client, body: string, fromMs: number): Promise<{ status: number; atMs: number }> {
  const response = await client.request({
    path: '/v1/infer',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  await response.body.text();
  return { status: response.statusCode, atMs: performance.now() - fromMs };
}

describe('a full queue’s 429 to a connection that retries at once', () => {
  it('answers the first 429 at once and a retry refused again when its Retry-After has passed', async () => {
    const full = await fullQueue({});
    server = full.server;
    const client = new Client(server.url);
    try {
      const fromMs = performance.now();
      const first = await post(client, JSON.stringify({ inputs: [3, 3, 3] }), fromMs);
      expect(first.status).toBe(429);
      const second = await post(client, JSON.stringify({ inputs: [3, 3, 3] }), fromMs);
      expect(second.status).toBe(429);
      // Told to retry after 1 s, it retried at once: its refusal waited for that second, counted
      // from the first refusal, which came after \`fromMs\` (a gap between the answers as the client
      // read them was short of it whenever the first answer was read late on a loaded host).
      expect(second.atMs).toBeGreaterThanOrEqual(990);
      // A full queue refuses before decoding: inputs the model would refuse (400) get the 429.
      const third = await post(client, JSON.stringify({ inputs: 'not a tensor' }), fromMs);
      expect(third.status).toBe(429);
      expect(third.atMs).toBeGreaterThanOrEqual(1990);
      const counts = server.runtime.defaultVersion!.batcher.counts;
      expect(counts.rejected.queue_full).toBe(3);
    } finally {
      await client.close();
    }
  });

  it('answers every 429 at once with --no-hold-retries', async () => {
    const RETRIES = 10;
    const full = await fullQueue({ holdRetries: false });
    server = full.server;
    const client = new Client(server.url);
    try {
      const fromMs = performance.now();
      const statuses: number[] = [];
      let lastMs = 0;
      for (let i = 0; i < RETRIES; i++) {
        const answer = await post(client, JSON.stringify({ inputs: [3, 3, 3] }), fromMs);
        statuses.push(answer.status);
        lastMs = answer.atMs;
      }
      expect(statuses).toEqual(Array(RETRIES).fill(429));
      // None held. Held, each retry would wait one Retry-After (1 s) more than the one before: the
      // last 9 s after the first refusal. Unheld, each is a round trip on a local connection
      // (milliseconds): the bound, a whole Retry-After short of the held case, leaves a loaded
      // host most of a second for each.
      expect(lastMs).toBeLessThan((RETRIES - 2) * 1000);
    } finally {
      await client.close();
    }
  });
});

describe('429s to requests pipelined behind the first one refused', () => {
  it('are answered at once: sent before their client could read a Retry-After, they are no retries', async () => {
    const PIPELINED = 10;
    const full = await fullQueue({});
    server = full.server;
    const connection = new RawConnection(Number(new URL(server.url).port));
    try {
      const fromMs = performance.now();
      await connection.write(
        Array.from({ length: PIPELINED }, (_, i) => inferRequest(JSON.stringify({ inputs: [3, 3, 3] }), `p${i}`)).join(
          '',
        ),
      );
      const answers = await connection.untilResponses(PIPELINED, PATIENCE_MS);
      expect(answers.map((a) => [a.headers['x-request-id'], a.status])).toEqual(
        Array.from({ length: PIPELINED }, (_, i) => [`p${i}`, 429]),
      );
      // Held as retries, the last would come 9 s after the first (one Retry-After each); answered
      // at once, within a round trip. The bound leaves a loaded host most of a second for each.
      expect(performance.now() - fromMs).toBeLessThan((PIPELINED - 2) * 1000);
    } finally {
      await connection.settle(0);
    }
  });
});

describe('a held 429 whose client leaves before it is answered', () => {
  it('is counted as the refusal it was, in the metrics as in the batcher’s counts, its answer as 499', async () => {
    const full = await fullQueue({});
    server = full.server;
    const version = server.runtime.defaultVersion!;
    const connection = new RawConnection(Number(new URL(server.url).port));
    await connection.write(inferRequest(JSON.stringify({ inputs: [3, 3, 3] }), 'first'));
    expect((await connection.untilResponses(1, PATIENCE_MS)).map((r) => r.status)).toEqual([429]);
    // A retry at once: refused (the batcher counts it) and held; its client leaves meanwhile.
    await connection.write(inferRequest(JSON.stringify({ inputs: [3, 3, 3] }), 'retry'));
    await vi.waitFor(() => expect(version.batcher.counts.rejected.queue_full).toBe(2), PATIENCE);
    await connection.settle(0);
    // The hold ends (1 s): nothing to send, and the refusal is counted all the same.
    await vi.waitFor(() => expect(version.responsesByStatus['499']).toBe(1), PATIENCE);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(
      /^batchline_rejections_total\{model="toy-logistic-v1",version="1",reason="queue_full"\} 2$/m,
    );
    expect(metrics).toMatch(/^batchline_requests_total\{model="toy-logistic-v1",version="1",outcome="rejected"\} 2$/m);
  });
});

describe('a held 429 when the server drains', () => {
  it('is answered when the drain starts: nothing is left for the drain to wait for', async () => {
    const full = await fullQueue({});
    server = full.server;
    const version = server.runtime.defaultVersion!;
    const client = new Client(server.url);
    try {
      const first = await post(client, JSON.stringify({ inputs: [3, 3, 3] }), 0);
      expect(first.status).toBe(429);
      const retried = post(client, JSON.stringify({ inputs: [3, 3, 3] }), 0);
      // Refused (counted at once) and held: its answer is counted when it is given.
      await vi.waitFor(() => expect(version.batcher.counts.rejected.queue_full).toBe(2), PATIENCE);
      expect(version.responsesByStatus['429']).toBe(1);
      // The drain answers what is queued and running (503), and the held refusal with it: a
      // server stopping had it on a timer of its own, and waited for it or cut its connection.
      await server.runtime.drain(0);
      expect(version.responsesByStatus['429']).toBe(2);
      expect((await retried).status).toBe(429);
    } finally {
      await client.close();
    }
  });
});
