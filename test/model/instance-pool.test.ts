import { afterEach, describe, expect, it } from 'vitest';
import {
  InstancePool,
  type InstanceHandle,
  type InstanceLauncher,
  type RunLimits,
} from '../../src/model/instance-pool.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';

/** An instance the test drives: it answers, crashes or hangs when told to. */
class FakeInstance implements InstanceHandle {
  readonly runs: {
    items: readonly ItemTensors[];
    resolve: (outputs: ItemTensors[]) => void;
    reject: (error: Error) => void;
  }[] = [];
  killed = false;
  closed = false;
  constructor(
    readonly name: string,
    private readonly onExit: (reason: string) => void,
    readonly killableWhileRunning: boolean,
  ) {}
  readonly pid = undefined;
  run(items: readonly ItemTensors[]): Promise<ItemTensors[]> {
    return new Promise((resolve, reject) => this.runs.push({ items, resolve, reject }));
  }
  /** Answers its oldest run. */
  answer(): void {
    const run = this.runs.shift()!;
    run.resolve(run.items.map(() => ({ y: { data: Float32Array.of(this.name.length), shape: [1] } })));
  }
  crash(): void {
    for (const run of this.runs.splice(0)) run.reject(new Error('thread exited'));
    this.onExit('code 1');
  }
  kill(): void {
    this.killed = true;
    for (const run of this.runs.splice(0)) run.reject(new Error('killed'));
    this.onExit('signal SIGKILL');
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

/** Launches FakeInstances; `failNext` makes the next launches fail to load. */
function fakeLauncher(killable: boolean) {
  const launched: FakeInstance[] = [];
  const state = { failNext: 0, launches: 0 };
  const launcher: InstanceLauncher = async (onExit) => {
    state.launches++;
    if (state.failNext > 0) {
      state.failNext--;
      throw new Error('ENOENT: the model file is gone');
    }
    const instance = new FakeInstance(`i${launched.length}`, onExit, killable);
    launched.push(instance);
    return { handle: instance, inputs: [], outputs: [] };
  };
  return { launcher, launched, state };
}

const item: ItemTensors = { x: { data: Float32Array.of(1), shape: [1] } };
const LIMITS: RunLimits = { stuckAfterMs: 1000, uselessAfterMs: 1000 };
const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits (bounded) until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await tick(2);
  expect(condition()).toBe(true);
}

let pool: InstancePool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('InstancePool: a dead instance leaves the rotation (#2)', () => {
  it('sends every batch to the live instance while the dead one restarts, and takes it back when it is up', async () => {
    const { launcher, launched } = fakeLauncher(true);
    pool = await InstancePool.start(launcher, 2, { firstBackoffMs: 30 });
    launched[0]!.crash();
    expect(pool.health()).toMatchObject({ healthy: 1, ready: true, live: true });
    expect(pool.health().instances[0]).toMatchObject({ state: 'restarting', consecutiveFailures: 1 });
    // Ten batches one after the other: all on instance 1, none failed at once by the dead one.
    for (let i = 0; i < 10; i++) {
      const result = pool.run([item], LIMITS);
      launched[1]!.answer();
      await expect(result).resolves.toHaveLength(1);
    }
    await until(() => pool!.health().instances[0]!.state === 'up');
    expect(pool.health()).toMatchObject({ healthy: 2, ready: true, live: true });
    expect(pool.health().instances[0]!.restarts).toBe(1);
    const first = pool.run([item], LIMITS);
    expect(launched[2]!.runs).toHaveLength(1); // the replacement takes work again
    launched[2]!.answer();
    await first;
  });

  it('makes a batch wait for an instance rather than fail when all are down, and fails only the batch that was running', async () => {
    const { launcher, launched } = fakeLauncher(true);
    pool = await InstancePool.start(launcher, 1, { firstBackoffMs: 20 });
    const running = pool.run([item], LIMITS);
    launched[0]!.crash();
    await expect(running).rejects.toThrow(/exited \(code 1\)/);
    expect(pool.health()).toMatchObject({ healthy: 0, ready: false, live: true });
    expect(pool.health().reason).toMatch(/no healthy model instance/);
    const waiting = pool.run([item], LIMITS);
    await until(() => launched.length === 2 && launched[1]!.runs.length === 1);
    launched[1]!.answer();
    await expect(waiting).resolves.toHaveLength(1);
  });

  it('restarts with a growing backoff while the model cannot load, and says it is not live after 3 failures in a row', async () => {
    const { launcher, launched, state } = fakeLauncher(true);
    pool = await InstancePool.start(launcher, 2, { firstBackoffMs: 10 });
    state.failNext = 1000;
    launched[0]!.crash();
    await until(() => pool!.health().instances[0]!.consecutiveFailures >= 3);
    const health = pool.health();
    expect(health).toMatchObject({ ready: true, live: false, healthy: 1 });
    expect(health.reason).toMatch(
      /model instance 0 failed \d+ times in a row \(could not restart: ENOENT: the model file is gone\)/,
    );
    // Backoff doubles: 10, 20, 40, … ms — far fewer attempts than a tight loop in the same time.
    const attempts = state.launches;
    await tick(100);
    expect(state.launches - attempts).toBeLessThan(5);
  });

  it('fails a batch that waited past its usefulness with not_ready when no instance came back', async () => {
    const { launcher, launched, state } = fakeLauncher(true);
    pool = await InstancePool.start(launcher, 1, { firstBackoffMs: 10, sweepMs: 5 });
    state.failNext = 1000;
    launched[0]!.crash();
    await expect(pool.run([item], { stuckAfterMs: 1000, uselessAfterMs: 30 })).rejects.toMatchObject({
      code: 'NOT_READY',
    });
  });
});

describe('InstancePool: a stuck batch marks its instance unhealthy (#3)', () => {
  it('kills and restarts a process instance stuck past the limit; the other takes the work', async () => {
    const { launcher, launched } = fakeLauncher(true);
    pool = await InstancePool.start(launcher, 2, { firstBackoffMs: 10, sweepMs: 5 });
    const stuck = pool.run([item], { stuckAfterMs: 20, uselessAfterMs: 20 });
    await expect(stuck).rejects.toThrow(/model instance 0 was stuck for \d+ ms and was restarted/);
    expect(launched[0]!.killed).toBe(true);
    expect(pool.health().instances[0]!.lastError).toMatch(/stuck: a batch ran \d+ ms \(limit 20 ms\)/);
    const next = pool.run([item], LIMITS);
    launched[1]!.answer();
    await expect(next).resolves.toHaveLength(1);
    await until(() => pool!.health().healthy === 2);
  });

  it('takes a stuck thread out of rotation and says not ready when none is healthy, ready again when it returns', async () => {
    const { launcher, launched } = fakeLauncher(false);
    pool = await InstancePool.start(launcher, 2, { sweepMs: 5 });
    const a = pool.run([item], { stuckAfterMs: 15, uselessAfterMs: 15 });
    const b = pool.run([item], { stuckAfterMs: 15, uselessAfterMs: 15 });
    await until(() => pool!.health().healthy === 0);
    const health = pool.health();
    expect(health).toMatchObject({ ready: false, live: false });
    expect(health.instances.map((i) => i.state)).toEqual(['stuck', 'stuck']);
    expect(health.reason).toMatch(/thread stuck inside the model/);
    expect(launched.some((instance) => instance.killed)).toBe(false); // terminating a thread inside onnxruntime aborts the process
    launched[0]!.answer();
    await a;
    expect(pool.health()).toMatchObject({ healthy: 1, ready: true });
    launched[1]!.answer();
    await b;
    expect(pool.health()).toMatchObject({ healthy: 2, ready: true, live: true });
  });
});

describe('InstancePool.close', () => {
  it('kills busy processes at once, closes idle instances, and fails what waits', async () => {
    const { launcher, launched } = fakeLauncher(true);
    pool = await InstancePool.start(launcher, 2);
    const busy = pool.run([item], LIMITS);
    await pool.close();
    await expect(busy).rejects.toThrow(/closed/);
    expect(launched[0]!.killed).toBe(true);
    expect(launched[1]!.closed).toBe(true);
    await expect(pool.run([item], LIMITS)).rejects.toThrow(/closed/);
    pool = undefined;
  });
});
