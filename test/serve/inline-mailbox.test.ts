/**
 * `serve --inline-mailbox`: the inline toy model takes several full batches while it runs one,
 * runs them back to back and writes their answers after them. What a client sees must not
 * change: every request one answer, its own. A real server, real onnxruntime.
 */
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { infer, startTestServer, type TestServer } from './test-server.js';

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
});

/** A deadline far past anything the tests wait for, so that a slow host is not a timeout. */
const LONG_DEADLINE = { 'x-request-timeout-ms': '30000' };

/** Counts the model's runs in flight at once, as the executor starts them. */
function countRunsInFlight(server: TestServer): { most: number } {
  const model = server.runtime.defaultVersion!.model as { runBatch: (...args: any[]) => Promise<unknown> };
  const runBatch = model.runBatch.bind(model);
  const seen = { most: 0 };
  let inFlight = 0;
  model.runBatch = (...args) => {
    seen.most = Math.max(seen.most, ++inFlight);
    return runBatch(...args).finally(() => inFlight--);
  };
  return seen;
}

/**
 * Sends every body as one pipelined write on one connection, so the server reads them all in one
 * turn of its event loop (as a loaded server does), and returns the answers' JSON in order.
 */
function pipelined(url: string, bodies: readonly unknown[]): Promise<{ status: number; json: any }[]> {
  const { hostname, port } = new URL(url);
  const bytes = bodies
    .map((body) => {
      const text = JSON.stringify(body);
      return `POST /v1/infer HTTP/1.1\r\nhost: ${hostname}:${port}\r\ncontent-type: application/json\r\nx-request-timeout-ms: 30000\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
    })
    .join('');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const answers: { status: number; json: any }[] = [];
    let received = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      for (;;) {
        const end = received.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = received.toString('latin1', 0, end);
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (received.length < end + 4 + length) return;
        answers.push({
          status: Number(head.split(' ')[1]),
          json: JSON.parse(received.toString('utf8', end + 4, end + 4 + length)),
        });
        received = received.subarray(end + 4 + length);
        if (answers.length === bodies.length) {
          socket.end();
          return resolve(answers);
        }
      }
    });
    socket.write(bytes);
  });
}

describe('serve --inline-mailbox', () => {
  it('runs several batches at once on the inline model and answers each request with its own result', async () => {
    // A long window: batches leave when full, so 48 requests are 12 full batches; all read in one turn.
    const reference = await startTestServer({ maxBatchSize: 1, batchWindowMs: 0 });
    const server = await startTestServer({ inlineMailbox: 3, maxBatchSize: 4, batchWindowMs: 5000 });
    servers = [reference, server];
    const runs = countRunsInFlight(server);
    const bodies = Array.from({ length: 48 }, (_, i) => ({ inputs: [i / 10 - 2, 0.5, -0.25] }));
    const replies = await pipelined(server.url, bodies);
    const expected = await Promise.all(bodies.map((body) => infer(reference.url, body)));
    expect(replies.map((reply) => reply.status)).toEqual(Array(48).fill(200));
    expect(replies.map((reply) => reply.json.prediction)).toEqual(expected.map((reply) => reply.json.prediction));
    expect(server.runtime.defaultVersion!.batcher.counts).toMatchObject({ batches: 12, batchItems: 48 });
    // The one running and the three its mailbox holds.
    expect(runs.most).toBe(4);
  });

  it('is off with --model-latency-ms, whose pretend accelerator runs one batch at a time', async () => {
    const server = await startTestServer({ inlineMailbox: 3, maxBatchSize: 4, batchWindowMs: 5000, modelLatencyMs: 5 });
    servers = [server];
    const runs = countRunsInFlight(server);
    const replies = await Promise.all(
      Array.from({ length: 32 }, (_, i) => infer(server.url, { inputs: [i, 0, 0] }, LONG_DEADLINE)),
    );
    expect(replies.map((reply) => reply.status)).toEqual(Array(32).fill(200));
    expect(runs.most).toBe(1);
  });
});
