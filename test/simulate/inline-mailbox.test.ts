import { describe, expect, it } from 'vitest';
import type { BatchingConfig } from '../../src/core/create-batcher.js';
import { closedLoop } from '../../src/simulate/closed-loop-probe.js';
import { runSimulation, type SimulationResult } from '../../src/simulate/run-simulation.js';
import type { ServingPathSetup } from '../../src/simulate/serving-path-model.js';
import { bareServingPath } from './helpers.js';

const batching: BatchingConfig = {
  maxBatchSize: 8,
  batchWindowMs: 100,
  maxQueueSize: 64,
  requestTimeoutMs: 1e9,
  instances: 1,
};

/**
 * An inline model over the serving path: the main thread reads a request in 0.1 ms, runs a batch
 * in 1 ms and encodes an answer in 0.01 ms; with serve's --inline-mailbox, `answersAfterRuns`.
 */
function inlinePath(answersAfterRuns: boolean): ServingPathSetup {
  return bareServingPath({
    execution: 'inline',
    admitMs: 0.1,
    answerMs: 0.01,
    batchWorkMs: () => 1,
    ...(answersAfterRuns ? { answersAfterRuns: true } : {}),
  });
}

/** `count` requests arriving together at 0, each batch's start and end and each answer's time as its client sees it. */
function burst(count: number, mailbox: number, answersAfterRuns: boolean) {
  const batches: { id: number; startMs: number; endMs: number }[] = [];
  const result: SimulationResult = runSimulation({
    batching: mailbox > 0 ? { ...batching, mailbox } : batching,
    arrivals: { next: () => 0 },
    maxRequests: count,
    arrivalsEndMs: Number.POSITIVE_INFINITY,
    serviceTime: () => 0,
    servingPath: inlinePath(answersAfterRuns),
    observers: () => [
      {
        batchFinished: (batch, nowMs) => void batches.push({ id: batch.id, startMs: batch.startedAtMs, endMs: nowMs }),
      },
    ],
  });
  return { result, batches };
}

describe("simulate's inline mailbox (serve's --inline-mailbox)", () => {
  it('runs the batches handed over before the main thread comes to them back to back, and answers them after the last', () => {
    // 16 requests at once: the 8th read (0.8 ms) fills the first batch, the 16th (1.6 ms) the
    // second, which goes to the mailbox. The main thread comes to their check phase after the
    // reads: the runs end at 2.6 and 3.6 ms, then 16 answers take 0.16 ms.
    const { result, batches } = burst(16, 3, true);
    expect(result.counts.outcomes.ok).toBe(16);
    expect(batches.map((b) => b.id)).toEqual([0, 1]);
    // The batcher ends each batch as its run returns, and the one behind starts then…
    expect(batches[0]!.endMs).toBeCloseTo(2.6, 9);
    expect(batches[1]!.startMs).toBeCloseTo(2.6, 9);
    expect(batches[1]!.endMs).toBeCloseTo(3.6, 9);
    // …but every answer is written after the second run: none reaches its client before 3.76 ms.
    const recorder = result.recorder;
    expect(recorder.latencyMaxMs).toBeCloseTo(3.76, 9);
    expect(recorder.latencySumMs / 16).toBeCloseTo(3.76, 9);
    // Each request waited from its admission (0.1 ms after the one before) until its own batch
    // started: the first batch's at 0.8 ms, the second's when the first ended (2.6 ms), not when it was handed over.
    const admittedMs = Array.from({ length: 16 }, (_, i) => 0.1 * (i + 1));
    const waitedMs = admittedMs.reduce((sum, atMs, i) => sum + (i < 8 ? 0.8 : 2.6) - atMs, 0);
    expect(recorder.queueWaitSumMs).toBeCloseTo(waitedMs, 9);
  });

  it('without it, an inline batch is answered after its own run, and the next waits for the slot', () => {
    const { result, batches } = burst(16, 0, false);
    // The first batch: dispatched at 0.8 ms, behind the eight reads already queued (to 1.6 ms),
    // then its run and its answers; the second is dispatched then and runs after.
    expect(batches[0]!.endMs).toBeCloseTo(2.68, 9);
    expect(batches[1]!.startMs).toBeCloseTo(2.68, 9);
    expect(batches[1]!.endMs).toBeCloseTo(3.76, 9);
    expect(result.recorder.latencySumMs / 16).toBeCloseTo((2.68 + 3.76) / 2, 9);
  });

  it('holds no answer past the next check phase: a run handed over while one completes goes to the next', () => {
    // A mailbox of one: the third batch fills at 2.4 ms but waits for room; the first run's end
    // (3.4 ms) hands it over, and it runs in the check phase after the one in progress.
    const { result, batches } = burst(24, 1, true);
    expect(batches.map((b) => [b.startMs, b.endMs])).toEqual([
      [expect.closeTo(0.8, 9), expect.closeTo(3.4, 9)],
      [expect.closeTo(3.4, 9), expect.closeTo(4.4, 9)],
      // The phase in progress ends with its 16 answers (4.56 ms); then the third batch's run.
      [expect.closeTo(4.4, 9), expect.closeTo(5.56, 9)],
    ]);
    // 16 answers at 4.56 ms, 8 at 5.64 (its run, then its own answers): none waits for a later run.
    expect(result.recorder.latencyMaxMs).toBeCloseTo(5.64, 9);
    expect(result.recorder.latencySumMs).toBeCloseTo(16 * 4.56 + 8 * 5.64, 9);
  });

  it('changes the capacity a closed loop measures only by where the answers go', () => {
    // On one core-free main thread everything is serial: a batch of 8 costs 8 reads, a run and 8
    // answers (0.8 + 1 + 0.08 ms) with or without the mailbox; nothing is charged twice.
    const without = closedLoop(inlinePath(false), batching, 64);
    const withMailbox = closedLoop(inlinePath(true), { ...batching, mailbox: 3 }, 64);
    expect(without.answeredRps).toBeCloseTo(8000 / 1.88, 3);
    expect(withMailbox.answeredRps).toBeCloseTo(8000 / 1.88, 3);
  });
});
