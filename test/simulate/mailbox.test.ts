import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Batcher } from '../../src/core/batcher.js';
import type { BatchingConfig } from '../../src/core/create-batcher.js';
import type { Batch, BatcherObserver } from '../../src/core/types.js';
import { closedLoop } from '../../src/simulate/closed-loop-probe.js';
import { runSimulation } from '../../src/simulate/run-simulation.js';
import { tempDir } from '../temp-dir.js';
import { bareServingPath, simulateWithInputs } from './helpers.js';

const batching: BatchingConfig = {
  maxBatchSize: 8,
  batchWindowMs: 10,
  maxQueueSize: 64,
  requestTimeoutMs: 1e9,
  instances: 1,
};

/**
 * Watches what the mailbox promises at every batch start and end: an instance runs one batch at
 * a time, the requests of a batch in a mailbox count as waiting (not running), and the queue's
 * depth never passes its bound.
 */
function mailboxWatch(batcher: Batcher<number, number>, config: BatchingConfig) {
  const running = new Map<number, Batch<number, number>>();
  const handedToMailbox: Batch<number, number>[] = [];
  const watch = { mailboxBatches: 0, broken: [] as string[], runMs: [] as number[] };
  const check = (nowMs: number): void => {
    if (batcher.runningCount > config.maxBatchSize * config.instances)
      watch.broken.push(`${nowMs}: ${batcher.runningCount} running`);
    if (batcher.queueDepth > config.maxQueueSize) watch.broken.push(`${nowMs}: queue depth ${batcher.queueDepth}`);
  };
  const observer: BatcherObserver<number, number> = {
    batchStarted: (batch, nowMs) => {
      if (running.has(batch.instance)) {
        watch.mailboxBatches++;
        handedToMailbox.push(batch);
      } else running.set(batch.instance, batch);
      check(nowMs);
    },
    batchFinished: (batch, nowMs) => {
      watch.runMs.push(nowMs - batch.startedAtMs);
      running.delete(batch.instance);
      const next = handedToMailbox.findIndex((waiting) => waiting.instance === batch.instance);
      if (next >= 0) {
        const [started] = handedToMailbox.splice(next, 1);
        running.set(batch.instance, started as Batch<number, number>);
        // The batch in the mailbox starts when the one ahead of it ends.
        if (started?.startedAtMs !== nowMs)
          watch.broken.push(`${nowMs}: mailbox batch started at ${started?.startedAtMs}`);
      }
      check(nowMs);
    },
  };
  batcher.addObserver(observer);
  return watch;
}

/** An arrival every `gapMs`, the first at 0. */
function everyMs(gapMs: number): { next(): number } {
  let index = 0;
  return { next: () => index++ * gapMs };
}

