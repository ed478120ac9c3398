import { describe, expect, it } from 'vitest';
import { RealClock } from '../../src/core/real-clock.js';

describe('RealClock', () => {
  it('never runs a callback before its time, even armed from setImmediate with a fractional delay', async () => {
    // libuv compares a timer against its cached, whole-millisecond loop time: a plain setTimeout
    // armed late in a turn for 4.3 ms fired up to a millisecond early.
    const clock = new RealClock();
    const early: number[] = [];
    const rounds = 40;
    for (let round = 0; round < rounds; round++) {
      await new Promise<void>((resolve) =>
        setImmediate(() => {
          const atMs = clock.now() + 4.3 + (round % 7) * 0.1;
          clock.schedule(atMs, () => {
            const firedMs = clock.now();
            if (firedMs < atMs) early.push(atMs - firedMs);
            resolve();
          });
        }),
      );
    }
    expect(early).toEqual([]);
  });

  it('cancels a timer before it fires, including one re-armed for its remainder', async () => {
    const clock = new RealClock();
    let fired = 0;
    const handle = clock.schedule(clock.now() + 2, () => fired++);
    clock.cancel(handle);
    await new Promise<void>((resolve) => clock.schedule(clock.now() + 6, resolve));
    expect(fired).toBe(0);
  });
});
