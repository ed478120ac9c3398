import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { simulateMain } from '../../src/commands/simulate-main.js';
import { tempDir } from '../temp-dir.js';
import { simulate, simulateOptions, simulateWithInputs } from './helpers.js';

const dir = tempDir('batchline-priorities-');

/** 600 req/s against 533 req/s of capacity, a third of it at level 1: level 2 absorbs the overload. */
const overloaded = {
  rate: 600,
  requests: 6000,
  latencyMs: 15,
  maxBatchSize: 8,
  requestTimeoutMs: 100,
  priorityLevels: 2,
  priorityMix: '1:1,2:2',
};

describe('simulate with priority levels', () => {
  it('serves level 1 first under overload: level 2 alone waits and expires, at its deadline', () => {
    const { report } = simulate(overloaded);
    const [one, two] = report.priorities!.by_level;
    expect(report.priorities!.default_level).toBe(2);
    expect(one!.arrived + two!.arrived).toBe(6000);
    expect(one!.arrived / 6000).toBeCloseTo(1 / 3, 1);
    expect([one!.expired, one!.rejected, one!.completed]).toStrictEqual([0, 0, one!.arrived]);
    expect(two!.expired).toBeGreaterThan(0);
    // Level 1 waits at most a batch in progress and its own window.
    expect(one!.latency_ms.max).toBeLessThanOrEqual(15 + 10 + 15);
    expect(two!.latency_ms.p99).toBeGreaterThan(one!.latency_ms.p99);
    expect(two!.latency_ms.max).toBeLessThanOrEqual(100);
    expect(one!.completed + two!.completed).toBe(report.requests.completed);
  });

  it('draws the mix from its own stream: the arrival times and the whole run stay as the seed gives them', () => {
    const plain = simulate({ ...overloaded, priorityMix: undefined, priorityLevels: undefined }).report;
    const mixed = simulate(overloaded).report;
    expect(mixed.requests.arrived).toBe(plain.requests.arrived);
    expect(mixed.offered_rps).toBe(plain.offered_rps);
    expect(plain.priorities).toBeUndefined();
    expect(simulate(overloaded).report).toStrictEqual(mixed);
  });

  it('writes each request’s level in --trace, and replays a trace with its levels', async () => {
    const tracePath = join(dir, 'trace.jsonl');
    const stdout = { write: (_chunk: string) => {} };
    await simulateMain({
      options: simulateOptions({ ...overloaded, trace: tracePath }),
      given: new Set([...Object.keys(overloaded), 'trace']),
      sweep: undefined,
      stdout,
      workers: 1,
    });
    const rows = readFileSync(tracePath, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(new Set(rows.map((row) => row.priority))).toStrictEqual(new Set([1, 2]));
    const original = simulate(overloaded).report;
    const replayed = await simulateWithInputs({
      arrivals: tracePath,
      latencyMs: 15,
      maxBatchSize: 8,
      requestTimeoutMs: 100,
      priorityLevels: 2,
    });
    expect(replayed.priorities).toStrictEqual(original.priorities);
  });

  it('refuses a mix that does not parse or names a level past --priority-levels', () => {
    expect(() => simulate({ priorityMix: '1:20,2:80' })).toThrow(
      '--priority-mix: level 2 is past --priority-levels (0); set --priority-levels 2 or more',
    );
    for (const bad of ['1', '1:0', '0:5', '1:2,1:3', 'high:1'])
      expect(() => simulate({ priorityLevels: 2, priorityMix: bad }), bad).toThrow(/--priority-mix: got/);
  });
});
