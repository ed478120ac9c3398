import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failingWidthModelOnnx } from '../serve/repository-fixture.js';
import { runServeInProcess, type RunningServe } from './in-process-serve.js';
import { infer } from '../serve/test-server.js';
import { tableRow } from './table.js';
import { tempDir } from '../temp-dir.js';

let serve: RunningServe;
beforeAll(async () => {
  const dir = tempDir('batchline-model-');
  const path = join(dir, 'free-width.onnx');
  await writeFile(path, failingWidthModelOnnx());
  // The circuit breaker would soon answer 503 instead: this attack is on the log, not the model.
  serve = await runServeInProcess({
    model: path,
    execution: 'inline',
    maxBatchSize: 8,
    breakerFailures: 0,
    breakerRatio: 0,
  });
});
afterAll(async () => {
  serve.signal();
  await serve.done;
});

describe('inputs that make the model fail (#7)', () => {
  it('get a short 500 naming the request id; the log has the detail, rate-limited, with a count of what it left out', async () => {
    const before = serve.output().length;
    const startedAtMs = performance.now();
    const replies = [];
    for (let round = 0; round < 10; round++) {
      replies.push(
        ...(await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            infer(serve.url, { inputs: [1, 2, 3] }, { 'x-request-id': `bad-${round}-${i}` }),
          ),
        )),
      );
    }
    expect(replies.map((r) => r.status)).toEqual(Array(300).fill(500));
    for (const reply of replies) {
      expect(reply.json.error.code).toBe('model_failure');
      expect(reply.json.error.message).toBe(
        `model execution failed: see the server log for request ${reply.headers['x-request-id']}`,
      );
    }
    const elapsedS = (performance.now() - startedAtMs) / 1000;
    const log = serve.output().slice(before);
    const lines = log.split('\n').filter((line) => line.includes('model execution failed for request'));
    // A burst of 20 lines, then 10 a second: not 300 lines of ~1 KB.
    expect(lines.length).toBeLessThanOrEqual(20 + Math.ceil(10 * elapsedS));
    expect(lines[0]).toMatch(/^batchline serve: model execution failed for request bad-0-\d+: .*MatMul/);
    serve.signal(); // the summary of what was left out is written at the latest when the server stops
    await serve.done;
    expect(serve.output()).toMatch(
      /batchline serve: \d+ more failure lines left out in [\d.]+ s \(model execution failed ×\d+\)/,
    );
    tableRow(
      '#7 300 inputs that make the model fail',
      'short 500 naming the request id; log rate-limited, with a count of what it left out',
      `${replies.length} × 500 "${replies[0]!.json.error.message.replace(/bad-\S+/, '<id>')}"; ${lines.length} log lines, then "${/\d+ more failure lines left out/.exec(serve.output())![0]}"`,
    );
  });
});
