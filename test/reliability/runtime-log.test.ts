import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failingWidthModelOnnx } from '../serve/repository-fixture.js';
import { spawnServe } from '../deploy/spawn-serve.js';
import { infer } from '../serve/test-server.js';

/**
 * onnxruntime writes a failed run's error to the process's stderr itself, from C++, once per run
 * (and bisection runs a failed batch several times): serve's rate-limited failure log is only
 * worth its limits if the runtime stays quiet. A server in a process of its own, so that what
 * onnxruntime writes to file descriptor 2 is seen.
 */
let dir: string;
let modelPath: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'batchline-runtime-log-'));
  modelPath = join(dir, 'free-width.onnx');
  await writeFile(modelPath, failingWidthModelOnnx());
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("onnxruntime's own log (#7)", () => {
  for (const execution of ['worker', 'inline'] as const) {
    it(`stays silent when runs fail (--execution ${execution}); serve's failure log says it once`, async () => {
      const serve = await spawnServe([
        'serve',
        '--model',
        modelPath,
        '--execution',
        execution,
        '--breaker-failures',
        '0',
        '--breaker-ratio',
        '0',
      ]);
      try {
        const replies = await Promise.all(
          Array.from({ length: 12 }, (_, i) => infer(serve.url, { inputs: [1, 2, 3] }, { 'x-request-id': `bad-${i}` })),
        );
        expect(replies.map((r) => r.status)).toEqual(Array(12).fill(500));
        const good = await infer(serve.url, { inputs: [1, 2, 3, 4] });
        expect(good.status).toBe(200);
      } finally {
        expect(await serve.stop()).toBe(0);
      }
      expect(serve.output()).toMatch(/model execution failed for request bad-\d+: .*MatMul/);
      expect(serve.output()).not.toMatch(/\[E:onnxruntime|sequential_executor/);
    });
  }
});
