import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InstanceLauncher, RunLimits } from '../../src/model/instance-handle.js';
import { InstancePool } from '../../src/model/instance-pool.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { fakeLauncher } from './fake-instances.js';
import type { InstanceEvent } from '../../src/model/instance-health.js';
import { PATIENCE_MS } from '../patience.js';

const item: ItemTensors = { x: { data: Float32Array.of(1), shape: [1] } };
const LIMITS: RunLimits = { stuckAfterMs: 1000 };
/** Waits until `condition` holds (checked every 2 ms); PATIENCE_MS only guards a hang. */
async function until(condition: () => boolean): Promise<void> {
  await vi.waitFor(() => expect(condition()).toBe(true), { timeout: PATIENCE_MS, interval: 2 });
}

let pool: InstancePool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('InstancePool: a dead instance leaves the rotation (#2)', () => {
  it('tells its watcher when an instance leaves the rotation and when it is back, and refuses a batch meanwhile', async () => {
    const { launcher, launched } = fakeLauncher('at once');
    pool = await InstancePool.start(launcher, 2, { firstBackoffMs: 30 });
    const changes: [number, boolean][] = [];
    pool.watch((event) => changes.push([event.index, event.kind === 'up']));
    launched[0]!.crash();
    expect(changes).toEqual([[0, false]]);
    expect(pool.health()).toMatchObject({ healthy: 1, ready: true, live: true });
    expect(pool.health().instances[0]).toMatchObject({ state: 'restarting', consecutiveFailures: 1 });
    await expect(pool.run(0, [item], LIMITS)).rejects.toThrow(/model instance 0 cannot take a batch \(restarting\)/);
    const result = pool.run(1, [item], LIMITS);
    launched[1]!.answer();
    await expect(result).resolves.toHaveLength(1);
    await until(() => pool!.health().instances[0]!.state === 'up');
    expect(changes).toEqual([
      [0, false],
      [0, true],
    ]);
    expect(pool.health()).toMatchObject({ healthy: 2, ready: true, live: true });
    expect(pool.health().instances[0]!.restarts).toBe(1);
    const first = pool.run(0, [item], LIMITS);
    expect(launched[2]!.runs).toHaveLength(1); // the replacement takes work again
    launched[2]!.answer();
    await first;
  });

  it('fails only the batch that was running when its instance dies, and tells a new watcher which instances are down and why', async () => {
    const { launcher, launched } = fakeLauncher('at once');
    pool = await InstancePool.start(launcher, 1, { firstBackoffMs: 20 });
    const running = pool.run(0, [item], LIMITS);
    launched[0]!.crash();
    await expect(running).rejects.toThrow(/exited \(code 1\)/);
    expect(pool.health()).toMatchObject({ healthy: 0, ready: false, live: true });
    expect(pool.health().reason).toMatch(/no healthy model instance/);
    const told: InstanceEvent[] = [];
    pool.watch((event) => told.push(event));
    expect(told).toEqual([
      { kind: 'down', index: 0, why: 'exited (code 1)', failuresInARow: 1, restartInMs: 20, live: true },
    ]);
    await until(() => launched.length === 2 && pool!.health().healthy === 1);
    const next = pool.run(0, [item], LIMITS);
    launched[1]!.answer();
    await expect(next).resolves.toHaveLength(1);
  });

  it('restarts with a growing backoff while the model cannot load, and says it is not live after 3 failures in a row', async () => {
    const { launcher: launches, launched, state } = fakeLauncher('at once');
    const attemptsAtMs: number[] = [];
    let sixthLaunch!: () => void;
    const sixLaunches = new Promise<void>((resolve) => (sixthLaunch = resolve));
    const launcher: InstanceLauncher = (onExit, index) => {
      if (attemptsAtMs.push(performance.now()) === 6) sixthLaunch();
      return launches(onExit, index);
    };
    pool = await InstancePool.start(launcher, 2, { firstBackoffMs: 10 });
    state.failNext = 1000;
    const crashedAtMs = performance.now();
    launched[0]!.crash();
    await until(() => pool!.health().instances[0]!.consecutiveFailures >= 3);
    const health = pool.health();
    expect(health).toMatchObject({ ready: true, live: false, healthy: 1 });
    expect(health.reason).toMatch(
      /model instance 0 failed \d+ times in a row \(could not restart: ENOENT: the model file is gone\)/,
    );
    // Backoff doubles: 10, 20, 40, 80 ms between attempts, never less (a host's load only
    // lengthens them; a timer may fire up to ~2 ms early by libuv's whole-millisecond clock).
    await sixLaunches; // the two instances' starts, then four restarts of instance 0
    const sinceMs = [crashedAtMs, ...attemptsAtMs.slice(2)];
    const gapsMs = sinceMs.slice(1, 5).map((atMs, i) => atMs - sinceMs[i]!);
    gapsMs.forEach((gapMs, i) => expect(gapMs).toBeGreaterThanOrEqual(10 * 2 ** i - 2));
  });
});

