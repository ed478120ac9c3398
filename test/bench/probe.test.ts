import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { probeTarget } from '../../src/bench/default-body.js';
import { tableRow } from '../reliability/table.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server whose /v1/stats is `answer`'s; its URL. */
async function serverAnswering(answer: (res: ServerResponse) => void): Promise<string> {
  server = createServer((_req, res) => answer(res));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/infer`;
}

/** The probe's result, or 'still waiting' when it has not answered in 10 s (bounded, for the test's sake). */
function boundedProbe(url: string): Promise<unknown> {
  return Promise.race([
    probeTarget(url, 1000),
    new Promise((resolve) => setTimeout(() => resolve('still waiting after 10 s'), 10_000).unref()),
  ]);
}

describe("bench's probe of GET /v1/stats (#13)", () => {
  it('gives up on an endless body after 4 MB, as watch does', async () => {
    let written = 0;
    let closed = false;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const url = await serverAnswering((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"model": ');
      // Endless, at the pace the client reads; stops when the client goes.
      const more = (): void => {
        while (!closed && written < 1 << 30) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
      };
      res.on('close', () => (closed = true));
      more();
    });
    expect(await boundedProbe(url)).toEqual({ kind: 'unknown' });
    // What the server got out before the probe hung up: 4 MB read, and what the sockets buffer.
    expect(written).toBeLessThan(16 << 20);
    tableRow(
      "#13 bench's probe of /v1/stats against an endless body",
      'cut at 4 MB (as watch); the target taken as unknown',
      `${(written / (1 << 20)).toFixed(1)} MB sent by the server before the probe hung up`,
    );
  });

  it('gives up on a body that trickles a byte every half second, within its time', async () => {
    const timers: NodeJS.Timeout[] = [];
    let trickledBytes = 0;
    const url = await serverAnswering((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const trickle = setInterval(() => {
        if (res.destroyed) return clearInterval(trickle);
        res.write(' ');
        trickledBytes++;
      }, 500);
      timers.push(trickle);
    });
    const startedMs = performance.now();
    const result = await boundedProbe(url);
    const trickledBeforeGivingUp = trickledBytes;
    for (const timer of timers) clearInterval(timer);
    expect(result).toEqual({ kind: 'unknown' });
    // Counted in the server's bytes, not in wall time: the probe's 1 s holds 2 of them, one each
    // 500 ms. A host that stalls this process fires the late timers in the order they were due, so
    // a stall cannot add bytes before the bound; a probe bound of 5 s would let about 10 through.
    expect(trickledBeforeGivingUp).toBeLessThanOrEqual(3);
    tableRow(
      "#13 bench's probe of /v1/stats trickling a byte every 0.5 s (probe bound 1 s)",
      'given up at its bound, the target taken as unknown',
      `given up after ${Math.round(performance.now() - startedMs)} ms`,
    );
  });
});

// -H 'keep-alive: timeout=5' (or expect, upgrade) is the run's to send; undici throws on it in a
// request of its own, and the probe, given the run's headers, took the target as unknown.
describe("bench's probe with the run's -H headers", () => {
  it('sends those a GET carries and leaves out the framing undici refuses', async () => {
    const { startTestServer } = await import('../serve/test-server.js');
    const { sideReadsOf } = await import('../../src/bench/side-reads.js');
    const batchline = await startTestServer({ modelLatencyMs: 0 });
    try {
      const reads = sideReadsOf({
        headers: { 'keep-alive': 'timeout=5', expect: '100-continue', 'x-tenant': 'a', 'content-type': 'text/plain' },
      });
      expect(reads.headers).toStrictEqual({ 'x-tenant': 'a' });
      expect(await probeTarget(`${batchline.url}/v1/infer`, 2000, reads)).toMatchObject({ kind: 'toy-model' });
    } finally {
      await batchline.close();
    }
  });
});
