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

/** A deadline far past anything the tests wait for, so that a slow host is not a timeout. */
const LONG_DEADLINE = { 'x-request-timeout-ms': '30000' };

describe('serve --pipeline', () => {
  it('answers every request with its own result when full batches wait in an instance’s mailbox', async () => {
    const dir = await codeModelDir({ 'model.mjs': SLOW_DOUBLE });
    const server = await startTestServer(
      { pipeline: true, execution: 'worker', maxBatchSize: 2, batchWindowMs: 0 },
      `${dir}/model.mjs`,
    );
    try {
      // 24 requests behind one instance that holds its thread 5 ms a batch: a loaded host can take
      // longer than the 2 s default deadline, and what is checked is whose answer each gets.
      const replies = await Promise.all(
        Array.from({ length: 24 }, (_, i) => infer(server.url, { inputs: { x: [i] } }, LONG_DEADLINE)),
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
    // The instance going down with the crash and coming up again, as the server sees it.
    const cameBack = new Promise<void>((resolve) => {
      let wentDown = false;
      server.runtime.defaultVersion!.model.watchInstances!((event) => {
        if (event.kind !== 'up') wentDown = true;
        else if (wentDown) resolve();
      });
    });
    try {
      // Deadlines of their own: what is checked is who fails with the crash, not how fast a
      // loaded host answers (with the 2 s default, a slow one answered some 504).
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, i) => infer(server.url, { inputs: { x: [i === 0 ? 99 : i] } }, LONG_DEADLINE)),
      );
      for (const reply of replies) expect([200, 500, 503]).toContain(reply.status);
      expect(replies[0]!.status).not.toBe(200);
      // Back after its restart: the next request is answered.
      await cameBack;
      expect((await infer(server.url, { inputs: { x: [1] } }, LONG_DEADLINE)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
