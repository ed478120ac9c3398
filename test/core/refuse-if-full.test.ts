import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/core/batcher.js';
import { WindowPolicy } from '../../src/core/policy.js';
import type { Executor } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';

/** An executor whose batches never end: what is queued stays queued. */
const NEVER: Executor<number, number> = { start: () => undefined };

function batcher(priorityLevels = 1) {
  return new Batcher<number, number>(
    new VirtualClock(),
    NEVER,
    new WindowPolicy({ maxBatchSize: 1, batchWindowMs: 0 }),
    {
      maxQueueSize: 2,
      requestTimeoutMs: 1000,
      instances: 1,
      priorityLevels,
    },
  );
}

describe('Batcher.refuseIfFull: a refusal decided before the request is decoded', () => {
  it('refuses (queue_full, counted) only when one more request would find the queue full', () => {
    const b = batcher();
    for (const id of ['running', 'a']) b.submit(id, 1, () => undefined);
    expect(b.refuseIfFull('early')).toBeUndefined();
    b.submit('b', 1, () => undefined);
    expect(b.refuseIfFull('late')).toEqual({ admitted: false, reason: 'queue_full' });
    expect(b.counts.rejected.queue_full).toBe(1);
  });

  it('with priority levels, refuses only when every level is full (the request’s level is in its body)', () => {
    const b = batcher(2);
    for (const id of ['running', 'a', 'b']) b.submit(id, 1, () => undefined, undefined, 2);
    expect(b.refuseIfFull('unknown level')).toBeUndefined();
    for (const id of ['c', 'd']) b.submit(id, 1, () => undefined, undefined, 1);
    expect(b.refuseIfFull('unknown level')?.reason).toBe('queue_full');
  });

  it('leaves a closing batcher’s refusal to submit', () => {
    const b = batcher();
    for (const id of ['running', 'a', 'b']) b.submit(id, 1, () => undefined);
    b.close();
    expect(b.refuseIfFull('x')).toBeUndefined();
  });
});
