/**
 * What the server counts is what its client got: a request whose client has gone before its
 * answer is written counts 499 in `/v1/stats`' `responsesByStatus` and `batchline_responses_total`,
 * whether it went while its rows waited or while their batch ran, on every transport; the
 * batcher's own counts (`batchline_requests_total`, `batchline_batch_items_total`) still say that
 * the batch ran. A real server on 127.0.0.1 with a code model whose batches wait for the test.
 */
import { Packr } from 'msgpackr';
import { connect, type Socket } from 'node:net';
import type { Server } from 'node:http';
import type * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inferenceType } from '../../src/protocol/grpc-proto-root.js';
import type { ServerStats } from '../../src/stats-contract/server-stats.js';
import { CODE_MODELS, codeModelDir } from '../model/code-model-fixtures.js';
import { PATIENCE } from '../patience.js';
import { float32Bytes, OipClient, startGrpcTestServer, type GrpcTestServer } from './grpc-helpers.js';

/** Runs inline, so its batches wait on `globalThis.__countedGate`, which each test sets. */
const GATED = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export async function execute(items) {
  const gate = globalThis.__countedGate;
  gate.started(items.length);
  await gate.released;
  return items.map(({ x }) => ({ y: x }));
}
`;

interface Gate {
  /** Rows whose batch has started. */
  rows: number;
  release(): void;
}

function newGate(): Gate {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const gate: Gate = { rows: 0, release };
  (globalThis as { __countedGate?: unknown }).__countedGate = {
    released,
    started: (rows: number) => (gate.rows += rows),
  };
  return gate;
}

let server: GrpcTestServer;
let client: OipClient;
beforeAll(async () => {
  const repository = await codeModelDir({
    'gated/1/model.mjs': GATED,
    'gated/config.json': JSON.stringify({ execution: 'inline', max_batch_size: 8, batch_window_ms: 0 }),
    'fast/1/model.mjs': CODE_MODELS.double,
    'fast/config.json': JSON.stringify({ execution: 'inline', batch_window_ms: 0 }),
  });
  server = await startGrpcTestServer({ modelRepository: repository });
  client = new OipClient(server.target);
});
afterAll(async () => {
  client.close();
  await server.close();
});

const packr = new Packr({ useRecords: false });

/** One HTTP request of each route and body, as raw bytes, and the rows it carries. */
const HTTP_REQUESTS: Record<string, { rows: number; bytes: Buffer }> = {
  'JSON on /models/{m}/predict': {
    rows: 1,
    bytes: post('/models/gated/predict', 'application/json', '{"inputs":{"x":[1]}}'),
  },
  'MessagePack on /models/{m}/predict': {
    rows: 1,
    bytes: post('/models/gated/predict', 'application/msgpack', packr.pack({ inputs: { x: [1] } })),
  },
  '/v2 of shape [3, 1]': {
    rows: 3,
    bytes: post(
      '/v2/models/gated/infer',
      'application/json',
      '{"inputs":[{"name":"x","datatype":"FP32","shape":[3,1],"data":[1,2,3]}]}',
    ),
  },
  'V1 :predict of two instances': {
    rows: 2,
    bytes: post('/v1/models/gated:predict', 'application/json', '{"instances":[[1],[2]]}'),
  },
};

function post(path: string, type: string, body: string | Buffer): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const head = `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: ${type}\r\ncontent-length: ${bytes.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), bytes]);
}

interface Figures {
  /** `/v1/stats`: the version's answers by status, and the server's. */
  version: Record<string, number>;
  total: Record<string, number>;
  /** `/metrics`: batchline_responses_total by code and protocol, and the batcher's counts of rows. */
  responses: Record<string, number>;
  outcomes: Record<string, number>;
  batchItems: number;
}

async function figures(): Promise<Figures> {
  const stats = (await (await fetch(`${server.url}/v1/stats`)).json()) as {
    responsesByStatus: Record<string, number>;
    models: { name: string; responsesByStatus: Record<string, number> }[];
  };
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const series = (name: string): [Record<string, string>, number][] =>
    [...text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm'))]
      .map((m): [Record<string, string>, number] => [
        Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!])),
        Number(m[2]),
      ])
      .filter(([labels]) => labels.model === 'gated');
  return {
    version: stats.models.find((m) => m.name === 'gated')!.responsesByStatus,
    total: stats.responsesByStatus,
    responses: Object.fromEntries(series('batchline_responses_total').map(([l, v]) => [`${l.code}/${l.protocol}`, v])),
    outcomes: Object.fromEntries(series('batchline_requests_total').map(([l, v]) => [l.outcome!, v])),
    batchItems: series('batchline_batch_items_total')[0]![1],
  };
}

