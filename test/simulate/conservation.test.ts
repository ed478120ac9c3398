import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { simulate } from './helpers.js';

const scenario = fc.record({
  maxBatchSize: fc.integer({ min: 1, max: 16 }),
  batchWindowMs: fc.constantFrom(0, 1, 2.5, 10),
  maxQueueSize: fc.integer({ min: 1, max: 64 }),
  requestTimeoutMs: fc.constantFrom(5, 30, 200, 2000),
  instances: fc.integer({ min: 1, max: 4 }),
  rate: fc.integer({ min: 10, max: 3000 }),
  arrival: fc.constantFrom('constant', 'poisson', 'bursty'),
  latency: fc.constantFrom('20', '5+2n', '1+0.25n', '0.5'),
  latencyCv: fc.constantFrom(0, 0.3),
  requests: fc.integer({ min: 1, max: 800 }),
  seed: fc.integer({ min: 0, max: 1000 }),
});

describe('conservation on random configurations', () => {
  it('every arrival gets exactly one fate, and the counts add up', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { result, report } = simulate(s, { trace: true });
        const r = report.requests;
        expect(r.arrived).toBe(s.requests);
        expect(r.admitted + r.rejected).toBe(r.arrived);
        expect(r.completed + r.expired + r.failed).toBe(r.admitted);
        expect(r.expired_in_queue + r.expired_while_running).toBe(r.expired);
        // One trace row per request, ids 0..n-1, in their arrival order.
        const rows = result.trace!;
        expect(rows.filter((row) => row !== undefined)).toHaveLength(s.requests);
        for (let i = 1; i < rows.length; i++)
          expect(rows[i]!.arrival_ms).toBeGreaterThanOrEqual(rows[i - 1]!.arrival_ms);
        for (const row of rows) {
          expect(row.end_ms).toBeGreaterThanOrEqual(row.arrival_ms);
          if (row.outcome === 'ok') expect(row.start_ms).not.toBeNull();
          if (row.outcome === 'expired') expect(row.end_ms).toBeCloseTo(row.arrival_ms + s.requestTimeoutMs, 6);
        }
        // Batches never exceed the bound, and every executed request was in one.
        const sizes = Object.keys(report.batch_size.histogram).map(Number);
        expect(Math.max(0, ...sizes)).toBeLessThanOrEqual(s.maxBatchSize);
        expect(result.counts.batchItems).toBe(rows.filter((row) => row.start_ms !== null).length);
        for (const u of report.utilization) expect(u).toBeLessThanOrEqual(1);
        // Little's law, as identities of the run.
        expect(result.recorder.inSystemAreaMs).toBeCloseTo(result.recorder.sojournSumMs, 4);
      }),
      { numRuns: 150, seed: 4 },
    );
  });
});
