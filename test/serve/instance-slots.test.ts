import { afterEach, describe, expect, it } from 'vitest';
import { RealClock } from '../../src/core/real-clock.js';
import type { Outcome, Refusal } from '../../src/core/types.js';
import { InstancePool } from '../../src/model/instance-pool.js';
import type { ServedModel } from '../../src/model/load-model.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import type { ModelVersion } from '../../src/serve/model-version.js';
import { ServingRuntime } from '../../src/serve/serving-runtime.js';
import { type FakeInstance, fakeLauncher } from '../model/fake-instances.js';
import { PATIENCE_MS } from '../patience.js';

const item: ItemTensors = { x: { data: Float32Array.of(1), shape: [1] } };

/** A request's outcome, or the batcher's refusal. */
function submit(version: ModelVersion, timeoutMs?: number): Promise<Outcome<ItemTensors> | Refusal> {
  return new Promise((resolve) => {
    const submitted = version.batcher.submit('r', item, (outcome) => resolve(outcome), timeoutMs);
    if (!submitted.admitted) resolve(submitted);
  });
}

/** A served model over `pool`, as `loadModel` serves a model file on worker or process instances. */
function pooledModel(pool: InstancePool): ServedModel {
  return {
    version: 'fake',
    health: () => pool.health(),
    get ready() {
      return pool.ready;
    },
    inputs: [],
    outputs: [],
    decode: (inputs) => inputs as ItemTensors,
    runBatch: (items, instance, limits) => pool.run(instance, items, limits!),
    watchInstances: (listener) => pool.watch(listener),
    replyBody: () => '{}',
    close: () => pool.close(),
  };
}

/**
 * A version served on `instances` fake instances, in batches of one, with no simulated model time.
 * A crashed instance is relaunched after 10 ms; `holdLaunches` keeps it down until the test lets it up.
 */
async function serveOnPool(
  instances: number,
  {
    requestTimeoutMs = 5000,
    breakerFailures = 0,
    log,
    beforeServing,
  }: {
    requestTimeoutMs?: number;
    breakerFailures?: number;
    /** The server's log. */
    log?: (line: string) => void;
    /** What happens to the instances after they loaded, before the version serves them. */
    beforeServing?: (launched: FakeInstance[], holdLaunches: () => () => void) => void;
  } = {},
) {
  const { launcher, launched, state } = fakeLauncher('at once');
  pool = await InstancePool.start(launcher, instances, { firstBackoffMs: 10, sweepMs: 5 });
  beforeServing?.(launched, state.holdLaunches);
  const config = resolveOptions(
    SERVE_OPTIONS,
    {
      maxBatchSize: '1',
      batchWindowMs: '0',
      requestTimeoutMs: String(requestTimeoutMs),
      instances: String(instances),
      breakerFailures: String(breakerFailures),
      modelLatencyMs: '0',
    },
    {},
  );
  const version = new ServingRuntime(config, new RealClock(), log).attach(pooledModel(pool));
  return { version, launched, holdLaunches: state.holdLaunches };
}

/** Lets the held launches go, and resolves when instance `index` takes batches again. */
async function letUp(release: () => void, index: number): Promise<void> {
  const up = new Promise<void>((resolve) =>
    pool!.watch((event) => event.kind === 'up' && event.index === index && resolve()),
  );
  release();
  await up;
}

/** Answers `request` on `instance` once it runs there; a request answered before that (elsewhere) fails here. */
async function answerOn(instance: FakeInstance, request: Promise<unknown>): Promise<void> {
  await Promise.race([instance.running(), request]);
  expect(instance.runs).toHaveLength(1);
  instance.answer();
}

let pool: InstancePool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('the batcher schedules onto the instances that are up', () => {
  it('keeps a request queued while no instance is up (it times out there), and no batch fails or reaches the breaker', async () => {
    // A breaker that opens on the first dead batch would show one.
    const { version, launched, holdLaunches } = await serveOnPool(1, { requestTimeoutMs: 50, breakerFailures: 1 });
    const release = holdLaunches(); // the replacement stays down until the request has timed out
    launched[0]!.crash();
    expect(await submit(version)).toMatchObject({ kind: 'timeout', endedIn: 'queued' });
    expect(version.batcher.counts.batches).toBe(0);
    await letUp(release, 0);
    // Its own deadline: the version's 50 ms, which the first request needs, a stalled host can outlast.
    const answered = submit(version, PATIENCE_MS);
    await answerOn(launched[1]!, answered);
    expect(await answered).toMatchObject({ kind: 'ok' });
    expect(version.batcher.counts).toMatchObject({ batches: 1, failedBatches: 0, deadBatches: 0 });
    expect(version.batcher.breaker).toBe('closed');
  });

  it('sends every batch to the live instance while the dead one restarts, and to the replacement once it is up', async () => {
    const { version, launched, holdLaunches } = await serveOnPool(2);
    const release = holdLaunches();
    launched[0]!.crash();
    expect(pool!.health()).toMatchObject({ healthy: 1, ready: true, live: true });
    // Ten requests one after the other: all on instance 1, none failed at once by the dead one.
    for (let i = 0; i < 10; i++) {
      const answered = submit(version);
      await answerOn(launched[1]!, answered);
      expect(await answered).toMatchObject({ kind: 'ok' });
    }
    expect(version.batcher.counts).toMatchObject({ batches: 10, failedBatches: 0 });
    await letUp(release, 0);
    expect(pool!.health().instances[0]!.restarts).toBe(1);
    const answered = submit(version);
    expect(launched[2]!.runs).toHaveLength(1); // the replacement takes work again
    launched[2]!.answer();
    expect(await answered).toMatchObject({ kind: 'ok' });
  });

  it('fails only the batch whose instance crashed under it; the next request waits for the instance and is answered', async () => {
    const { version, launched, holdLaunches } = await serveOnPool(1);
    const running = submit(version);
    await launched[0]!.running();
    const release = holdLaunches();
    launched[0]!.crash();
    expect(await running).toMatchObject({
      kind: 'error',
      error: { message: expect.stringMatching(/exited \(code 1\)/) },
    });
    expect(pool!.health()).toMatchObject({ healthy: 0, ready: false, live: true });
    const waiting = submit(version);
    expect(version.batcher.queueDepth).toBe(1); // it waits for the instance, not on the dead one
    await letUp(release, 0);
    await answerOn(launched[1]!, waiting);
    expect(await waiting).toMatchObject({ kind: 'ok' });
    expect(version.batcher.counts).toMatchObject({ batches: 2, failedBatches: 1 });
  });
});

describe('the log hears what the batcher hears', () => {
  it('says why an instance that went down before its version served (while another instance warmed up, say) is out', async () => {
    const lines: string[] = [];
    const { version, launched } = await serveOnPool(2, {
      log: (line) => lines.push(line),
      beforeServing: (launched, holdLaunches) => {
        holdLaunches(); // its replacement stays down: the test does not race the backoff
        launched[0]!.crash();
      },
    });
    expect(lines).toEqual([
      'batchline serve: model=fake version=1 instance=0 down: exited (code 1); restarting in 10 ms',
    ]);
    const answered = submit(version);
    await answerOn(launched[1]!, answered); // the batcher heard it too: not on instance 0
    expect(await answered).toMatchObject({ kind: 'ok' });
  });
});