/** What moved between two readings, zeros left out. */
function moved(before: Figures, after: Figures): Record<string, unknown> {
  const diff = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
    Object.fromEntries(
      Object.keys(b)
        .map((key) => [key, (b[key] ?? 0) - (a[key] ?? 0)] as const)
        .filter(([, delta]) => delta !== 0),
    );
  return {
    version: diff(before.version, after.version),
    total: diff(before.total, after.total),
    responses: diff(before.responses, after.responses),
    outcomes: diff(before.outcomes, after.outcomes),
    batchItems: after.batchItems - before.batchItems,
  };
}

/** Sends `bytes` on a new connection once it is open, and gives the server's side of it too. */
async function sendOnNewConnection(
  bytes: Buffer,
): Promise<{ client: Socket; serverSide: Socket; received: () => string }> {
  const serverSide = new Promise<Socket>((resolve) => (server.app.server as Server).once('connection', resolve));
  let received = '';
  const client = connect(Number(new URL(server.url).port), '127.0.0.1');
  client.on('data', (chunk) => (received += chunk.toString('latin1')));
  client.on('error', () => {});
  await new Promise<void>((resolve) => client.once('connect', resolve));
  const side = await serverSide;
  client.write(bytes);
  return { client, serverSide: side, received: () => received };
}

/** Resolves when `socket` has closed. */
const closed = (socket: Socket): Promise<void> =>
  socket.destroyed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));

describe('a client that hangs up after its batch started', () => {
  it.each(Object.keys(HTTP_REQUESTS))('is counted 499, its rows cancelled in the running batch (%s)', async (route) => {
    const { rows, bytes } = HTTP_REQUESTS[route]!;
    const before = await figures();
    const gate = newGate();
    const { client: socket, serverSide } = await sendOnNewConnection(bytes);
    await vi.waitFor(() => expect(gate.rows).toBe(rows), PATIENCE);
    socket.destroy();
    await closed(serverSide);
    gate.release();
    await vi.waitFor(() => expect(server.runtime.registry.resolve('gated')!.batcher.runningCount).toBe(0), PATIENCE);
    expect(moved(before, await figures())).toEqual({
      version: { 499: 1 },
      total: { 499: 1 },
      responses: { '499/http': 1 },
      // The batcher's view: the rows ran in a batch, and their results were discarded.
      outcomes: { cancelled: rows },
      batchItems: rows,
    });
  });

  it('is counted 499 over gRPC too: a ModelInfer its client cancels while its batch runs', async () => {
    const before = await figures();
    const gate = newGate();
    const type = inferenceType('ModelInferRequest');
    const call = client.client.makeUnaryRequest(
      '/inference.GRPCInferenceService/ModelInfer',
      (value: object) => Buffer.from(type.encode(type.fromObject(value)).finish()),
      (bytes: Buffer) => bytes,
      {
        model_name: 'gated',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 1] }],
        raw_input_contents: [float32Bytes([1, 2])],
      },
      (error: grpc.ServiceError | null) => void error,
    );
    await vi.waitFor(() => expect(gate.rows).toBe(2), PATIENCE);
    call.cancel();
    // The count moves when the server has read the cancel: no event says so.
    const version = server.runtime.registry.resolve('gated')!;
    await vi.waitFor(() => expect(version.batcher.runningCount).toBe(0), PATIENCE);
    gate.release();
    expect(moved(before, await figures())).toEqual({
      version: { 499: 1 },
      total: { 499: 1 },
      responses: { '499/grpc': 1 },
      outcomes: { cancelled: 2 },
      batchItems: 2,
    });
  });
});

