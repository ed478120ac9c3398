import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TurnClock } from '../../src/library/turn-clock.js';

/** performance.now() counting its reads: 1, 2, 3… */
function countedNow(): { reads: () => number } {
  let reads = 0;
  vi.spyOn(performance, 'now').mockImplementation(() => ++reads);
  return { reads: () => reads };
}

const microtask = (): Promise<void> => new Promise<void>((resolve) => queueMicrotask(resolve));

describe('TurnClock', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('reads the clock once for a synchronous run of reads', () => {
    const clock = new TurnClock();
    const counted = countedNow();
    expect([clock.now(), clock.now(), clock.now()]).toEqual([1, 1, 1]);
    expect(counted.reads()).toBe(1);
  });

  it('reads it again after elapsed(), and again once the turn’s microtasks run', async () => {
    const clock = new TurnClock();
    countedNow();
    expect(clock.now()).toBe(1);
    clock.elapsed();
    expect([clock.now(), clock.now()]).toEqual([2, 2]);
    await microtask();
    expect([clock.now(), clock.now()]).toEqual([3, 3]);
    await microtask();
    expect(clock.now()).toBe(4);
  });

  it('forgets an instant read after elapsed() no later than the turn’s first read', async () => {
    // A batch's end reads, its pass hands out the next batch (the function ran: elapsed) and reads
    // again: a microtask queued between the two reads must see neither instant.
    const clock = new TurnClock();
    countedNow();
    expect(clock.now()).toBe(1);
    const seen: number[] = [];
    queueMicrotask(() => seen.push(clock.now()));
    clock.elapsed();
    expect(clock.now()).toBe(2);
    await microtask();
    expect(seen).toEqual([3]);
    // Cycles of read, elapsed, read in one turn: each read after its elapsed() is fresh.
    await microtask();
    const instants: number[] = [];
    for (let batch = 0; batch < 3; batch++) {
      instants.push(clock.now(), clock.now());
      clock.elapsed();
    }
    expect(instants).toEqual([4, 4, 5, 5, 6, 6]);
    await microtask();
    expect(clock.now()).toBe(7);
  });

  it('runs turnEnded once a turn, at its end and at its instant, and once more for what it started', async () => {
    countedNow();
    const seen: number[] = [];
    let again = true;
    const clock: TurnClock = new TurnClock(() => {
      seen.push(clock.now());
      // What the turn's end starts (a batch function calling its batched function) ends in a turn of its own.
      if (again) clock.endTurnLater();
      again = false;
    });
    expect(clock.now()).toBe(1);
    clock.endTurnLater(); // queued by the read already: one end a turn
    expect(seen).toEqual([]);
    await microtask();
    expect(seen).toEqual([1, 2]);
    // A turn that has not read the clock: its end reads it.
    clock.endTurnLater();
    await microtask();
    expect(seen).toEqual([1, 2, 3]);
  });
});
