import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { Pacer } from '../../src/bench/pacer.js';

/** A pacer whose helper thread runs, and a promise per wake. */
async function readyPacer(): Promise<{ pacer: Pacer; nextWake: () => Promise<number> }> {
  let wake: ((atMs: number) => void) | undefined;
  const pacer = Pacer.start(() => wake?.(performance.now()));
  if (pacer === undefined) throw new Error('no pacer thread could start here');
  opened.push(pacer);
  // The helper thread starts asynchronously; until then the open loop polls on its own.
  while (!pacer.ready) await new Promise((resolve) => setImmediate(resolve));
  return { pacer, nextWake: () => new Promise<number>((resolve) => (wake = resolve)) };
}

const opened: Pacer[] = [];
afterEach(() => {
  for (const pacer of opened.splice(0)) pacer.close();
});

describe('Pacer (the open loop wakes at its send times without polling)', () => {
  it('never wakes before the time it was given', async () => {
    const { pacer, nextWake } = await readyPacer();
    for (const delayMs of [0.3, 1.7, 4]) {
      const woke = nextWake();
      const fromMs = performance.now();
      pacer.wakeIn(delayMs);
      expect((await woke) - fromMs).toBeGreaterThanOrEqual(delayMs);
    }
  });

  it('a new time replaces the one it was sleeping towards', { timeout: 10_000 }, async () => {
    const { pacer, nextWake } = await readyPacer();
    const woke = nextWake();
    const fromMs = performance.now();
    pacer.wakeIn(600_000);
    pacer.wakeIn(2);
    // Had it kept the first target, this would wait ten minutes and the test time out.
    expect((await woke) - fromMs).toBeGreaterThanOrEqual(2);
  });

  it('a time already past wakes the loop at once', async () => {
    const { pacer, nextWake } = await readyPacer();
    const woke = nextWake();
    pacer.wakeIn(-5);
    await expect(woke).resolves.toBeTypeOf('number');
  });

  it('is not ready once closed, so the loop falls back to polling', async () => {
    const { pacer } = await readyPacer();
    pacer.close();
    expect(pacer.ready).toBe(false);
    pacer.close(); // twice is harmless
  });
});