describe('a ModelStreamInfer stream its client cancels', () => {
  it('counts 499 a request answered but held behind a slower one on the stream, never written', async () => {
    const gate = newGate();
    const fast = server.runtime.registry.resolve('fast')!;
    const before = { ...fast.responses.grpc };
    const okBefore = fast.batcher.counts.outcomes.ok;
    const call = client.client.makeBidiStreamRequest(
      '/inference.GRPCInferenceService/ModelStreamInfer',
      (value: object) => Buffer.from(value as Uint8Array),
      (bytes: Buffer) => bytes,
    );
    let messages = 0;
    call.on('data', () => messages++);
    call.on('error', () => {});
    const type = inferenceType('ModelInferRequest');
    const one = (model: string, values: number[]) =>
      type
        .encode(
          type.fromObject({
            model_name: model,
            inputs: [{ name: 'x', datatype: 'FP32', shape: [1, values.length] }],
            raw_input_contents: [float32Bytes(values)],
          }),
        )
        .finish();
    call.write(one('gated', [1]));
    await vi.waitFor(() => expect(gate.rows).toBe(1), PATIENCE);
    call.write(one('fast', [1, 2, 3]));
    // Answered by its model, held for the stream's order behind the gated one.
    await vi.waitFor(() => expect(fast.batcher.counts.outcomes.ok).toBe(okBefore + 1), PATIENCE);
    call.cancel();
    const gated = server.runtime.registry.resolve('gated')!;
    await vi.waitFor(() => expect(gated.batcher.runningCount).toBe(0), PATIENCE);
    gate.release();
    expect(messages).toBe(0);
    expect({
      200: (fast.responses.grpc['200'] ?? 0) - (before['200'] ?? 0),
      499: (fast.responses.grpc['499'] ?? 0) - (before['499'] ?? 0),
    }).toEqual({ 200: 0, 499: 1 });
  });
});

describe('a pipelined HTTP request answered behind a slower one on its connection', () => {
  // Node holds such an answer until the one before it is written (it has no socket yet): counted
  // when Fastify took it, it was 200 though a client that closed first never got it.
  const pipelined = (): Buffer =>
    Buffer.concat([
      post('/models/gated/predict', 'application/json', '{"inputs":{"x":[1]}}'),
      post('/models/fast/predict', 'application/json', '{"inputs":{"x":[1,2,3]}}'),
    ]);

  it('counts 499 when its client closes before it was written', async () => {
    const gate = newGate();
    const fast = server.runtime.registry.resolve('fast')!;
    const before = { ...fast.responses.http };
    const okBefore = fast.batcher.counts.outcomes.ok;
    const { client: socket, serverSide, received } = await sendOnNewConnection(pipelined());
    await vi.waitFor(() => expect(gate.rows).toBe(1), PATIENCE);
    await vi.waitFor(() => expect(fast.batcher.counts.outcomes.ok).toBe(okBefore + 1), PATIENCE);
    socket.destroy();
    await closed(serverSide);
    gate.release();
    expect(received()).toBe('');
    expect({
      200: (fast.responses.http['200'] ?? 0) - (before['200'] ?? 0),
      499: (fast.responses.http['499'] ?? 0) - (before['499'] ?? 0),
    }).toEqual({ 200: 0, 499: 1 });
  });

  it('counts 200 once it is written after the one before it', async () => {
    const gate = newGate();
    const fast = server.runtime.registry.resolve('fast')!;
    const before = { ...fast.responses.http };
    const okBefore = fast.batcher.counts.outcomes.ok;
    const { client: socket, received } = await sendOnNewConnection(pipelined());
    await vi.waitFor(() => expect(gate.rows).toBe(1), PATIENCE);
    await vi.waitFor(() => expect(fast.batcher.counts.outcomes.ok).toBe(okBefore + 1), PATIENCE);
    gate.release();
    await vi.waitFor(() => expect(received().split('HTTP/1.1 200').length - 1).toBe(2), PATIENCE);
    socket.destroy();
    await vi.waitFor(() => expect((fast.responses.http['200'] ?? 0) - (before['200'] ?? 0)).toBe(1), PATIENCE);
    expect((fast.responses.http['499'] ?? 0) - (before['499'] ?? 0)).toBe(0);
  });

  it('keeps one close listener on a keep-alive connection, however many answers it held', async () => {
    // 12 answers held a round, five rounds on one connection: a listener an answer would pass
    // Node's MaxListeners warning (10) in the first round and grow with every round.
    const round = Buffer.concat([
      post('/models/gated/predict', 'application/json', '{"inputs":{"x":[1]}}'),
      ...Array.from({ length: 12 }, () => post('/models/fast/predict', 'application/json', '{"inputs":{"x":[1,2,3]}}')),
    ]);
    const fast = server.runtime.registry.resolve('fast')!;
    const okBefore = fast.batcher.counts.outcomes.ok;
    const before = fast.responses.http['200'] ?? 0;
    let gate = newGate();
    const { client: socket, serverSide, received } = await sendOnNewConnection(round);
    const listeners: number[] = [];
    for (let sent = 1; sent <= 5; sent++) {
      await vi.waitFor(() => expect(fast.batcher.counts.outcomes.ok).toBe(okBefore + 12 * sent), PATIENCE);
      listeners.push(serverSide.listenerCount('close'));
      gate.release();
      await vi.waitFor(() => expect(received().split('HTTP/1.1 200').length - 1).toBe(13 * sent), PATIENCE);
      if (sent < 5) {
        gate = newGate();
        socket.write(round);
      }
    }
    socket.destroy();
    await closed(serverSide);
    expect(new Set(listeners).size).toBe(1);
    expect((fast.responses.http['200'] ?? 0) - before).toBe(60);
  });
});

