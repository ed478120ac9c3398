import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Outcome } from '../../src/core/types.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { infer, startTestServer, type TestServer } from './test-server.js';

/** A client that hangs up gives its place in the queue back: its requests are cancelled. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ maxBatchSize: 8, batchWindowMs: 60_000 });
});
afterAll(() => server.close());

function nextOutcomes(count: number): Promise<Outcome<ItemTensors>['kind'][]> {
  const kinds: Outcome<ItemTensors>['kind'][] = [];
  return new Promise((resolve) => {
    server.runtime.defaultVersion!.batcher.addObserver({
      requestFinished: (_request, outcome) => {
        kinds.push(outcome.kind);
        if (kinds.length === count) resolve(kinds);
      },
    });
  });
}

function admitted(count: number): Promise<void> {
  let seen = 0;
  return new Promise((resolve) =>
    server.runtime.defaultVersion!.batcher.addObserver({ admitted: () => ++seen === count && resolve() }),
  );
}

const BODY = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
const POST = `POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}`;

/** A keep-alive connection that has pipelined 8 requests (one full batch) and read their 8 answers. */
async function eightAnsweredOnOneConnection(): Promise<Socket> {
  const client = connect(Number(new URL(server.url).port), '127.0.0.1', () => client.write(POST.repeat(8)));
  let received = '';
  await new Promise<void>((resolve) =>
    client.on('data', (chunk) => {
      received += chunk.toString();
      if (received.split('HTTP/1.1 200').length - 1 === 8) resolve();
    }),
  );
  return client;
}

describe('a client that hangs up while its requests wait', () => {
  it('has every one of them cancelled, pipelined ones included, and the server goes on', async () => {
    const { port } = new URL(server.url);
    const queued = admitted(2);
    const finished = nextOutcomes(2);
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(POST + POST));
    await queued;
    expect(server.runtime.defaultVersion!.batcher.queueDepth).toBe(2);
    const before = { ...server.runtime.defaultVersion!.responsesByStatus };
    socket.destroy();
    expect(await finished).toEqual(['cancelled', 'cancelled']);
    expect(server.runtime.defaultVersion!.batcher.queueDepth).toBe(0);
    // No answer was sent: counted apart as 499 "client closed request" (nginx's), never as a 503.
    const stats = (await (await fetch(`${server.url}/v1/stats`)).json()) as {
      responsesByStatus: Record<string, number>;
    };
    expect((stats.responsesByStatus['499'] ?? 0) - (before['499'] ?? 0)).toBe(2);
    expect(stats.responsesByStatus['503'] ?? 0).toBe(before['503'] ?? 0);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(
      /^batchline_responses_total\{model="toy-logistic-v1",version="1",code="499",protocol="http"\} 2$/m,
    );
    expect(metrics).toMatch(
      /^batchline_responses_total\{model="toy-logistic-v1",version="1",code="503",protocol="http"\} 0$/m,
    );

    // The queue is free again: a full batch from other clients is answered.
    const replies = await Promise.all(Array.from({ length: 8 }, () => infer(server.url, { inputs: [0.2, 1.5, -0.3] })));
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
  });

  it('counts a hang-up after earlier answers on the same keep-alive connection as 499, not 503 (as wrk ends a run)', async () => {
    const client = await eightAnsweredOnOneConnection();
    const before = { ...server.runtime.defaultVersion!.responsesByStatus };
    const queued = admitted(1);
    const finished = nextOutcomes(1);
    client.write(POST);
    await queued;
    client.destroy();
    expect(await finished).toEqual(['cancelled']);
    await new Promise((resolve) => setImmediate(resolve));
    const after = server.runtime.defaultVersion!.responsesByStatus;
    expect({
      499: (after['499'] ?? 0) - (before['499'] ?? 0),
      503: (after['503'] ?? 0) - (before['503'] ?? 0),
    }).toEqual({ 499: 1, 503: 0 });
  });

  it('forgets answered requests, pipelined ones included: nothing piles up on a kept-alive connection', async () => {
    const serverSide = new Promise<Socket>((resolve) => server.app.server.once('connection', resolve));
    const client = await eightAnsweredOnOneConnection();
    const socket = await serverSide;
    const waitingKey = Object.getOwnPropertySymbols(socket).find((key) => key.description === 'batchline.waiting')!;
    expect(waitingKey).toBeDefined();
    expect((socket as unknown as Record<symbol, unknown>)[waitingKey]).toEqual({ requests: [], batchers: [] });
    client.destroy();
  });
});
