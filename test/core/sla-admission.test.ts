import { describe, expect, it } from 'vitest';
import { forecastCompletion, type LoadView } from '../../src/core/admission.js';
import { OnlineLatencyModel } from '../../src/core/latency-estimator.js';
import { makePolicyBatcher } from './policy-harness.js';

const model = new OnlineLatencyModel({ aMs: 5, bMs: 2 });
const load = (view: Partial<LoadView>): LoadView => ({
  queueLength: 0,
  freeSlots: 0,
  instances: 1,
  running: [],
  settings: { limit: 8, windowMs: 0 },
  arrivalPerMs: 0,
  ...view,
});

describe('forecastCompletion (5 + 2n ms, limit 8)', () => {
  it('an idle instance: no wait, its own batch', () => {
    expect(forecastCompletion(load({ freeSlots: 1 }), model, 0)).toEqual({ waitMs: 0, ownMs: 7 });
  });

  it('behind a running batch and two full batches: the running one finishes, then two rounds of 21 ms', () => {
    // Running since 0 with 8 items (21 ms), now 5: 16 ms left; 19 waiting = 2 full batches + 3, so the
    // newcomer is the 4th of a batch, which starts at 16 + 2·21 = 58 ms and takes 5 + 2·4 = 13 ms.
    const view = load({ queueLength: 19, running: [{ startedAtMs: 0, size: 8 }] });
    expect(forecastCompletion(view, model, 5)).toEqual({ waitMs: 58, ownMs: 13 });
  });

  it('counts the arrivals that will join its batch before it leaves', () => {
    // 0.1 per ms over the 58 ms wait: 5 more join it, a batch of 8 (capped at the limit).
    const view = load({ queueLength: 19, running: [{ startedAtMs: 0, size: 8 }], arrivalPerMs: 0.1 });
    expect(forecastCompletion(view, model, 5)).toEqual({ waitMs: 58, ownMs: 21 });
  });

  it('two instances take two batches a round', () => {
    const view = load({
      queueLength: 32,
      instances: 2,
      running: [
        { startedAtMs: 0, size: 8 },
        { startedAtMs: 10, size: 8 },
      ],
    });
    // First free at 21 − 12 = 9 ms; 4 full batches ahead, 2 a round: 9 + 2·21 = 51 ms.
    expect(forecastCompletion(view, model, 12)).toEqual({ waitMs: 51, ownMs: 7 });
  });
});

describe('sla admission in the batcher', () => {
  it('refuses at arrival what would miss its deadline, saying predicted and allowed times and when to retry', () => {
    const { clock, answers, submitAt } = makePolicyBatcher({
      admission: 'sla',
      maxBatchSize: 4,
      batchWindowMs: 0,
      requestTimeoutMs: 40,
      latencyPrior: { aMs: 5, bMs: 2 },
    });
    for (let i = 0; i < 16; i++) submitAt(0, `r${i}`);
    clock.run();
    const admitted = answers.filter((a) => !a.kind.startsWith('rejected'));
    const refused = answers.filter((a) => a.kind === 'rejected:over_sla');
    expect(admitted.length + refused.length).toBe(16);
    // Every admitted request finishes in time; each refusal came at once and says why.
    expect(admitted.every((a) => a.kind === 'ok' && a.atMs <= 40)).toBe(true);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.atMs).toBe(0);
      expect(r.refusal).toMatchObject({ reason: 'over_sla', allowedMs: 40 });
      const refusal = r.refusal as { predictedMs: number; retryAfterMs: number };
      expect(refusal.predictedMs).toBeGreaterThan(40);
      expect(refusal.retryAfterMs).toBeGreaterThan(0);
    }
    // r0 runs alone at 0 (7 ms); then batches of 4 of 13 ms: r1–r4 by 20, r5–r8 by 33; r9 would
    // end at 46 > 40, so r9 on are refused.
    expect(admitted.map((a) => a.id)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8']);
  });
});