describe('InstancePool.warmRestarts: a restarted instance is warmed before it is up again', () => {
  it('runs the warmup on the new instance (loading, taking no batch), then tells it up; a failed warmup is a failed restart', async () => {
    const { launcher, launched } = fakeLauncher('at once');
    pool = await InstancePool.start(launcher, 1, { firstBackoffMs: 10 });
    const warmups: number[] = [];
    pool.warmRestarts(async (index, run) => {
      warmups.push(index);
      await run([item, item]);
    });
    const told: InstanceEvent[] = [];
    pool.watch((event) => told.push(event));
    launched[0]!.crash();
    await until(() => launched.length === 2);
    await launched[1]!.running();
    // Its warmup batch of 2 runs: still loading, not up.
    expect(warmups).toEqual([0]);
    expect(launched[1]!.runs[0]!.items).toHaveLength(2);
    expect(pool.health().instances[0]!.state).toBe('loading');
    await expect(pool.run(0, [item], LIMITS)).rejects.toThrow(/cannot take a batch \(loading\)/);
    launched[1]!.answer();
    await until(() => pool!.health().instances[0]!.state === 'up');
    expect(told.map((event) => event.kind)).toEqual(['down', 'up']);
    const next = pool.run(0, [item], LIMITS);
    launched[1]!.answer();
    await expect(next).resolves.toHaveLength(1);

    // A warmup batch that fails: the instance is killed, and it is down again, restarting.
    launched[1]!.crash();
    await until(() => launched.length === 3);
    await launched[2]!.running();
    launched[2]!.runs.shift()!.reject(new Error('out of memory'));
    await until(() => told.length === 4);
    expect(launched[2]!.killed).toBe(true);
    expect(told[3]).toMatchObject({ kind: 'down', why: 'could not restart: out of memory', failuresInARow: 2 });
  });
});

