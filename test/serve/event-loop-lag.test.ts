import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './test-server.js';
import { tableRow } from '../reliability/table.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

async function lag(): Promise<Record<string, number>> {
  const text = await (await request(`${server.url}/metrics`)).body.text();
  return Object.fromEntries(
    [...text.matchAll(/^nodejs_eventloop_lag(_\w+)?_seconds (\S+)$/gm)].map((m) => [m[1] ?? '', Number(m[2])]),
  );
}

/** n timers of 10 ms one after the other; resolves with how late each fired (ms), the lag this loop saw. */
const ticks = (n: number) =>
  new Promise<number[]>((resolve) => {
    const lateMs: number[] = [];
    let last = performance.now();
    const next = (): void => {
      const now = performance.now();
      lateMs.push(Math.max(0, now - last - 10));
      last = now;
      if (lateMs.length === n) resolve(lateMs);
      else setTimeout(next, 10);
    };
    setTimeout(next, 10);
  });

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

describe('nodejs_eventloop_lag_* (#11)', () => {
  it('reads the real lag: what its own timers see when idle, not the 10 ms sampling period; the block when blocked', async () => {
    await lag(); // starts a window
    const seen = await ticks(20); // about 200 ms of an idle loop (the server runs in this process)
    const windowFromMs = performance.now(); // before the read that starts the next window
    const idle = await lag();
    // prom-client's read the lag plus 10 ms, the period of its timer. The lag itself depends on
    // the host (0.3 ms quiet, 6 ms with twenty processes on two cores, 10 at a load average of 22),
    // so the reading is judged against the lag this test's own timers saw in the same 200 ms.
    expect(idle._p50).toBeLessThan(median(seen) / 1000 + 0.005);
    const until = performance.now() + 60;
    while (performance.now() < until); // the loop blocked for 60 ms
    await ticks(3);
    const blocked = await lag();
    expect(blocked._max).toBeGreaterThan(0.04);
    // Seconds, not ms: no lag longer than the window it was seen in, plus prom-client's 10 ms (a
    // bound of 1 s failed when a host stalled the run for a second inside it: 1.03 s seen).
    expect(blocked._max).toBeLessThan((performance.now() - windowFromMs) / 1000 + 0.01);
    tableRow(
      '#11 nodejs_eventloop_lag_* on an idle server, then a 60 ms stall',
      'under the 10 ms period idle; the stall seen',
      `p50 ${(idle._p50! * 1000).toFixed(2)} ms idle (this test's timers: ${median(seen).toFixed(2)} ms late); max ${(blocked._max! * 1000).toFixed(1)} ms after the stall`,
    );
  });
});
