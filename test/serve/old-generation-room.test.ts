/**
 * `batchline serve`, its models off the main thread, sets V8's old-generation limit after each
 * full collection at three times what it kept (src/serve/old-generation-room.ts): V8's own factor
 * under load (1.2–1.5) left too little room for the request bodies Node allocates outside the heap
 * between two scavenges, and nearly every scavenge started a mark-compact.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT } from '../../src/serve/old-generation-room.js';

const DIST = new URL('../../dist/src/', import.meta.url).href;

/**
 * The growing factors V8 set each limit with at each full collection of a process (running the built module:
 * npm test builds first) that calls `keepOldGenerationRoom(execArgv)` at run time, as serve does,
 * then keeps 20 MB alive and collects twice. `--trace-gc-verbose` prints each limit and its factor (after the flag's override; the line before it gives V8's own).
 */
async function factorsChosen(execArgv: readonly string[], acts: boolean): Promise<number[]> {
  const source = `
    import { keepOldGenerationRoom } from ${JSON.stringify(`${DIST}serve/old-generation-room.js`)};
    console.log('acted', keepOldGenerationRoom(${JSON.stringify(execArgv)}, undefined));
    const kept = Array.from({ length: 200_000 }, (_, i) => ({ i, name: 'item ' + i, list: [i, i + 1] }));
    globalThis.gc();
    globalThis.gc();
    console.log('kept', kept.length);
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', '--trace-gc-verbose', '--input-type=module', '--eval', source],
    { timeout: 20_000, maxBuffer: 16 * 1024 * 1024 },
  );
  expect(stdout).toContain('kept 200000');
  expect(stdout).toContain(`acted ${acts}`);
  // Only the collections after the call: the line that says it acted comes first.
  const after = stdout.slice(stdout.indexOf('acted '));
  return [...after.matchAll(/\[HeapController\] Limit: .* \(([\d.]+)\)$/gm)].map((match) => Number(match[1]));
}

describe("serve's old-generation room", () => {
  it('is three times what a full collection kept, set at run time', async () => {
    const factors = await factorsChosen([], true);
    expect(factors.length).toBeGreaterThanOrEqual(2);
    expect(new Set(factors)).toStrictEqual(new Set([1 + HEAP_GROWING_PERCENT / 100]));
  }, 30_000);

  it("is the operator's when node was given the flag", async () => {
    const factors = await factorsChosen(['--heap-growing-percent=50'], false);
    // The call did not act; node was not really given the flag here, so V8 chose its own.
    expect(factors).not.toContain(1 + HEAP_GROWING_PERCENT / 100);
  }, 30_000);
});