describe('InstancePool: a stuck batch marks its instance unhealthy (#3)', () => {
  it('kills and restarts a process instance stuck past the limit; the other takes the work', async () => {
    const { launcher, launched } = fakeLauncher('at once');
    pool = await InstancePool.start(launcher, 2, { firstBackoffMs: 10, sweepMs: 5 });
    const stuck = pool.run(0, [item], { stuckAfterMs: 20 });
    await expect(stuck).rejects.toThrow(/model instance 0 was stuck for \d+ ms and was restarted/);
    expect(launched[0]!.killed).toBe(true);
    expect(pool.health().instances[0]!.lastError).toMatch(/stuck: a batch ran \d+ ms \(limit 20 ms\)/);
    const next = pool.run(1, [item], LIMITS);
    launched[1]!.answer();
    await expect(next).resolves.toHaveLength(1);
    await until(() => pool!.health().healthy === 2);
  });

  it('takes a stuck thread out of rotation and says not ready when none is healthy, ready again when it returns', async () => {
    const { launcher, launched } = fakeLauncher('after its run');
    pool = await InstancePool.start(launcher, 2, { sweepMs: 5 });
    const a = pool.run(0, [item], { stuckAfterMs: 15 });
    const b = pool.run(1, [item], { stuckAfterMs: 15 });
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

describe('InstancePool: what happens to its instances is told (the server logs it)', () => {
  it('a stuck thread: stuck with why, then up again when its run returns', async () => {
    const { launcher, launched } = fakeLauncher('after its run');
    pool = await InstancePool.start(launcher, 1, { sweepMs: 5 });
    const events: InstanceEvent[] = [];
    pool.watch((event) => events.push(event));
    const run = pool.run(0, [item], { stuckAfterMs: 15 });
    await until(() => events.length === 1);
    expect(events[0]).toMatchObject({
      kind: 'stuck',
      index: 0,
      why: expect.stringMatching(/^stuck: a batch has run \d+ ms \(limit 15 ms\)$/),
    });
    launched[0]!.answer();
    await run;
    expect(events[1]).toEqual({ kind: 'up', index: 0, restarts: 0, after: 'stuck' });
  });

  it('a crash: down with why and the backoff, then up after the restart; live turns false at the third failure in a row', async () => {
    const { launcher, launched, state } = fakeLauncher('at once');
    pool = await InstancePool.start(launcher, 1, { firstBackoffMs: 5 });
    const events: InstanceEvent[] = [];
    pool.watch((event) => events.push(event));
    state.failNext = 2;
    launched[0]!.crash();
    await until(() => events.some((event) => event.kind === 'up'));
    expect(events).toEqual([
      { kind: 'down', index: 0, why: 'exited (code 1)', failuresInARow: 1, restartInMs: 5, live: true },
      {
        kind: 'down',
        index: 0,
        why: 'could not restart: ENOENT: the model file is gone',
        failuresInARow: 2,
        restartInMs: 10,
        live: true,
      },
      {
        kind: 'down',
        index: 0,
        why: 'could not restart: ENOENT: the model file is gone',
        failuresInARow: 3,
        restartInMs: 20,
        live: false,
      },
      { kind: 'up', index: 0, restarts: 3, after: 'restart' },
    ]);
  });
});

describe('InstancePool.close', () => {
  // A restart's load was given no signal: one that never ended (an initialize that never settles)
  // outlived the pool, its thread or process left running after the model was closed.
  it('stops a restart still loading: the signal its launch was given is aborted', async () => {
    const { launcher, launched, state } = fakeLauncher('at once');
    pool = await InstancePool.start(launcher, 1, { firstBackoffMs: 1 });
    const release = state.holdLaunches();
    launched[0]!.crash();
    await until(() => state.launches === 2);
    expect(state.signals[1]?.aborted).toBe(false);
    await pool.close();
    expect(state.signals[1]?.aborted).toBe(true);
    release();
    pool = undefined;
  });

  it('kills busy processes at once, closes idle instances, and refuses what comes after', async () => {
    const { launcher, launched } = fakeLauncher('at once');
    pool = await InstancePool.start(launcher, 2);
    const busy = pool.run(0, [item], LIMITS);
    await pool.close();
    await expect(busy).rejects.toThrow(/closed/);
    expect(launched[0]!.killed).toBe(true);
    expect(launched[1]!.closed).toBe(true);
    await expect(pool.run(1, [item], LIMITS)).rejects.toThrow(/closed/);
    pool = undefined;
  });

  // A PATCH retiring a busy instance when a DELETE's drain ran out: the close fails its batch, the
  // batcher then retires the slot, and a second handle.close() took the place of the first's
  // resolver (instance-endpoint.ts), so the close, and the DELETE, never ended.
  it('closes an instance once when its slot is retired during the close (its batch failed by it)', async () => {
    const { launcher, launched } = fakeLauncher('at once');
    pool = await InstancePool.start(launcher, 2);
    const retiring = pool;
    const busy = pool.run(1, [item], LIMITS).catch(() => retiring.retire(1));
    await pool.close();
    await busy;
    expect(launched[1]!.closes).toBe(1);
    expect(launched[0]!.closes).toBe(1);
    pool = undefined;
  });
});
