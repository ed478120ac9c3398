import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadModel, type ServedModel } from '../../src/model/load-model.js';
import { ModelThreads, type SharedSession, sharedThreadSessions } from '../../src/model/model-threads.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import type { WorkerReply } from '../../src/model/worker-protocol.js';
import { CODE_MODELS, codeModelDir } from './code-model-fixtures.js';

// Threads run JavaScript: the built copy (`npm test` builds first).
const HOST = new URL('../../dist/src/model/model-host.js', import.meta.url);
const toyItem = (): ItemTensors => ({ features: { data: Float32Array.of(1, 2, 3), shape: [3] } });
const setup = (path: string | undefined) => ({
  path,
  version: '1',
  intraOpThreads: 1,
  executionProvider: 'cpu' as const,
});

/** The replies of a session, and its end, as promises a test awaits. */
function follow(session: SharedSession): { next: () => Promise<WorkerReply>; ended: Promise<string> } {
  const replies: WorkerReply[] = [];
  let wake: (() => void) | undefined;
  session.onReply = (reply) => {
    replies.push(reply);
    wake?.();
  };
  const ended = new Promise<string>((resolve) => (session.onEnd = resolve));
  const next = async (): Promise<WorkerReply> => {
    while (replies.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return replies.shift()!;
  };
  return { next, ended };
}

describe('--execution shared: several models on a few model threads', () => {
  const models: ServedModel[] = [];
  afterAll(async () => {
    await Promise.all(models.map((model) => model.close()));
  });

  it('puts the instances of every model on at most one thread a core, runs each on its own session, and ends the threads with their last session', async () => {
    models.push(await loadModel(undefined, { execution: 'shared', instances: 3 }));
    models.push(await loadModel(undefined, { execution: 'shared', instances: 2 }));
    const threads = sharedThreadSessions();
    expect(threads.length).toBeLessThanOrEqual(availableParallelism());
    expect(threads.reduce((a, b) => a + b, 0)).toBe(5);
    for (const [m, count] of [
      [0, 3],
      [1, 2],
    ] as const)
      for (let instance = 0; instance < count; instance++) {
        const [output] = await models[m]!.runBatch([toyItem()], instance);
        expect(output).not.toBeInstanceOf(Error);
        // 1/3 + 2·2/3 + 3 = 4.667: the toy model's logit, through the sigmoid.
        expect((output as ItemTensors).score!.data[0]).toBeCloseTo(1 / (1 + Math.exp(-14 / 3)), 5);
      }
    await Promise.all(models.splice(0).map((model) => model.close()));
    expect(sharedThreadSessions()).toEqual([]);
  });

  it('a code model keeps a thread of its own (its module state is per thread)', async () => {
    const dir = await codeModelDir({ 'model.mjs': CODE_MODELS.double });
    const model = await loadModel(join(dir, 'model.mjs'), { execution: 'shared', instances: 2 });
    models.push(model);
    expect(sharedThreadSessions()).toEqual([]);
    const outputs = await Promise.all(
      [0, 1].map((i) => model.runBatch([{ x: { data: Float32Array.of(1, 2, 3), shape: [3] } }], i)),
    );
    expect(outputs.map(([output]) => Number((output as ItemTensors).instance!.data[0]))).toEqual([0, 1]);
  });

  it('a thread that dies ends every session on it, and the next session starts a new thread', async () => {
    const dir = await codeModelDir({ 'model.mjs': CODE_MODELS.crashes });
    const threads = new ModelThreads(HOST, 1);
    const crashing = threads.open(setup(join(dir, 'model.mjs')));
    const neighbour = threads.open(setup(undefined));
    const a = follow(crashing);
    const b = follow(neighbour);
    expect(threads.sessionsByThread).toEqual([2]);
    expect((await a.next()).kind).toBe('loaded');
    expect((await b.next()).kind).toBe('loaded');
    crashing.post({ kind: 'run', id: 0, items: [{ x: { data: Float32Array.of(99), shape: [1] } }] });
    expect(await a.ended).toMatch(/its shared model thread ended \(code 3\)/);
    expect(await b.ended).toMatch(/its shared model thread ended \(code 3\)/);
    expect(threads.sessionsByThread).toEqual([]);
    const again = threads.open(setup(undefined));
    const c = follow(again);
    expect((await c.next()).kind).toBe('loaded');
    again.post({ kind: 'run', id: 1, items: [toyItem()] });
    expect(await c.next()).toMatchObject({ kind: 'result', id: 1 });
    again.post({ kind: 'close' });
    expect(await c.ended).toBe('code 0');
    expect(threads.sessionsByThread).toEqual([]);
  });
});
