import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../serve/test-server.js';
import { openLoop, readConservation } from './load.js';
import { tableRow } from './table.js';

/** Capacity: batches of 4 every 50 ms = 80 requests a second. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ modelLatencyMs: 50, maxBatchSize: 4, maxQueueSize: 32, requestTimeoutMs: 500 });
});
afterAll(() => server.close());

describe('overload at 10× capacity (quick)', () => {
  it('answers every request exactly once with 200, 429 or 504, and conservation holds at every scrape', async () => {
    const result = await openLoop(server.url, { rate: 800, seconds: 1, connections: 64 });
    const answered = Object.entries(result.byStatus)
      .filter(([status]) => !status.startsWith('error'))
      .reduce((n, [, count]) => n + count, 0);
    expect(result.byStatus).not.toHaveProperty('error:UND_ERR_SOCKET');
    expect(answered).toBe(result.sent);
    expect(Object.keys(result.byStatus).every((status) => ['200', '429', '504'].includes(status))).toBe(true);
    expect(result.byStatus['200']).toBeGreaterThan(0);
    expect(result.byStatus['429']).toBeGreaterThan(0);
    // The server's own count: one answer per request.
    const responses = Object.values(server.runtime.stats()!.responsesByStatus).reduce((n, count) => n + count, 0);
    expect(responses).toBe(result.sent);
    // Scrapes every 50 ms, fewer when the host is busy (3 in a second at a load average of 30).
    expect(result.scrapes).toBeGreaterThan(0);
    expect(result.broken).toEqual([]);
    const end = await readConservation(server.url);
    expect(end.admitted + end.rejected).toBe(result.sent);
    tableRow(
      `overload 10× (${result.sent} requests in ${result.seconds.toFixed(1)} s against 80/s)`,
      'each answered once: 200, 429 or 504; admitted = outcomes + queued + running at every scrape',
      `${answered} of ${result.sent} answered (${Object.entries(result.byStatus)
        .map(([s, n]) => `${n} × ${s}`)
        .join(', ')}); conservation held in ${result.scrapes} of ${result.scrapes} scrapes`,
    );
  });
});
