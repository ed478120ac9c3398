import { describe, expect, it } from 'vitest';
import {
  compareBatchPolicies,
  failingModel,
  fixedConfigsDoingBoth,
  overload,
  poisonedItems,
} from '../../src/simulate/policy-cases.js';

/**
 * The four claims of docs/policies.md on smaller runs than `npm run bench:policies` (virtual
 * time, so the figures are the same on any machine). Service time 5 + 2n ms, one instance,
 * deadlines 200 ms, target 50 ms.
 */
describe('batching policies, proven in simulate', () => {
  it('adaptive reaches 95 % of the best fixed configuration on every load and beats aimd on the ramp and the bursty load', () => {
    const results = compareBatchPolicies(10_000);
    for (const r of results) expect(r.adaptive / r.oracle.goodputRps, r.load).toBeGreaterThanOrEqual(0.95);
    for (const r of results.slice(1)) expect(r.adaptive, r.load).toBeGreaterThan(r.aimd);
    // Measured, and stated in docs/policies.md: with one instance and 5 + 2n ms, big batches and no
    // window do as well on all three loads, so fixed configurations exist that do both too.
    expect(fixedConfigsDoingBoth(results).map((c) => c.config)).toContain('64/0');
  });

  it('under 2× overload, SLA admission refuses at arrival instead of letting admitted requests time out', () => {
    const [queue, sla] = overload(5);
    expect(sla!.timedOut / sla!.admitted).toBeLessThanOrEqual(0.01);
    expect(sla!.goodputRps).toBeGreaterThanOrEqual(queue!.goodputRps);
    // The bounded queue alone: most admitted requests wait out their deadline.
    expect(queue!.timedOut / queue!.admitted).toBeGreaterThan(0.9);
  });

  it('with 1 % poisoned items, bisecting fails no good item and runs the model fewer times than item-by-item retry', () => {
    const [bisect, items] = poisonedItems(20_000, 200);
    expect(bisect!.poisoned).toBeGreaterThan(150);
    expect(bisect!.goodItemsFailed).toBe(0);
    expect(bisect!.badItemsFailed).toBeGreaterThan(0.9 * bisect!.poisoned); // the rest expired before they ran
    expect(bisect!.isolationRuns).toBeLessThan(items!.isolationRuns);
    expect(bisect!.modelRuns).toBeLessThan(items!.modelRuns);
  });

  it('with a model failing for 5 s, the breaker opens, starts no batch while open, and closes at the first probe after recovery', () => {
    const [withBreaker, without] = failingModel(20);
    expect(withBreaker!.transitions[0]).toMatchObject({ state: 'open' });
    expect(withBreaker!.batchesWhileOpen).toBe(0);
    expect(withBreaker!.probesAfterRecovery).toBe(1);
    expect(withBreaker!.transitions.at(-1)).toMatchObject({ state: 'closed' });
    expect(withBreaker!.closedAfterRecoveryMs).toBeLessThanOrEqual(1000 + 50);
    expect(withBreaker!.modelRunsDuringOutage).toBeLessThan(without!.modelRunsDuringOutage / 5);
    expect(withBreaker!.meanFailedAnswerMs).toBeLessThan(without!.meanFailedAnswerMs);
  });
});
