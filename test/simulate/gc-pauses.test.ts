import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/rng.js';
import { gcPauseSource, meanPauseMsPerRequest } from '../../src/simulate/gc-pauses.js';
import { validateLatencyProfile } from '../../src/profile/latency-profile.js';
import { simulateWithInputs, workerModelProfile } from './helpers.js';
import { tempDir } from '../temp-dir.js';

const dir = tempDir('batchline-gc-');

describe("gcPauseSource: the main thread's GC pauses a request brings", () => {
  const draws = (pauses: Parameters<typeof gcPauseSource>[0], n: number, seed = 7): number[] => {
    const source = gcPauseSource(pauses, new SeededRandom(seed));
    return Array.from({ length: n }, () => source());
  };

  it('brings none when none were measured', () => {
    expect(draws([], 100).every((ms) => ms === 0)).toBe(true);
    expect(draws([{ kind: 'major', per_request: 0, mean_ms: 5 }], 100).every((ms) => ms === 0)).toBe(true);
  });

  it("brings a kind's pause with its measured probability and mean, the same for the same seed", () => {
    const pauses = [
      { kind: 'major', per_request: 0.02, mean_ms: 5 },
      { kind: 'minor', per_request: 0.05, mean_ms: 1 },
    ];
    const sample = draws(pauses, 50_000);
    expect(draws(pauses, 50_000)).toEqual(sample);
    const paused = sample.filter((ms) => ms > 0).length / sample.length;
    expect(paused).toBeGreaterThan(0.06);
    expect(paused).toBeLessThan(0.075);
    const meanMs = sample.reduce((sum, ms) => sum + ms, 0) / sample.length;
    expect(meanPauseMsPerRequest(pauses)).toBeCloseTo(0.15, 9);
    expect(meanMs / 0.15).toBeGreaterThan(0.9);
    expect(meanMs / 0.15).toBeLessThan(1.1);
    // Whole pauses are not averaged away: some are several times the mean.
    expect(Math.max(...sample)).toBeGreaterThan(15);
  });

  it('brings whole pauses first when a kind comes more than once a request', () => {
    expect(draws([{ kind: 'minor', per_request: 2.5, mean_ms: 1 }], 1000).every((ms) => ms > 0)).toBe(true);
  });
});

/** A worker model (a batch of n: 1 + n ms) whose real serve spent 0.8 ms a request on its main thread, `pauses` of it in GC pauses. */
let profiles = 0;
function profileWith(pauses: unknown, path: { decode_ms?: number; cores?: number } = {}): string {
  const file = join(dir, `profile-${profiles++}.json`);
  const profile = workerModelProfile({
    decode_ms: 0.3,
    check_ms: 0.1,
    encode_ms: 0.01,
    cores: 4,
    ...path,
    serve_cpu: {
      requests: 1000,
      main_ms: 0.81,
      worker_ms: 1,
      helpers_ms: 0.2,
      client_ms: 0.25,
      mean_batch: 1,
      ...(pauses === undefined ? {} : { gc_pauses: pauses }),
    },
  });
  writeFileSync(file, JSON.stringify(profile));
  return file;
}

describe('simulate stalls the main thread for its measured GC pauses', () => {
  it("keeps the main thread's CPU as measured, and delays the requests read behind a pause (and the instance they feed)", async () => {
    const common = { rate: 50, requests: 4000, maxBatchSize: 1, arrival: 'constant', seed: 3 };
    const smooth = await simulateWithInputs({ ...common, latencyProfile: profileWith(undefined) });
    // One request in 50 brings a 20 ms pause (0.4 ms a request on average, of the 0.8 measured).
    const paused = await simulateWithInputs({
      ...common,
      latencyProfile: profileWith([{ kind: 'major', per_request: 0.02, mean_ms: 20 }]),
    });
    // Requests 20 ms apart, each alone: without pauses every one takes 0.8 + 2 + 0.01 ms.
    expect(smooth.latency_ms.p99).toBeCloseTo(2.81, 1);
    // With them, the main thread reads a request in 0.4 ms, and one in 50 waits for a pause first.
    expect(paused.latency_ms.p50).toBeCloseTo(2.41, 1);
    expect(paused.latency_ms.p99).toBeGreaterThan(20);
    expect(paused.latency_ms.mean).toBeGreaterThan(smooth.latency_ms.mean);
    expect(paused.costs.given.join('\n')).toMatch(/main thread's garbage-collection pauses .*: major 0\.02 × 20 ms/);
    // The mean CPU is the same, but while a pause lasts the instance gets no requests to run.
    expect(paused.capacity_rps).toBeLessThan(smooth.capacity_rps);
    expect(paused.capacity_rps).toBeGreaterThan(0.7 * smooth.capacity_rps);
  });

  it("takes the pauses out of the main thread's measured CPU even when the steps timed alone said more", async () => {
    // Reading timed alone 0.9 ms, checking 0.1: more than the 0.8 the real serve's main thread spent.
    const report = await simulateWithInputs({
      rate: 50,
      requests: 200,
      maxBatchSize: 1,
      latencyProfile: profileWith([{ kind: 'major', per_request: 0.02, mean_ms: 20 }], { decode_ms: 0.9 }),
    });
    expect(report.costs.given.join('\n')).toMatch(/garbage-collection pauses .*: major 0\.02 × 20 ms/);
  });

  it("gives V8's helper threads their CPU in bursts, one per major collection, that hold a core", async () => {
    // One core; the helpers' 0.2 ms a request comes as 10 ms with one request in 50 (a major
    // collection) instead of with every request: the requests behind such a burst wait for the core.
    const common = { rate: 50, requests: 4000, maxBatchSize: 1, arrival: 'poisson', seed: 5 };
    const pause = { per_request: 0.02, mean_ms: 0.01 };
    const bursts = await simulateWithInputs({
      ...common,
      latencyProfile: profileWith([{ kind: 'major', ...pause }], { cores: 1 }),
    });
    const smooth = await simulateWithInputs({
      ...common,
      latencyProfile: profileWith([{ kind: 'incremental', ...pause }], { cores: 1 }),
    });
    expect(bursts.latency_ms.p99).toBeGreaterThan(smooth.latency_ms.p99 + 3);
    expect(bursts.latency_ms.p50).toBeCloseTo(smooth.latency_ms.p50, 0);
  });

  it('rejects a profile whose pauses are not a list of {kind, per_request, mean_ms}', () => {
    const profile = JSON.parse(readFileSync(profileWith([{ kind: 'major', per_request: -1, mean_ms: 2 }]), 'utf8'));
    expect(() => validateLatencyProfile(profile, 'p.json')).toThrow(/gc_pauses/);
  });
});
