import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/core/circuit-breaker.js';
import { makePolicyBatcher } from './policy-harness.js';

/**
 * One request per batch (max batch 1, window 0), 10 ms a run, a breaker of 3 failures and 100 ms,
 * and the model down until `downUntilMs`: r0, r1 and r2 (at 0, 10, 20) fail (`OPENING`), and the
 * breaker is open from 30 until 130.
 */
function breakerScenario(downUntilMs: number) {
  const setup = makePolicyBatcher(
    { maxBatchSize: 1, batchWindowMs: 0, isolation: 'off', breakerFailures: 3, breakerRatio: 0, breakerOpenMs: 100 },
    () => 10,
  );
  setup.executor.down = (startMs) => startMs < downUntilMs;
  setup.submitAt(0, 'r0');
  setup.submitAt(10, 'r1');
  setup.submitAt(20, 'r2');
  return setup;
}

/** What the three requests that open the breaker are answered. */
const OPENING = [
  ['r0', 'error', 10],
  ['r1', 'error', 20],
  ['r2', 'error', 30],
];

describe('the circuit breaker on a virtual clock', () => {
  it('opens after 3 failed batches, answers what waits and refuses what comes, probes once, closes', () => {
    const { clock, answers, submitAt, events, batcher } = breakerScenario(45);
    submitAt(25, 'r3'); // waits behind r2: the breaker opens at 30 and answers it at once
    submitAt(40, 'r4'); // refused: open until 130
    submitAt(140, 'r5'); // half-open since 130: the probe (the model is back since 45)
    submitAt(142, 'r6'); // admitted, waits for the probe's verdict
    clock.run();
    expect(answers.map((a) => [a.id, a.kind, a.atMs])).toEqual([
      ...OPENING,
      ['r3', 'unavailable', 30],
      ['r4', 'rejected:circuit_open', 40],
      ['r5', 'ok', 150],
      ['r6', 'ok', 160],
    ]);
    expect(answers[3]!.outcome!.retryAfterMs).toBe(100);
    expect(answers[4]!.refusal).toMatchObject({ reason: 'circuit_open', retryAfterMs: 90 });
    expect(events.filter((e) => e.kind === 'breaker').map((e) => [e.atMs, e.kind === 'breaker' && e.state])).toEqual([
      [30, 'open'],
      [130, 'half_open'],
      [150, 'closed'],
    ]);
    // No batch started while it was open.
    expect(events.filter((e) => e.kind === 'batch_started' && e.atMs > 30 && e.atMs < 130)).toEqual([]);
    expect(batcher.breaker).toBe('closed');
  });

  it('opens again when the probe fails, answering what waited for it', () => {
    const { clock, answers, submitAt } = breakerScenario(145);
    for (const [at, id] of [
      [140, 'r5'],
      [142, 'r6'],
      [200, 'r7'],
      [260, 'r8'],
    ] as const)
      submitAt(at, id);
    clock.run();
    expect(answers.map((a) => [a.id, a.kind, a.atMs])).toEqual([
      ...OPENING,
      ['r5', 'error', 150], // the probe fails: open until 250
      ['r6', 'unavailable', 150],
      ['r7', 'rejected:circuit_open', 200],
      ['r8', 'ok', 270], // the next probe passes
    ]);
  });

  it('takes an arrival within a timer granularity of the reopening, for the probe, and refuses one before it', () => {
    // Open from 30 until 130. r4 at 40 is told 90 ms; a retry on a Node timer can fire up to 1 ms
    // early (libuv's loop time is whole ms): at 129.2 it was refused once more, told 1 ms.
    const { clock, answers, submitAt, events } = breakerScenario(45);
    for (const [at, id] of [
      [40, 'r4'],
      [128.9, 'early'], // more than 1 ms before: refused
      [129.2, 'retry'], // within 1 ms: queued, and run as the probe at 130, not before
    ] as const)
      submitAt(at, id);
    clock.run();
    expect(answers.map((a) => [a.id, a.kind, a.atMs])).toEqual([
      ...OPENING,
      ['r4', 'rejected:circuit_open', 40],
      ['early', 'rejected:circuit_open', 128.9],
      ['retry', 'ok', 140],
    ]);
    expect(answers[3]!.refusal).toMatchObject({ retryAfterMs: 90 });
    expect(events.filter((e) => e.kind === 'batch_started' && e.atMs > 30).map((e) => e.atMs)).toEqual([130]);
  });

  it('still refuses an arrival within that millisecond whose deadline comes by the reopening: it could only time out', () => {
    // Open from 30 until 130. Queued, these waited for a probe they could not live to see, and were
    // answered timeout (504, DeadlineExceededError) instead of circuit_open with its Retry-After.
    const { clock, answers, submitAt, batcher } = breakerScenario(45);
    submitAt(129.25, 'short', 7, 0.5); // its deadline, 129.75, comes before the reopening
    submitAt(129.5, 'edge', 8, 0.5); // at it: a deadline is handled before the window that dispatches
    submitAt(129.5, 'spare', 9, 10.5); // after it: queued, run as the probe at 130, answered at 140
    clock.run();
    expect(answers.map((a) => [a.id, a.kind, a.atMs])).toEqual([
      ...OPENING,
      ['short', 'rejected:circuit_open', 129.25],
      ['edge', 'rejected:circuit_open', 129.5],
      ['spare', 'ok', 140],
    ]);
    expect(answers[3]!.refusal).toMatchObject({ retryAfterMs: 0.75 });
    expect(answers[4]!.refusal).toMatchObject({ retryAfterMs: 0.5 });
    expect(batcher.counts.rejected.circuit_open).toBe(2);
    expect(batcher.counts.timeoutsWhileQueued).toBe(0);
  });
});

describe('CircuitBreaker', () => {
  it('opens on the failure ratio of the last batches', () => {
    const breaker = new CircuitBreaker({ failures: 0, failureRatio: 0.5, window: 4, openMs: 100 });
    expect([true, false, true].map((failed) => breaker.batchEnded(failed, false, 0))).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(breaker.batchEnded(false, false, 5)).toBe('open'); // 2 of the last 4
    expect(breaker.state(50)).toBe('open');
    expect(breaker.retryAfterMs(50)).toBe(55);
    expect(breaker.state(105)).toBe('half_open');
    expect(breaker.mayDispatch(105)).toBe(true);
    expect(breaker.dispatched(105)).toBe(true);
    expect(breaker.mayDispatch(106)).toBe(false); // one probe at a time
    expect(breaker.batchEnded(false, true, 110)).toBe('closed');
  });

  it('is off when both rules are', () => {
    const breaker = new CircuitBreaker({ failures: 0, failureRatio: 0, window: 2, openMs: 100 });
    for (let i = 0; i < 10; i++) expect(breaker.batchEnded(true, false, i)).toBeUndefined();
  });
});
