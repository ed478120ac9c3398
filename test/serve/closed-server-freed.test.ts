import { createServer } from 'node:net';
import * as v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { serve } from '../../src/library/serve.js';
import { ServingRuntime } from '../../src/serve/serving-runtime.js';
import { infer, startTestServer } from './test-server.js';

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Starts a server, asks it once, scrapes its metrics and closes it; a weak reference to its runtime. */
async function serveOnce(): Promise<WeakRef<object>> {
  const server = await startTestServer();
  expect((await infer(server.url, { inputs: [0.2, 1.5, -0.3] })).status).toBe(200);
  expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
  await server.close();
  return new WeakRef(server.runtime);
}

/** Collects until every reference is cleared, or gives up after a bounded number of rounds. */
async function collected(refs: WeakRef<object>[]): Promise<number> {
  for (let round = 0; round < 20; round++) {
    // A WeakRef read in this job stays alive until it ends: collect between turns.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    if (refs.every((ref) => ref.deref() === undefined)) break;
  }
  return refs.filter((ref) => ref.deref() === undefined).length;
}

describe('a closed server leaves nothing of itself in the process', () => {
  it('its runtime (batchers, registry, metrics) can be collected once closed', async () => {
    // An embedding app or a test file starts and closes many; each one kept whole was ~0.5 MB
    // for good, held by the process-wide event-loop-lag sampler's list of listeners.
    const refs: WeakRef<object>[] = [];
    for (let i = 0; i < 3; i++) refs.push(await serveOnce());
    expect(await collected(refs)).toBe(3);
  });

  // v8.queryObjects is Node 20.13's: an older Node 20 cannot count them.
  it.skipIf(typeof v8.queryObjects !== 'function')('nor does a server that could not listen', async () => {
    // serve() on a port in use rejected, and its runtime, built before the listen, stayed on the
    // process's lag sampler for good: an app that retries ports kept one per attempt.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as { port: number }).port;
      for (let i = 0; i < 3; i++) await expect(serve({ host: '127.0.0.1', port })).rejects.toThrow(/in use/);
      expect(await liveRuntimes()).toBe(0);
    } finally {
      taken.close();
    }
  });
});

/** The ServingRuntimes still alive once garbage is collected; bounded rounds, as `collected`. */
async function liveRuntimes(): Promise<number> {
  let live = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 20 && live > 0; round++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    live = v8.queryObjects(ServingRuntime, { format: 'count' }) as number;
  }
  return live;
}
