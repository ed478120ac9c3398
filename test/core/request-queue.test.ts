import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QueuedRequest } from '../../src/core/queued-request.js';
import { RequestQueue } from '../../src/core/request-queue.js';
import type { PendingRequest } from '../../src/core/types.js';

type Request = PendingRequest<number, number>;

/** A request of `level` whose `input` says whether it matches (an even input matches). */
function request(sequence: number, input: number, level = 1): Request {
  const made = new QueuedRequest<number, number>(`r${sequence}`, input, undefined);
  made.sequence = sequence;
  made.priority = level;
  return made;
}

const isEven = (r: Request): boolean => (r.input as number) % 2 === 0;

describe('RequestQueue.firstWaiting', () => {
  // The deadline tracker asks it on every pass for a level's first request with the default
  // timeout; with a queue of requests carrying timeouts of their own, a walk each pass made a
  // pass per batch quadratic in the queue (batch() with a timeoutMs on every call: 27x slower).
  it('walks past a request that does not match once, not on every call', () => {
    const queue = new RequestQueue<number, number>();
    for (let s = 0; s < 1000; s++) queue.push(request(s, 1));
    let asked = 0;
    const counting = (r: Request): boolean => {
      asked++;
      return isEven(r);
    };
    for (let call = 0; call < 100; call++) expect(queue.firstWaiting(1, counting)).toBeUndefined();
    expect(asked).toBeLessThan(1000 + 2 * 100);
    queue.push(request(1000, 2));
    expect(queue.firstWaiting(1, counting)?.sequence).toBe(1000);
  });

  it('answers as a walk of the waiting requests would, whatever was pushed, taken or removed', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('push' as const), input: fc.nat(3) }),
      fc.record({ kind: fc.constant('take' as const), count: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ kind: fc.constant('remove' as const), index: fc.nat(50) }),
      fc.record({ kind: fc.constant('ask' as const) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), (steps) => {
        const queue = new RequestQueue<number, number>();
        let sequence = 0;
        for (const s of steps) {
          if (s.kind === 'push') queue.push(request(sequence++, s.input));
          else if (s.kind === 'take') for (const taken of queue.take(s.count)) taken.phase = 'running';
          else if (s.kind === 'remove') {
            const waiting = queue.waitingRequests();
            const victim = waiting[s.index % Math.max(1, waiting.length)];
            if (victim !== undefined) {
              victim.phase = 'done';
              queue.removed(victim);
            }
          } else expect(queue.firstWaiting(1, isEven)).toBe(queue.waitingRequests().find(isEven));
        }
        expect(queue.firstWaiting(1, isEven)).toBe(queue.waitingRequests().find(isEven));
      }),
    );
  });
});
