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

/** A request of several items (as the library's calls of one turn are), which can be split. */
class ItemsRequest extends QueuedRequest<number, number> {
  constructor(
    sequence: number,
    level: number,
    public items: number[],
  ) {
    super(`r${sequence}`, items[0], undefined);
    this.sequence = sequence;
    this.priority = level;
    this.size = items.length;
  }

  splitOff(count: number): ItemsRequest {
    const rest = new ItemsRequest(this.sequence, this.priority, this.items.slice(count));
    this.items = this.items.slice(0, count);
    this.size = count;
    return rest;
  }
}

describe('RequestQueue.take with requests of several items', () => {
  it('splits a request that does not fit: the batch is full, the rest waits at the head of its level', () => {
    const queue = new RequestQueue<number, number>();
    queue.push(new ItemsRequest(0, 1, [1]));
    queue.push(new ItemsRequest(1, 1, [2, 3, 4, 5]));
    queue.push(new ItemsRequest(2, 1, [6]));
    const first = queue.take(4) as ItemsRequest[];
    expect(first.map((r) => r.items)).toEqual([[1], [2, 3, 4]]);
    expect(queue.takenItems).toBe(4);
    expect(queue.length).toBe(2);
    const second = queue.take(4) as ItemsRequest[];
    expect(second.map((r) => r.items)).toEqual([[5], [6]]);
    expect(second[0]?.sequence).toBe(1); // the rest kept its request's place
  });

  it('splits a first request larger than the batch (a limit that shrank since it grew) instead of running it whole', () => {
    const queue = new RequestQueue<number, number>();
    queue.push(new ItemsRequest(0, 1, [1, 2, 3, 4, 5, 6]));
    expect((queue.take(4) as ItemsRequest[]).map((r) => r.items)).toEqual([[1, 2, 3, 4]]);
    expect((queue.take(4) as ItemsRequest[]).map((r) => r.items)).toEqual([[5, 6]]);
    expect(queue.length).toBe(0);
  });

  it('takes the items a queue of one-item requests would, batch by batch, level by level', () => {
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('push' as const),
        size: fc.integer({ min: 1, max: 7 }),
        level: fc.integer({ min: 1, max: 2 }),
      }),
      fc.record({ kind: fc.constant('take' as const), count: fc.integer({ min: 1, max: 8 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (steps) => {
        const queue = new RequestQueue<number, number>(2);
        const reference: number[][] = [[], []];
        let sequence = 0;
        let item = 0;
        for (const s of steps) {
          if (s.kind === 'push') {
            const items = Array.from({ length: s.size }, () => item++);
            queue.push(new ItemsRequest(sequence++, s.level, items));
            reference[s.level - 1]!.push(...items);
          } else {
            const taken = (queue.take(s.count) as ItemsRequest[]).flatMap((r) => r.items);
            const expected: number[] = [];
            for (const level of reference) expected.push(...level.splice(0, s.count - expected.length));
            expect(taken).toEqual(expected);
            expect(queue.takenItems).toBe(expected.length);
          }
          expect(queue.length).toBe(reference[0]!.length + reference[1]!.length);
          expect(queue.waitingAt).toEqual([reference[0]!.length, reference[1]!.length]);
        }
      }),
    );
  });
});
