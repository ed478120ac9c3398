/**
 * `serve --pipeline`: a busy instance takes its next full batch while it runs one. What a client
 * sees must not change: every request one answer, its own, through a crash too. A real server.
 */
import { describe, expect, it } from 'vitest';
import { CODE_MODELS, codeModelDir } from '../model/code-model-fixtures.js';
import { infer, startTestServer } from './test-server.js';

/** A code model that holds its thread a few ms a batch, so batches queue behind a busy instance. */
const SLOW_DOUBLE = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }, { name: 'batch', datatype: 'INT32', shape: [1] }];
export function execute(items) {
  const until = Date.now() + 5;
  while (Date.now() < until);
  return items.map(({ x }) => ({ y: [2 * x[0]], batch: [items.length] }));
}
`;

describe('serve --pipeline', () => {
  it('answers every request with its own result when full batches wait in an instance’s mailbox', async () => {
    const dir = await codeModelDir({ 'model.mjs': SLOW_DOUBLE });
    const server = await startTestServer(
      { pipeline: true, execution: 'worker', maxBatchSize: 2, batchWindowMs: 0 },
      `${dir}/model.mjs`,
    );
    try {
      const replies = await Promise.all(
        Array.from({ length: 24 }, (_, i) => infer(server.url, { inputs: { x: [i] } })),
      );
      expect(replies.map((reply) => reply.status)).toEqual(Array(24).fill(200));
      expect(replies.map((reply) => reply.json.outputs.y[0])).toEqual(Array.from({ length: 24 }, (_, i) => 2 * i));
    } finally {
      await server.close();
    }
  });

  it('a crash fails the batches it held, once each, and the instance comes back', async () => {
    const dir = await codeModelDir({ 'model.mjs': CODE_MODELS.crashes });
    const server = await startTestServer(
      { pipeline: true, execution: 'process', maxBatchSize: 2, batchWindowMs: 0 },
      `${dir}/model.mjs`,
    );
    try {
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, i) => infer(server.url, { inputs: { x: [i === 0 ? 99 : i] } })),
      );
      for (const reply of replies) expect([200, 500, 503]).toContain(reply.status);
      expect(replies[0]!.status).not.toBe(200);
      // Back after its restart: a request that waits for it is answered.
      let status = 0;
      for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
        status = (await infer(server.url, { inputs: { x: [1] } })).status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
