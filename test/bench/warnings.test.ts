import { describe, expect, it } from 'vitest';
import type { BenchPlan } from '../../src/bench/plan.js';
import type { BenchResult } from '../../src/bench/result.js';
import { warningsFor } from '../../src/bench/result-warnings.js';

const zero = { count: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0 };

function result(targetRps: number, serviceMeanMs: number): BenchResult {
  return {
    targetRateRps: targetRps,
    service: { ...zero, mean: serviceMeanMs },
    sendLag: zero,
    latency: zero,
    requests: { sent: 100, completed: 100, errors: 0, dropped: 0 },
    throughputRps: targetRps,
    generator: { lateSendFraction: 0, eventLoop: { p99Ms: 0, maxMs: 0 } },
  } as unknown as BenchResult;
}

describe('bench warnings', () => {
  const plan = {
    mode: 'open',
    connections: 16,
    pipelining: 1,
    maxInFlight: 1000,
    stages: undefined,
  } as unknown as BenchPlan;

  it('names the connections when they cannot carry the target rate at the measured service time', () => {
    const [warning] = warningsFor(plan, result(600, 40));
    expect(warning).toContain('16 connection slots');
    expect(warning).toContain('~400 req/s');
    expect(warning).toContain('try --connections 36');
    // The same figures come from a server that is itself the limit (its queue is the service
    // time): against serve over its capacity, following the hint raised the service time with the
    // connections, and the next run asked for more again (16, then 29, 75, 176).
    expect(warning).toContain('if the service time grows with them, the server is the limit, not the connections');
  });

  // Under 'ulimit -n 1024', 'bench -c 2000' failed half its sends on the generator's own limit,
  // and the report counted them as the server's 'other' errors without a word of whose they were.
  it("says when the sends failed on the generator's own limit of open files", () => {
    const r = {
      ...result(0, 1),
      errors: { timeout: 0, refused: 0, reset: 0, protocol: 0, other: 13229 },
      errorCauses: { other: 'connect EMFILE 127.0.0.1:9111 - Local (undefined:undefined)' },
    } as unknown as BenchResult;
    const warning = warningsFor({ ...plan, mode: 'closed', connections: 2000 } as BenchPlan, r).find((w) =>
      w.includes('EMFILE'),
    );
    expect(warning).toBe(
      "the generator ran out of open files (EMFILE, the first cause of 13229 'other' errors): those errors say nothing of the server; raise the limit (ulimit -n) or lower --connections (2000)",
    );
    expect(warningsFor(plan, result(200, 40)).join(' ')).not.toContain('EMFILE');
  });

  it('says nothing about connections when they are enough', () => {
    expect(warningsFor(plan, result(200, 40)).join(' ')).not.toContain('connection slots');
  });
});
