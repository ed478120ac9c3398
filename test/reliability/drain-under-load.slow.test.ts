import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { PipeliningClient } from './load.js';
import { startServeProcess, type ServeProcess } from './serve-process.js';
import { tableRow } from './table.js';

let serve: ServeProcess | undefined;
afterEach(() => {
  serve?.kill();
  serve = undefined;
});

const BODY = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });

/** A keep-alive client: one request after another on its connection until one gets no answer. */
async function keepAliveClient(
  pool: Pool,
  prefix: string,
  answers: Map<string, number[]>,
  sent: string[],
  stop: () => boolean,
): Promise<void> {
  for (let i = 0; !stop(); i++) {
    const id = `${prefix}-${i}`;
    sent.push(id);
    try {
      const response = await pool.request({
        path: '/v1/infer',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        body: BODY,
      });
      await response.body.dump();
      answers.set(id, [...(answers.get(id) ?? []), response.statusCode]);
    } catch {
      return; // the server closed the connection before reading it, or refused a new one
    }
  }
}

describe('a drain under load: keep-alive and pipelining clients, a real SIGTERM', () => {
  it('answers every request the server read with 200 or 503, exactly once, counted by request id', async () => {
    serve = await startServeProcess(['--max-batch-size', '8', '--drain-timeout-ms', '400', '--log-requests'], {
      MODEL_LATENCY_MS: '20',
    });
    const answers = new Map<string, number[]>();
    const sent: string[] = [];
    let stopped = false;
    const pools = Array.from({ length: 16 }, () => new Pool(serve!.url, { connections: 1, pipelining: 1 }));
    const keepAlive = pools.map((pool, i) => keepAliveClient(pool, `ka${i}`, answers, sent, () => stopped));
    const pipelining = Array.from({ length: 16 }, (_, i) => new PipeliningClient(serve!.port, `pl${i}`, 4, BODY));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    serve.child.kill('SIGTERM');
    const exit = await serve.exited;
    stopped = true;
    for (const client of pipelining) client.stop();
    await Promise.all([...keepAlive, ...pipelining.map((client) => client.done)]);
    await Promise.all(pools.map((pool) => pool.destroy()));
    for (const client of pipelining) {
      sent.push(...client.sent);
      for (const [id, statuses] of client.answers) answers.set(id, statuses);
    }
    // What the server read: every request it logged as incoming (Fastify's log, keyed by the request id).
    const read = new Set(
      [...serve.output().matchAll(/"reqId":"([^"]+)"[^\n]*"msg":"incoming request"/g)].map((match) => match[1]!),
    );
    const readButUnanswered = [...read].filter((id) => !answers.has(id));
    const twice = [...answers].filter(([, statuses]) => statuses.length !== 1);
    const statuses = [...answers.values()].flat();
    const count = (status: number): number => statuses.filter((s) => s === status).length;
    expect(exit.code).toBe(0);
    expect(read.size).toBeGreaterThan(100);
    expect(readButUnanswered).toEqual([]);
    expect(twice).toEqual([]);
    expect(statuses.every((status) => status === 200 || status === 503)).toBe(true);
    expect(count(503)).toBeGreaterThan(0);
    tableRow(
      `drain under load (16 keep-alive + 16 pipelining ×4 clients, SIGTERM, 400 ms drain)`,
      'every request the server read answered 200 or 503, once; exit 0',
      `${read.size} read, ${answers.size} answered (${count(200)} × 200, ${count(503)} × 503), 0 read but unanswered; ${sent.length - answers.size} sent after their connection closed; exit ${exit.code}`,
    );
  });
});
