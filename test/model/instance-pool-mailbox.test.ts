import { describe, expect, it } from 'vitest';
import { InstancePool } from '../../src/model/instance-pool.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { fakeLauncher } from './fake-instances.js';

const item: ItemTensors = { x: { data: Float32Array.of(1), shape: [1] } };
const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('InstancePool: a batch posted behind another (serve --pipeline)', () => {
  it('posts it at once, runs it after the one before, and counts it stuck from when that one ended', async () => {
    let nowMs = 0;
    const { launcher, launched } = fakeLauncher('at once');
    const pool = await InstancePool.start(launcher, 1, { now: () => nowMs, sweepMs: 2 });
    try {
      const first = pool.run(0, [item], { stuckAfterMs: 100 });
      nowMs = 80;
      const second = pool.run(0, [item], { stuckAfterMs: 100 });
      expect(launched[0]!.runs).toHaveLength(2); // both handed to the instance
      nowMs = 150;
      launched[0]!.answer();
      await expect(first).resolves.toHaveLength(1);
      expect(pool.health().instances[0]!.busyForMs).toBe(0); // the second starts now
      nowMs = 240; // 90 ms into its run, 160 ms after it was posted: not stuck
      await tick(20);
      expect(pool.health().instances[0]!.state).toBe('up');
      nowMs = 260;
      await expect(second).rejects.toThrow(/model instance 0 was stuck for 110 ms and was restarted/);
    } finally {
      await pool.close();
    }
  });

  it('a crash fails the batch that ran and the one behind it', async () => {
    const { launcher, launched } = fakeLauncher('after its run');
    const pool = await InstancePool.start(launcher, 1, { firstBackoffMs: 10 });
    try {
      const first = pool.run(0, [item], { stuckAfterMs: 1000 });
      const second = pool.run(0, [item], { stuckAfterMs: 1000 });
      launched[0]!.crash();
      await expect(first).rejects.toThrow(/exited \(code 1\)/);
      await expect(second).rejects.toThrow(/exited \(code 1\)/);
      expect(pool.health().instances[0]).toMatchObject({ state: 'restarting', busyForMs: undefined });
    } finally {
      await pool.close();
    }
  });
});
