/** A code model run inline (`execution: 'inline'`): instances on the server's own thread, each with a module of its own. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { InstanceEvent } from '../../src/model/instance-health.js';
import { loadModel } from '../../src/model/load-model.js';
import { CODE_MODELS, codeModelDir } from './code-model-fixtures.js';

const dir = await codeModelDir({
  'double.mjs': CODE_MODELS.double,
  // The factor set by initialize in module state, as models.md's example keeps it.
  'scale.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
let factor;
export function initialize({ config }) { factor = config.parameters.factor; }
export function execute(items) { return items.map(({ x }) => ({ y: [x[0] * factor] })); }
`,
  // An item of 66 never gets its answer: the batch's promise never settles.
  'stalls.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export let initialized = 0;
export function initialize() { initialized++; }
export function execute(items) {
  if (items.some(({ x }) => x[0] === 66)) return new Promise(() => {});
  return items.map(({ x }) => ({ y: [x[0] + initialized / 10] }));
}
`,
  // Its finalize never settles; another's throws.
  'finalize-stalls.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) { return items.map(({ x }) => ({ y: x })); }
export function finalize() { return new Promise(() => {}); }
`,
  'finalize-throws.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) { return items.map(({ x }) => ({ y: x })); }
export async function finalize() { throw new Error('could not free the GPU'); }
`,
  // Instance 1 cannot start; instance 0 says when it is finalized.
  'second-fails.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize({ instance }) { if (instance === 1) throw new Error('no second GPU'); }
export function execute(items) { return items; }
export function finalize() { globalThis.finalizedInstances = (globalThis.finalizedInstances ?? 0) + 1; }
`,
  'initialize-stalls.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize() {
  globalThis.initializeStarted?.();
  return new Promise(() => {});
}
export function execute(items) { return items; }
`,
});
const item = (x: number[]) => ({ x: { data: Float32Array.from(x), shape: [x.length] } });

describe('a code model inline', () => {
  it('gives each instance a module of its own: the state its initialize set is its own', async () => {
    const model = await loadModel(join(dir, 'double.mjs'), { execution: 'inline', instances: 2 });
    try {
      // `double` keeps the instance initialize was told in module state: one shared module answered 1 twice (or 0).
      const first = await model.runBatch([item([1, 2, 3])], 0);
      const second = await model.runBatch([item([1, 2, 3])], 1);
      expect(Array.from((first[0] as any).instance.data)).toEqual([0]);
      expect(Array.from((second[0] as any).instance.data)).toEqual([1]);
      expect(model.health().instances.map((instance) => instance.state)).toEqual(['up', 'up']);
      // Its runs start at once: --pipeline gives it no mailbox (a batch there would run beside the one it waits for).
      expect(model.runsOnMainThread).toBe(true);
    } finally {
      await model.close();
    }
  });

  it("keeps two versions of one file apart: a later version's initialize does not change an earlier one's state", async () => {
    const path = join(dir, 'scale.mjs');
    const v10 = await loadModel(path, { execution: 'inline', version: '10', config: { parameters: { factor: 5 } } });
    const v11 = await loadModel(path, { execution: 'inline', version: '11', config: { parameters: { factor: 7 } } });
    try {
      expect(Array.from(((await v10.runBatch([item([3])], 0))[0] as any).y.data)).toEqual([15]);
      expect(Array.from(((await v11.runBatch([item([3])], 0))[0] as any).y.data)).toEqual([21]);
    } finally {
      await Promise.all([v10.close(), v11.close()]);
    }
  });

  it('abandons a batch stuck past its limit and initializes its instance again, which then serves', async () => {
    const model = await loadModel(join(dir, 'stalls.mjs'), { execution: 'inline' });
    try {
      const events: InstanceEvent[] = [];
      let upAgain!: () => void;
      const cameBack = new Promise<void>((resolve) => (upAgain = resolve));
      model.watchInstances!((event) => {
        events.push(event);
        if (event.kind === 'up') upAgain();
      });
      // It never settled, and the version took no batch again (its one slot held for good).
      await expect(model.runBatch([item([66])], 0, { stuckAfterMs: 20 })).rejects.toThrow(/was stuck for \d+ ms/);
      await cameBack;
      expect(events.map((event) => event.kind)).toEqual(['down', 'up']);
      expect(events[0]).toMatchObject({ why: expect.stringMatching(/^stuck: a batch ran \d+ ms \(limit 20 ms\)$/) });
      // A fresh copy of the module, initialized once: the stuck one's state is not inherited.
      expect(Array.from(((await model.runBatch([item([1])], 0))[0] as any).y.data)).toEqual([Math.fround(1.1)]);
      expect(model.health().instances[0]).toMatchObject({ state: 'up', restarts: 1 });
    } finally {
      await model.close();
    }
  });

  it("closes when its finalize never settles (after a thread's grace) or throws: a server's stop is not held, nor ended", async () => {
    // It awaited finalize: a server's stop waited for good, and a throw would reach the server's thread unhandled.
    for (const file of ['finalize-stalls.mjs', 'finalize-throws.mjs']) {
      const model = await loadModel(join(dir, file), { execution: 'inline' });
      await expect(model.close()).resolves.toBeUndefined();
    }
  });

  it('finalizes the instances that started when another cannot: a failed load leaves nothing running', async () => {
    const global = globalThis as { finalizedInstances?: number };
    global.finalizedInstances = 0;
    try {
      await expect(loadModel(join(dir, 'second-fails.mjs'), { execution: 'inline', instances: 2 })).rejects.toThrow(
        /no second GPU/,
      );
      // Killed, instance 0 was only marked ended: its finalize never ran (a timer it set would run on).
      expect(global.finalizedInstances).toBe(1);
    } finally {
      delete global.finalizedInstances;
    }
  });

  it('stops waiting for an initialize that never settles when its load is called off', async () => {
    const stop = new AbortController();
    // Called off once its initialize runs (inline, the module shares this thread's globals).
    (globalThis as { initializeStarted?: () => void }).initializeStarted = () => stop.abort();
    try {
      const loading = loadModel(join(dir, 'initialize-stalls.mjs'), { execution: 'inline', loadSignal: stop.signal });
      await expect(loading).rejects.toMatchObject({ code: 'MODEL_LOAD_FAILED', message: /its load was stopped/ });
      expect(stop.signal.aborted).toBe(true);
    } finally {
      delete (globalThis as { initializeStarted?: () => void }).initializeStarted;
    }
  });
});