describe("simulate's mailbox (serve's --pipeline)", () => {
  it('runs one batch per service time on an instance whose full batches always wait, keeping the counts the mailbox promises', () => {
    // A mailbox of one (--pipeline) or of three (--inline-mailbox): each batch's requests wait until it starts.
    for (const mailbox of [false, true, 3]) {
      let watch: ReturnType<typeof mailboxWatch> | undefined;
      const config = { ...batching, mailbox };
      const result = runSimulation({
        batching: config,
        // Twice what one instance serves (8 every 10 ms): a full batch is always waiting.
        arrivals: everyMs(1 / 1.6),
        maxRequests: 8000,
        arrivalsEndMs: Number.POSITIVE_INFINITY,
        serviceTime: () => 10,
        observers: (batcher) => {
          watch = mailboxWatch(batcher, config);
          return [];
        },
      });
      const w = watch as ReturnType<typeof mailboxWatch>;
      expect(w.broken, `mailbox ${mailbox}`).toEqual([]);
      expect(w.mailboxBatches > 0, `mailbox ${mailbox}`).toBe(mailbox !== false);
      // Every batch holds its instance one service time from its start (a mailbox batch's: the end of the one ahead).
      expect(new Set(w.runMs)).toEqual(new Set([10]));
      const { counts, endMs, recorder } = result;
      expect(counts.batchItems / counts.batches).toBe(8);
      // A request waits until its batch starts, in a mailbox too: the recorded queue waits, the
      // area under the waiting count and the requests' own start times agree (Little's law).
      expect(recorder.queueWaitSumMs / recorder.waitSumMs).toBeCloseTo(1, 9);
      expect(recorder.inQueueAreaMs / recorder.waitSumMs).toBeCloseTo(1, 9);
      // One batch of 8 per 10 ms from the first batch's start (when the 8th request arrives) to the last one's end.
      expect(counts.outcomes.ok / (endMs - 7 / 1.6)).toBeCloseTo(0.8, 6);
    }
  });

  it("is what serve does: on for instances on threads or in processes (a profile's serving path), off with --no-pipeline; inline, --inline-mailbox's", async () => {
    const dir = tempDir('batchline-mailbox-');
    const profileOf = (execution: string): string => {
      const file = join(dir, `${execution}.json`);
      writeFileSync(
        file,
        JSON.stringify({
          format: 'batchline-latency-profile/1',
          model: 'm',
          warmup: 1,
          repetitions: 1,
          points: [{ batch_size: 1, mean_ms: 2, p50_ms: 2, p90_ms: 2, min_ms: 2, max_ms: 2, cv: 0 }],
          fit: { a_ms: 1, b_ms: 1, r2: 1 },
          serving_path: {
            execution,
            wire: 'json',
            body_bytes: 100,
            decode_ms: 0,
            check_ms: 0,
            encode_ms: 0,
            run_points: [{ batch_size: 1, p50_ms: 1.9 }],
            run_fit: { a_ms: 0.9, b_ms: 1 },
            handover_fit: { a_ms: 0.1, b_ms: 0 },
            cores: 2,
          },
        }),
      );
      return file;
    };
    const mailboxOf = async (overrides: Record<string, unknown>): Promise<boolean> =>
      (await simulateWithInputs({ requests: 1, ...overrides })).config.mailbox;
    expect(await mailboxOf({})).toBe(false); // the embedded model: inline in serve
    expect(await mailboxOf({ latencyProfile: profileOf('worker') })).toBe(true);
    expect(await mailboxOf({ latencyProfile: profileOf('process') })).toBe(true);
    expect(await mailboxOf({ latencyProfile: profileOf('worker'), pipeline: false })).toBe(false);
    // Inline, serve's --inline-mailbox (3 by default) instead, unless --model-latency-ms adds a pretend accelerator's time.
    const inlineOf = async (overrides: Record<string, unknown>): Promise<number> =>
      (await simulateWithInputs({ requests: 1, latencyProfile: profileOf('inline'), ...overrides })).config
        .inline_mailbox;
    expect(await inlineOf({})).toBe(3);
    expect(await inlineOf({ inlineMailbox: 5 })).toBe(5);
    expect(await inlineOf({ modelLatencyMs: '0' })).toBe(3);
    expect(await inlineOf({ inlineMailbox: 0 })).toBe(0);
    expect(await inlineOf({ modelLatencyMs: '20' })).toBe(0);
    expect(await inlineOf({ modelLatencyMs: '0+1n' })).toBe(0);
    expect(await mailboxOf({ latencyProfile: profileOf('inline'), inlineMailbox: 0 })).toBe(false);
    expect(await mailboxOf({ latencyProfile: profileOf('worker'), inlineMailbox: 5 })).toBe(true);
    expect((await simulateWithInputs({ requests: 1, latencyProfile: profileOf('worker') })).config.inline_mailbox).toBe(
      0,
    );
    // Without a profile's serving path, the embedded model at the service time given: serve's --model-latency-ms.
    expect((await simulateWithInputs({ requests: 1 })).config.inline_mailbox).toBe(0);
  });

  it("over the serving path, an instance's answers come back in the order it ran its batches, and it is never busy more than all the time", () => {
    // A worker posts its replies on one channel, in order. The hand-over's wait under load is drawn
    // per batch: a long wait for one batch and a short one for the next must not let the next
    // batch's answers overtake it (a mailbox batch would then end before the one ahead of it).
    let draw = 0;
    const path = bareServingPath({ handoverWaitMs: () => (draw++ % 2 === 0 ? 20 : 0) });
    const finished: number[] = [];
    const config = { ...batching, mailbox: true };
    const result = runSimulation({
      batching: config,
      // Twice what the instance serves (8 in 9 ms): a full batch always waits in its mailbox.
      arrivals: everyMs(9 / 16),
      maxRequests: 4000,
      arrivalsEndMs: Number.POSITIVE_INFINITY,
      serviceTime: () => 0,
      servingPath: path,
      observers: () => [{ batchFinished: (batch) => void finished.push(batch.id) }],
    });
    expect(finished.length).toBe(result.counts.batches);
    expect(finished).toEqual([...finished].sort((a, b) => a - b));
    // The report's utilization: the instance's busy time over the run's.
    expect(result.recorder.busyMs[0]! / result.endMs).toBeLessThanOrEqual(1);
  });

  it("over the serving path, an instance's thread goes on with the batch in its mailbox while the last one's answers cross", () => {
    // A batch of 8 in 9 ms on its thread, then 3 ms waiting in the hand-over and 0.25 ms an answer
    // on the main thread: without a mailbox the instance idles 5 ms a batch, with one it never does.
    const path = bareServingPath({ handoverWaitMs: () => 3, answerMs: 0.25 });
    const without = closedLoop(path, batching, 64);
    const withMailbox = closedLoop(path, { ...batching, mailbox: true }, 64);
    expect(without.answeredRps).toBeCloseTo(8000 / (9 + 3 + 2), 6);
    expect(withMailbox.answeredRps).toBeCloseTo(8000 / 9, 6);
    // serve's batch time runs from a mailbox batch's start, the end of the one ahead.
    expect(withMailbox.meanBatchMs).toBeCloseTo(9, 6);
  });
});
