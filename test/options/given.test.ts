import { describe, expect, it } from 'vitest';
import { givenOptions } from '../../src/options/given.js';
import { resolveCodeOptions } from '../../src/options/code-options.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { effectiveConfig } from '../../src/serve/model-config.js';

describe('the record of the options given', () => {
  it('travels with the values through the copies the code makes of them', () => {
    const resolved = resolveOptions(SERVE_OPTIONS, { targetLatencyMs: '40' }, { BATCH_POLICY: 'fixed' });
    expect([...givenOptions(resolved)].sort()).toEqual(['batchPolicy', 'targetLatencyMs']);
    // A spread (ServingRuntime.attach, withModelLatencyDefault) and Object.assign carry it; the values stay frozen.
    for (const copy of [{ ...resolved }, Object.assign({}, resolved), { ...resolved, maxBatchSize: 4 }])
      expect([...givenOptions(copy)].sort()).toEqual(['batchPolicy', 'targetLatencyMs']);
    expect(Object.isFrozen(resolved)).toBe(true);
    // A version's own options add to the server's.
    expect([...givenOptions(effectiveConfig(resolved, { maxQueueSize: 2 }))].sort()).toEqual([
      'batchPolicy',
      'maxQueueSize',
      'targetLatencyMs',
    ]);
    expect([...givenOptions(resolveCodeOptions(SERVE_OPTIONS, { targetLatencyMs: 40 }))]).toEqual(['targetLatencyMs']);
  });

  it('is none of the values a consumer walks or sends', () => {
    const resolved = resolveOptions(SERVE_OPTIONS, { targetLatencyMs: '40' }, {});
    expect(Object.keys(resolved)).toEqual(Object.keys(SERVE_OPTIONS));
    expect(Object.keys(JSON.parse(JSON.stringify(resolved)))).toEqual(
      Object.keys(SERVE_OPTIONS).filter((key) => resolved[key as keyof typeof resolved] !== undefined),
    );
    // structuredClone (a worker's workerData) drops it: no warning is decided on such a copy.
    expect(givenOptions(structuredClone(resolved)).size).toBe(0);
  });
});