describe('a client whose hang-up the server has read but not yet acted on', () => {
  // Node ends a connection as it reads the client's FIN, and says 'close' (which cancels the
  // connection's requests) a turn or more later. A batch that ends in between was written to the
  // ended connection, which took no more bytes, and counted 200. The batch here ends there:
  // released from the server's own 'end' listener, after Node's.
  it.each(Object.keys(HTTP_REQUESTS))('is counted 499, though its batch ended ok (%s)', async (route) => {
    const { rows, bytes } = HTTP_REQUESTS[route]!;
    const before = await figures();
    const gate = newGate();
    const { client: socket, serverSide, received } = await sendOnNewConnection(bytes);
    await vi.waitFor(() => expect(gate.rows).toBe(rows), PATIENCE);
    serverSide.once('end', () => gate.release());
    socket.end();
    await Promise.all([closed(socket), closed(serverSide)]);
    expect(received()).toBe('');
    expect(moved(before, await figures())).toEqual({
      version: { 499: 1 },
      total: { 499: 1 },
      responses: { '499/http': 1 },
      // The batcher's view: the rows ran and succeeded; the client got nothing.
      outcomes: { ok: rows },
      batchItems: rows,
    });
  });
});

describe('queue depth, in rows, beside the requests in flight', () => {
  it('counts a /v2 request of 3 rows running and a V1 one of 2 waiting as 3 + 2 rows, and as one request each', async () => {
    const gate = newGate();
    const v2 = fetch(`${server.url}/v2/models/gated/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"inputs":[{"name":"x","datatype":"FP32","shape":[3,1],"data":[1,2,3]}]}',
    });
    await vi.waitFor(() => expect(gate.rows).toBe(3), PATIENCE);
    const version = server.runtime.registry.resolve('gated')!;
    const admitted = version.batcher.counts.admitted;
    const v1 = fetch(`${server.url}/v1/models/gated:predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"instances":[[1],[2]]}',
    });
    await vi.waitFor(() => expect(version.batcher.counts.admitted).toBe(admitted + 2), PATIENCE);

    const text = await (await fetch(`${server.url}/metrics`)).text();
    const value = (series: string): number =>
      Number(text.match(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm'))?.[1]);
    const labels = 'model="gated",version="1"';
    expect({
      queueDepth: value(`batchline_queue_depth{${labels}}`),
      runningRows: value(`batchline_running_requests{${labels}}`),
      queued: value(`batchline_requests_in_flight{${labels},state="queued"}`),
      running: value(`batchline_requests_in_flight{${labels},state="running"}`),
    }).toEqual({ queueDepth: 2, runningRows: 3, queued: 1, running: 1 });
    // The help says what is counted: the gauge had said "Requests waiting for a batch."
    expect(text).toMatch(
      /^# HELP batchline_queue_depth Rows \(items\) waiting for a batch: a request of N rows counts N/m,
    );
    // A batch in a busy instance's mailbox has left the queue (its requests are running) but has
    // not started, and queue_depth counts its rows: the help said queued meant "none … has started".
    expect(text).toMatch(
      /^# HELP batchline_requests_in_flight .*queued \(none of its rows has left the queue\), running \(the rest, a batch in a busy instance's mailbox included/m,
    );
    const stats = (await (await fetch(`${server.url}/v1/stats`)).json()) as ServerStats;
    const entry = stats.models!.find((m) => m.name === 'gated')!;
    const { queueDepth, runningRequests } = entry.snapshot;
    expect({ queueDepth, runningRequests }).toEqual({ queueDepth: 2, runningRequests: 3 });
    expect(entry.requestsInFlight).toEqual({ queued: 1, running: 1 });

    gate.release();
    expect([(await v2).status, (await v1).status]).toEqual([200, 200]);
    const after = await (await fetch(`${server.url}/metrics`)).text();
    expect(after).toContain(`batchline_requests_in_flight{${labels},state="queued"} 0`);
    expect(after).toContain(`batchline_requests_in_flight{${labels},state="running"} 0`);
  });
});
