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

  // k6's maxVUs: `-R 400 -c 4 --max-in-flight 4` against a 20 ms server said its sends "waited
  // for a free connection": none did, the cap refused them first.
  it('says sends over a --max-in-flight no higher than the connections were refused, not that they waited', () => {
    const capped = { ...plan, connections: 4, maxInFlight: 4 } as BenchPlan;
    const r = {
      ...result(400, 21.5),
      throughputRps: 171,
      requests: { sent: 514, completed: 514, ok: 514, errors: 0, dropped: 686 },
      trend: { backlogGrowth: 0, latencyGrowthMs: 4.4, meanLatencyMs: 21.7, refused: true, sustained: false },
    } as BenchResult;
    const warnings = warningsFor(capped, r);
    expect(warnings.join('\n')).not.toContain('waited for a free connection');
    expect(warnings.join('\n')).not.toContain('the server answered less than the rate');
    expect(warnings).toContain(
      '686 of 1200 scheduled sends (57.2%) were refused by --max-in-flight 4 and never sent: the run did not send the rate it was asked to (not sustained); 4 in flight at the measured mean service time of 21.5 ms carry at most ~186 req/s, under the 400 req/s target: to send it all, try --max-in-flight 13 --connections 13',
    );
    // A cap above the connections: sends beyond them did wait, as the connections' warning says.
    const waited = warningsFor({ ...capped, maxInFlight: 8 } as BenchPlan, r);
    expect(waited[0]).toContain('sends waited for a free connection');
    expect(waited).toContain(
      '686 of 1200 scheduled sends (57.2%) were refused by --max-in-flight 8 and never sent: the run did not send the rate it was asked to (not sustained)',
    );
  });

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
