import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { BatchingConfig } from '../../src/core/create-batcher.js';
import { closedLoop, probeConnections } from '../../src/simulate/closed-loop-probe.js';
import { bareServingPath, simulateWithInputs } from './helpers.js';
import { tempDir } from '../temp-dir.js';

const batching: BatchingConfig = {
  maxBatchSize: 8,
  batchWindowMs: 10,
  maxQueueSize: 128,
  requestTimeoutMs: 2000,
  instances: 2,
};

describe('the capacity probe: a closed loop over the serving path', () => {
  it('answers what its bottleneck allows: full batches on the instances, or the main thread', () => {
    // Two instances, a batch of 8 in 9 ms: 1,778 req/s.
    expect(closedLoop(bareServingPath({}), batching, 64).answeredRps).toBeCloseTo(16_000 / 9, 6);
    // 2 ms a request on the main thread: 500 req/s, with as many connections as one likes.
    for (const connections of [16, 64, 256])
      expect(closedLoop(bareServingPath({ admitMs: 2 }), batching, connections).answeredRps).toBeCloseTo(500, 6);
  });

  it('gives the time a batch took from start to end, waits included', () => {
    const { meanBatchMs } = closedLoop(
      bareServingPath({ handoverWaitMs: (n) => 0.5 * n }),
      { ...batching, instances: 1 },
      16,
    );
    expect(meanBatchMs).toBeCloseTo(9 + 4, 1);
  });

  it('counts nothing but the time it takes: without costs, the capacity has no bound', () => {
    expect(closedLoop(bareServingPath({ batchWorkMs: () => 0 }), batching, 64).answeredRps).toBe(
      Number.POSITIVE_INFINITY,
    );
  });

  it('uses as many connections as bench -c 64, or enough to fill every instance four times over', () => {
    expect(probeConnections({ instances: 2, maxBatchSize: 8 })).toBe(64);
    expect(probeConnections({ instances: 4, maxBatchSize: 32 })).toBe(512);
  });

  it("moves with a cost as little as the cost moves (a recorded profile of PaddleOCR's classifier, two instances)", async () => {
    // With a bisection on evenly spaced arrivals and no bound on the backlog, this profile's
    // capacity read 770 to 973 req/s as bench's CPU per request took these values (0.070 to 0.094 ms).
    const record = JSON.parse(
      readFileSync(
        fileURLToPath(new URL('../../docs/lab/fidelity/2026-12-01T08-19Z-cls.json', import.meta.url)),
        'utf8',
      ),
    ) as { profile: unknown };
    const file = join(tempDir('batchline-probe-'), 'profile.json');
    writeFileSync(file, JSON.stringify(record.profile));
    const capacities: number[] = [];
    for (const generatorCpuMs of [0.07, 0.0745, 0.08, 0.085, 0.09, 0.0941]) {
      capacities.push(
        (
          await simulateWithInputs({
            latencyProfile: file,
            instances: 2,
            maxBatchSize: 8,
            batchWindowMs: 10,
            rate: 1,
            requests: 1,
            generatorCpuMs,
          })
        ).capacity_rps,
      );
    }
    expect(Math.max(...capacities) / Math.min(...capacities)).toBeLessThan(1.03);
    // More CPU for the generator never buys capacity beyond noise of a closed loop's own.
    expect(capacities.at(-1)!).toBeLessThanOrEqual(capacities[0]! * 1.005);
  });
});
