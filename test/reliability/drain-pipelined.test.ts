import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { toyModelOnnx, writeRepository } from '../serve/repository-fixture.js';
import { runServeInProcess, type RunningServe } from './in-process-serve.js';
import { inferRequest, RawConnection } from './raw-http.js';
import { tableRow } from './table.js';

const BODY = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });

async function admittedCount(url: string): Promise<number> {
  const response = await request(`${url}/v1/stats`, { reset: true });
  return JSON.parse(await response.body.text()).snapshot.counts.admitted as number;
}

/** Waits (bounded) until the server has admitted `count` inference requests. */
async function untilAdmitted(serve: RunningServe, count: number): Promise<void> {
  for (let poll = 0; poll < 1000; poll++) if ((await admittedCount(serve.url)) >= count) return;
  throw new Error(`the server never admitted ${count} requests`);
}

describe('a drain answers every pipelined request it read (#1)', () => {
  it('answers 3 pipelined POSTs on one connection, then closes it', async () => {
    // A window longer than the test: the three wait in the queue until the drain dispatches them, so
    // all three answers are written after the signal, however long the polls below take on a busy host.
    const serve = await runServeInProcess({ modelLatencyMs: 300, batchWindowMs: 60_000, drainTimeoutMs: 5000 });
    const connection = new RawConnection(serve.port);
    await connection.write(['a', 'b', 'c'].map((id) => inferRequest(BODY, id)).join(''));
    await untilAdmitted(serve, 3);
    serve.signal('SIGTERM');
    const exchange = await connection.settle(10_000);
    await serve.done;
    expect(exchange.responses.map((r) => [r.headers['x-request-id'], r.status])).toEqual([
      ['a', 200],
      ['b', 200],
      ['c', 200],
    ]);
    // Only the last answer the server read closes the connection.
    expect(exchange.responses.map((r) => r.headers.connection)).toEqual(['keep-alive', 'keep-alive', 'close']);
    expect(exchange.ended).toBe('end');
  });

  it('answers every one of 20 connections × 4 pipelined requests with 200 or 503, counted by request id', async () => {
    const serve = await runServeInProcess({ modelLatencyMs: 100, maxBatchSize: 8, drainTimeoutMs: 250 });
    const connections = Array.from({ length: 20 }, () => new RawConnection(serve.port));
    const ids = connections.map((_, c) => Array.from({ length: 4 }, (_, r) => `c${c}-r${r}`));
    await Promise.all(
      connections.map((connection, c) => connection.write(ids[c]!.map((id) => inferRequest(BODY, id)).join(''))),
    );
    await untilAdmitted(serve, 80);
    serve.signal('SIGTERM');
    const exchanges = await Promise.all(connections.map((connection) => connection.settle(10_000)));
    await serve.done;
    const statuses = new Map<string, number[]>();
    exchanges.forEach((exchange) =>
      exchange.responses.forEach((r) =>
        statuses.set(r.headers['x-request-id']!, [...(statuses.get(r.headers['x-request-id']!) ?? []), r.status]),
      ),
    );
    for (const id of ids.flat()) expect([[200], [503]]).toContainEqual(statuses.get(id));
    expect(statuses.size).toBe(80);
    // The 250 ms drain leaves some of the 10 batches of 100 ms unfinished: both answers occur.
    const all = [...statuses.values()].flat();
    expect(all).toContain(200);
    expect(all).toContain(503);
    for (const exchange of exchanges) expect(exchange.leftover).toBe('');
    tableRow(
      '#1 drain with pipelined requests (20 connections × 4, SIGTERM, 250 ms drain)',
      'every request read answered 200 or 503 before its connection closes',
      `${statuses.size} of 80 answered (${all.filter((s) => s === 200).length} × 200, ${all.filter((s) => s === 503).length} × 503), none cut short`,
    );
  });

  it('still answers every pipelined request when a second signal cuts the drain short (#3)', async () => {
    const serve = await runServeInProcess({ modelLatencyMs: 100, maxBatchSize: 8, drainTimeoutMs: 10_000 });
    const connections = Array.from({ length: 20 }, () => new RawConnection(serve.port));
    const ids = connections.map((_, c) => Array.from({ length: 4 }, (_, r) => `c${c}-r${r}`));
    await Promise.all(
      connections.map((connection, c) => connection.write(ids[c]!.map((id) => inferRequest(BODY, id)).join(''))),
    );
    await untilAdmitted(serve, 80);
    serve.signal('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 50));
    serve.signal('SIGTERM');
    const exchanges = await Promise.all(connections.map((connection) => connection.settle(10_000)));
    await serve.done;
    const statuses = new Map<string, number[]>();
    for (const exchange of exchanges)
      for (const r of exchange.responses)
        statuses.set(r.headers['x-request-id']!, [...(statuses.get(r.headers['x-request-id']!) ?? []), r.status]);
    for (const id of ids.flat()) expect([[200], [503]]).toContainEqual(statuses.get(id));
    // The second signal came long before the 10 s drain's deadline: what was left got its 503.
    expect([...statuses.values()].flat()).toContain(503);
  });
});

describe('a drain beside a version that has no batcher (#1)', () => {
  it('drains and stops with a version whose load failed', async () => {
    const root = await writeRepository({ 'toy/1/model.onnx': toyModelOnnx(), 'broken.onnx': 'not an ONNX model' });
    const serve = await runServeInProcess({ modelRepository: root, adminToken: 'secret', drainTimeoutMs: 250 });
    const registered = await request(`${serve.url}/admin/models/broken`, {
      method: 'POST',
      headers: { authorization: 'Bearer secret', 'content-type': 'application/json' },
      body: JSON.stringify({ path: 'broken.onnx', wait: false }),
    });
    expect(registered.statusCode).toBe(202);
    await registered.body.dump();
    for (let poll = 0; poll < 1000; poll++) {
      const state = await request(`${serve.url}/v1/models/broken/versions/1`, { reset: true });
      if ((JSON.parse(await state.body.text()) as { state: string }).state === 'unavailable') break;
    }
    const connection = new RawConnection(serve.port);
    await connection.write(['a', 'b'].map((id) => inferRequest(BODY, id)).join(''));
    await untilAdmitted(serve, 2);
    serve.signal('SIGTERM');
    const exchange = await connection.settle(10_000);
    await serve.done; // threw a TypeError reading the failed version's batcher
    expect(exchange.responses.map((r) => r.status)).toEqual([200, 200]);
    expect(serve.output()).toContain('stopped; 2 ok');
  });
});
