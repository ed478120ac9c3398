import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { openLoop, readConservation } from './load.js';
import { startServeProcess, type ServeProcess } from './serve-process.js';
import { tableRow } from './table.js';

let serve: ServeProcess | undefined;
afterEach(() => {
  serve?.kill();
  serve = undefined;
});

describe('overload at 10× capacity, 10 s, against batchline serve in its own process', () => {
  it('answers every request exactly once with 200, 429 or 504, and conservation holds at every scrape', async () => {
    // Capacity: batches of 8 every 50 ms = 160 requests a second; 10× is 1,600.
    serve = await startServeProcess(['--max-batch-size', '8', '--max-queue-size', '64'], { MODEL_LATENCY_MS: '50' });
    const result = await openLoop(serve.url, { rate: 1600, seconds: 10, connections: 128 });
    const answered = Object.entries(result.byStatus)
      .filter(([status]) => !status.startsWith('error'))
      .reduce((n, [, count]) => n + count, 0);
    const stats = JSON.parse(await (await request(`${serve.url}/v1/stats`)).body.text());
    const served = Object.values(stats.responsesByStatus as Record<string, number>).reduce((n, count) => n + count, 0);
    const end = await readConservation(serve.url);
    expect(answered).toBe(result.sent);
    expect(Object.keys(result.byStatus).every((status) => ['200', '429', '504'].includes(status))).toBe(true);
    expect(served).toBe(result.sent);
    expect(end.admitted + end.rejected).toBe(result.sent);
    expect(result.broken).toEqual([]);
    tableRow(
      `overload 10× for 10 s (${result.sent} requests, ${(result.sent / result.seconds).toFixed(0)}/s against 160/s)`,
      'each answered once: 200, 429 or 504; admitted = outcomes + queued + running at every scrape',
      `${answered} answered (${Object.entries(result.byStatus)
        .map(([s, n]) => `${n} × ${s}`)
        .join(', ')}), server counted ${served}; conservation held in ${result.scrapes} of ${result.scrapes} scrapes`,
    );
  });
});
