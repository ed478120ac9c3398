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
    server.runtime.runtime!.batcher.addObserver({
      requestFinished: (_request, outcome) => {
        kinds.push(outcome.kind);
        if (kinds.length === count) resolve(kinds);
      },
    });
  });
}

function admitted(count: number): Promise<void> {
  let seen = 0;
  return new Promise((resolve) => server.runtime.runtime!.batcher.addObserver({ admitted: () => ++seen === count && resolve() }));
}

describe('a client that hangs up while its requests wait', () => {
  it('has every one of them cancelled, pipelined ones included, and the server goes on', async () => {
    const { port } = new URL(server.url);
    const body = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
    const post = `POST /v1/infer HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    const queued = admitted(2);
    const finished = nextOutcomes(2);
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(post + post));
    await queued;
    expect(server.runtime.runtime!.batcher.queueDepth).toBe(2);
    socket.destroy();
    expect(await finished).toEqual(['cancelled', 'cancelled']);
    expect(server.runtime.runtime!.batcher.queueDepth).toBe(0);

    // The queue is free again: a full batch from other clients is answered.
    const replies = await Promise.all(Array.from({ length: 8 }, () => infer(server.url, { inputs: [0.2, 1.5, -0.3] })));
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
  });

  it('forgets answered requests, pipelined ones included: nothing piles up on a kept-alive connection', async () => {
    const { port } = new URL(server.url);
    const body = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
    const post = `POST /v1/infer HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    const serverSide = new Promise<Socket>((resolve) => server.app.server.once('connection', resolve));
    const client = connect(Number(port), '127.0.0.1', () => client.write(post.repeat(8)));
    let received = '';
    await new Promise<void>((resolve) =>
      client.on('data', (chunk) => {
        received += chunk.toString();
        if (received.split('HTTP/1.1 200').length - 1 === 8) resolve();
      }),
    );
    const socket = await serverSide;
    const waitingKey = Object.getOwnPropertySymbols(socket).find((key) => key.description === 'batchline.waiting')!;
    expect(waitingKey).toBeDefined();
    expect((socket as unknown as Record<symbol, unknown>)[waitingKey]).toEqual({ requests: [], batchers: [] });
    client.destroy();
  });
});
