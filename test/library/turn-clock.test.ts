import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { batch } from '../../src/index.js';
import { TurnClock } from '../../src/library/turn-clock.js';

/** performance.now() counting its reads: 1, 2, 3… */
function countedNow(): { reads: () => number } {
  let reads = 0;
  vi.spyOn(performance, 'now').mockImplementation(() => ++reads);
  return { reads: () => reads };
}

const microtask = (): Promise<void> => new Promise<void>((resolve) => queueMicrotask(resolve));
/** Once the turn's microtasks and ticks have all run. */
const afterTheTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

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

  it('runs turnEnded once a turn, at its first microtask, and once more for what it started', async () => {
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
    clock.endTurnLater();
    clock.endTurnLater(); // one end a turn
    expect(seen).toEqual([]);
    await microtask();
    // Its end reads the clock again (2: the caller's code ran since the turn's read), as does the end it queued.
    expect(seen).toEqual([2, 3]);
  });

  it('runs turnEnded after all of the turn’s microtasks when asked, as dataloader dispatches', async () => {
    countedNow();
    const seen: number[] = [];
    const clock: TurnClock = new TurnClock(() => seen.push(clock.now()));
    clock.endTurnLater(true);
    // Microtasks queued in the turn, and those they queue, run before its end.
    for (let awaits = 0; awaits < 5; awaits++) await microtask();
    expect(seen).toEqual([]);
    await afterTheTurn();
    expect(seen).toEqual([1]);
  });
});

describe("batch() on a TurnClock: the caller's code between two reads", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("takes the clock again when the caller's code ran: a call after stats() and 150 ms of work arrives then", async () => {
    // The instant a read of stats() took was kept for the rest of the turn: the call arrived
    // 150 ms in the past, and was refused as past its 100 ms deadline the moment its batch ended.
    let nowMs = 1000;
    vi.spyOn(performance, 'now').mockImplementation(() => nowMs);
    const doubled = batch(async (items: number[]) => items.map((x) => 2 * x), {
      requestTimeoutMs: 100,
      batchWindowMs: 0,
    });
    try {
      doubled.stats();
      nowMs += 150; // the caller's synchronous work
      expect(await doubled(10)).toBe(20);
      // Its latency is from when it was made: 150 ms in the past, it was 150.
      nowMs += 1;
      const stats = doubled.stats();
      expect(stats.counts.outcomes).toMatchObject({ ok: 1, timeout: 0 });
      expect(stats.latencyMs.max).toBeLessThan(1);
    } finally {
      await doubled.close({ drainMs: 0 });
    }
  });

  it("starts a batch when it starts, not at the turn's first read: the function's time is its own", async () => {
    // AIMD read a 3 ms function as 24 ms when a slow first stats() came before the call.
    let nowMs = 1000;
    vi.spyOn(performance, 'now').mockImplementation(() => nowMs);
    const slow = batch(
      async (items: number[]) => {
        nowMs += 3; // the function's own time
        return items;
      },
      { batchWindowMs: 0 },
    );
    try {
      slow.stats();
      nowMs += 20; // stats() was slow (its first call compiles)
      await slow(1);
      // Arrival to answer: the function's 3 ms, not 23.
      expect(slow.stats().latencyMs.max).toBe(3);
    } finally {
      await slow.close({ drainMs: 0 });
    }
  });
});
