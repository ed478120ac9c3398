import { gzipSync } from 'node:zlib';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeMsgpack } from '../../src/protocol/msgpack.js';
import { startServeProcess, type ServeProcess } from './serve-process.js';
import { tableRow } from './table.js';

/** What the normal clients got in one phase: answers, and the median time of one (ms). */
interface Phase {
  answered: number;
  p50Ms: number;
  hostile: Record<number, number>;
}

let serve: ServeProcess;
beforeAll(async () => {
  // A limit large enough for the bodies below, as an operator serving images might set it.
  serve = await startServeProcess(['--body-limit-bytes', String(64 << 20), '--max-queue-size', '1024']);
});
afterAll(() => serve.kill());

const NORMAL = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });

/**
 * 8 keep-alive clients sending normal requests back to back for `seconds`, beside `hostile`
 * clients each sending `attack` back to back: how many normal requests were answered, how fast.
 */
async function phase(
  seconds: number,
  hostile: number,
  attack?: { path: string; headers: Record<string, string>; body: Buffer },
): Promise<Phase> {
  const normal = new Pool(serve.url, { connections: 8 });
  const bad = new Pool(serve.url, { connections: Math.max(1, hostile) });
  const endAtMs = performance.now() + seconds * 1000;
  const times: number[] = [];
  const hostileStatuses: Record<number, number> = {};
  const normalClient = async (): Promise<void> => {
    while (performance.now() < endAtMs) {
      const startMs = performance.now();
      const response = await normal.request({
        path: '/v1/infer',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: NORMAL,
      });
      await response.body.dump();
      expect(response.statusCode).toBe(200);
      times.push(performance.now() - startMs);
    }
  };
  const hostileClient = async (): Promise<void> => {
    while (attack !== undefined && performance.now() < endAtMs) {
      const response = await bad.request({
        path: attack.path,
        method: 'POST',
        headers: attack.headers,
        body: attack.body,
      });
      await response.body.dump();
      hostileStatuses[response.statusCode] = (hostileStatuses[response.statusCode] ?? 0) + 1;
    }
  };
  await Promise.all([...Array.from({ length: 8 }, normalClient), ...Array.from({ length: hostile }, hostileClient)]);
  await Promise.all([normal.close(), bad.close()]);
  times.sort((a, b) => a - b);
  return { answered: times.length, p50Ms: times[Math.floor(times.length / 2)] ?? Number.NaN, hostile: hostileStatuses };
}

const fmt = (ms: number): string => ms.toFixed(1);

describe('hostile payloads beside normal traffic (#6, #7)', () => {
  it('a MessagePack body with one trailing byte costs its client a 400, not the server its main thread (#6)', async () => {
    const alone = await phase(2, 0);
    // 1 MB of bin and one byte more.
    const body = Buffer.concat([writeMsgpack({ inputs: Buffer.alloc(1 << 20, 1) }), Buffer.from([0xc0])]);
    const beside = await phase(2, 2, { path: '/v1/infer', headers: { 'content-type': 'application/msgpack' }, body });
    expect(Object.keys(beside.hostile)).toEqual(['400']);
    tableRow(
      '#6 2 clients sending 1 MB MessagePack bodies with one trailing byte, beside 8 normal clients (2 s)',
      '400 bad_msgpack at the cost of reading the body; normal requests still answered',
      `${beside.hostile[400]} × 400; normal answered ${beside.answered} (alone ${alone.answered}), p50 ${fmt(beside.p50Ms)} ms (alone ${fmt(alone.p50Ms)} ms)`,
    );
  });

  it('a gzip bomb on /v2 is inflated off the main thread, its size checked as it grows (#7)', async () => {
    const alone = await phase(2, 0);
    // 60 MiB of zeros, 60 KB of gzip: under the 64 MiB limit, and not JSON once inflated.
    const body = gzipSync(Buffer.alloc(60 << 20));
    const beside = await phase(2, 1, {
      path: '/v2/models/toy-logistic-v1/infer',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body,
    });
    expect(Object.keys(beside.hostile)).toEqual(['400']);
    tableRow(
      `#7 1 client sending ${Math.round(body.length / 1024)} KB gzip bombs (60 MiB inflated, --body-limit-bytes 64 MiB) to /v2, beside 8 normal clients (2 s)`,
      'inflated on zlib threads in 64 KB steps; 400 (not JSON); normal requests keep their latency',
      `${beside.hostile[400]} × 400; normal p50 ${fmt(beside.p50Ms)} ms (alone ${fmt(alone.p50Ms)} ms), answered ${beside.answered} (alone ${alone.answered})`,
    );
  });
});
