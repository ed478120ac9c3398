/**
 * When a finished batch's answers are written: after the next batch is handed to the model, so
 * that what runs it (a thread, a process, the pretend accelerator of --model-latency-ms, or
 * onnxruntime inline, which answers in a Promise) does not wait for them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { admitRows, type AdmissionContext } from '../../src/serve/admission.js';
import type { ModelVersion } from '../../src/serve/model-version.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { startTestServer, type TestServer } from './test-server.js';

const context: AdmissionContext = { maxRequestTimeoutMs: 10_000, logError: () => {} };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** One item of the version's model: zeros of each input's shape. */
function itemOf(version: ModelVersion): ItemTensors {
  const item: ItemTensors = {};
  for (const spec of version.model.inputs) {
    const shape = spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : 1));
    item[spec.name] = { data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape };
  }
  return item;
}

/** Two requests, one batch each: how many still wait in the queue when the first one's answer is settled. */
async function queuedWhenFirstAnswered(modelLatencyMs: number): Promise<number> {
  server = await startTestServer({ modelLatencyMs, maxBatchSize: 1, batchWindowMs: 0 });
  const version = server.runtime.registry.all()[0]!;
  const schedule = { timeoutMs: undefined, priority: undefined };
  const answered = new Promise<number>((resolve) => {
    admitRows(version, 'a', [itemOf(version)], schedule, context, () => resolve(version.batcher.queueDepth));
  });
  const second = new Promise<void>((resolve) => {
    admitRows(version, 'b', [itemOf(version)], schedule, context, () => resolve());
  });
  const depth = await answered;
  await second;
  return depth;
}

describe('the answers of a finished batch', () => {
  it('leave after the next batch is handed to a pretend accelerator (--model-latency-ms)', async () => {
    expect(await queuedWhenFirstAnswered(20)).toBe(0);
  });

  it('leave after the next batch is handed to a model run inline without added latency', async () => {
    expect(await queuedWhenFirstAnswered(0)).toBe(0);
  });
});
