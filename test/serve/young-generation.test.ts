/**
 * `batchline serve` holds V8's young generation at a 4 MB semispace when its models run off the
 * main thread (src/serve/young-generation.ts): a 16 MB one made V8 run a full collection every
 * hundred requests or so under load. An operator who sizes it with a node flag keeps that size;
 * the embedded model, inline, keeps V8's default.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { NEW_SPACE_CAP_BYTES, youngGenerationSizedBy } from '../../src/serve/young-generation.js';
import { startServeProcess, type ServeProcess } from '../reliability/serve-process.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';

const MB = 1024 * 1024;
const DIST = new URL('../../dist/src/', import.meta.url).href;
const started: ServeProcess[] = [];
afterEach(() => {
  for (const server of started.splice(0)) server.kill();
});

/** serve's new space in bytes (prom-client's default metrics) after `requests` inferences. */
async function newSpaceBytes(env: NodeJS.ProcessEnv, requests: number, embedded = false): Promise<number> {
  const root = await writeRepository({ 'm/1/model.onnx': linearModelOnnx([1, 2]) });
  // A model file runs on a worker thread: V8 resets the flag when it configures the thread's heap.
  const model = embedded ? [] : ['--model', `${root}/m/1/model.onnx`];
  const server = await startServeProcess(['--no-ui', ...model], env);
  started.push(server);
  for (let i = 0; i < requests; i++) {
    const response = await request(`${server.url}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // The embedded model takes three features, the fixture two.
      body: JSON.stringify({ inputs: embedded ? [1, 2, 3] : [1, 2] }),
    });
    expect(response.statusCode).toBe(200);
    await response.body.dump();
  }
  const metrics = await (await request(`${server.url}/metrics`)).body.text();
  const match = /^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)/m.exec(metrics);
  expect(match, 'the new space in /metrics').not.toBeNull();
  return Number(match![1]);
}

describe("serve's young generation", () => {
  it('stays within its cap with a model thread running, unless node was given a size', async () => {
    expect(NEW_SPACE_CAP_BYTES).toBe(8 * MB);
    expect(await newSpaceBytes({}, 300)).toBeLessThanOrEqual(NEW_SPACE_CAP_BYTES);
    expect(await newSpaceBytes({ NODE_OPTIONS: '--max-semi-space-size=16' }, 300)).toBeGreaterThan(NEW_SPACE_CAP_BYTES);
  }, 60_000);

  it('grows as V8 sizes it for the embedded model, which runs on the main thread', async () => {
    expect(await newSpaceBytes({}, 300, true)).toBeGreaterThan(NEW_SPACE_CAP_BYTES);
  }, 60_000);

  it('stays held while a worker thread starts, though configuring its heap puts the growth factor back', async () => {
    // A process (running the built module: npm test builds first) that holds its young generation
    // at the cap (grown there by objects that survive, a turn of the event loop between megabytes
    // for the hold's GC observer), then starts a thread whose first module is a model thread's
    // (model/heap-configured.ts), waits until that thread ran (its heap configured) without a turn
    // of the event loop, and keeps 20 MB alive at once. When the factor was set again only when the
    // worker came online, in a later turn, this grew the young generation to 32 MB.
    const source = `
      import { setImmediate as turn } from 'node:timers/promises';
      import { getHeapSpaceStatistics } from 'node:v8';
      import { Worker } from 'node:worker_threads';
      import { keepYoungGenerationSmall } from ${JSON.stringify(`${DIST}serve/young-generation.js`)};
      const newSpaceBytes = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
      const kept = [];
      const survivors = (count) => { for (let i = 0; i < count; i++) kept.push({ i, j: i }); };
      keepYoungGenerationSmall([], undefined);
      for (let i = 0; i < 200 && newSpaceBytes() < ${NEW_SPACE_CAP_BYTES}; i++) {
        survivors(30_000);
        await turn();
        await turn();
      }
      const heldBytes = newSpaceBytes();
      const ran = new Int32Array(new SharedArrayBuffer(4));
      // The thread's code is a module (it inherits --input-type=module).
      const worker = new Worker(
        "import { workerData } from 'node:worker_threads'; await import(workerData.first);" +
          'Atomics.store(workerData.ran, 0, 1); Atomics.notify(workerData.ran, 0);',
        { eval: true, workerData: { first: ${JSON.stringify(`${DIST}model/heap-configured.js`)}, ran } },
      );
      Atomics.wait(ran, 0, 0, 10_000);
      survivors(600_000);
      console.log(JSON.stringify({ heldBytes, afterBytes: newSpaceBytes(), ran: Atomics.load(ran, 0) }));
      await worker.terminate();
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '--eval', source], {
      timeout: 20_000,
    });
    const sizes = JSON.parse(stdout);
    expect([sizes.heldBytes, sizes.ran]).toStrictEqual([NEW_SPACE_CAP_BYTES, 1]);
    // Not past the cap; V8 may shrink it meanwhile (4 MB once in a loaded full run: allocation slow).
    expect(sizes.afterBytes).toBeLessThanOrEqual(NEW_SPACE_CAP_BYTES);
  }, 30_000);

  it("is the operator's when node's arguments or NODE_OPTIONS size it", () => {
    expect(youngGenerationSizedBy([], undefined)).toBe(false);
    expect(youngGenerationSizedBy(['--inspect'], '--max-old-space-size=512')).toBe(false);
    expect(youngGenerationSizedBy(['--max-semi-space-size=8'], undefined)).toBe(true);
    expect(youngGenerationSizedBy(['--max_semi_space_size'], undefined)).toBe(true);
    expect(youngGenerationSizedBy([], ' --semi-space-growth-factor=4')).toBe(true);
    expect(youngGenerationSizedBy([], '--min-semi-space-size=2 --trace-gc')).toBe(true);
  });
});
