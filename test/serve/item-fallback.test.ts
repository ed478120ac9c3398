import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeOnnxModel } from '../../src/model/onnx-writer.js';
import { infer, startTestServer, type TestServer } from './test-server.js';
import { tempDir } from '../temp-dir.js';

/**
 * A model whose input has a free second dimension but whose weights fit only length 4: an item
 * of length 3 passes validation and fails inside onnxruntime. It must fail alone, not take down
 * the requests it was batched with.
 */
let server: TestServer;
beforeAll(async () => {
  const dir = tempDir('batchline-model-');
  const path = join(dir, 'free-width.onnx');
  await writeFile(
    path,
    writeOnnxModel({
      name: 'free-width',
      inputs: [{ name: 'x', dims: ['batch', 'n'] }],
      outputs: [{ name: 'y', dims: ['batch', 1] }],
      initializers: [{ name: 'w', dims: [4, 1], values: [1, 1, 1, 1] }],
      nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
    }),
  );
  server = await startTestServer({ maxBatchSize: 3, batchWindowMs: 5000, modelLatencyMs: 0 }, path);
});
afterAll(() => server.close());

describe('a bad item in a batch', () => {
  it('fails only itself; its batch-mates are answered', async () => {
    const replies = await Promise.all(
      [
        [1, 2, 3, 4],
        [1, 2, 3],
        [5, 6, 7, 8],
      ].map((inputs) => infer(server.url, { inputs })),
    );
    expect(replies.map((r) => r.status)).toEqual([200, 500, 200]);
    expect(replies[0]!.json.outputs.y).toEqual([10]);
    expect(replies[2]!.json.outputs.y).toEqual([26]);
    expect(replies[1]!.json.error.code).toBe('model_failure');
    expect(server.runtime.defaultVersion!.batcher.counts.batches).toBe(1);
  });
});
