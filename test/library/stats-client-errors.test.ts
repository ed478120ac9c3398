/**
 * `batch().stats()` counts an item as serve counts it: the same function served as a code model
 * and wrapped by `batch()`, given the same items, ends them with the same outcomes. An Error in an
 * item's slot whose `code` blames its input (`bad_input`, `input_not_found`,
 * `unprocessable_input`) is `client_error` in both; another code, or a throw whatever its code,
 * is `error`. Real sockets.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batch, type RunningServer, serve } from '../../src/index.js';
import { codeModelDir } from '../model/code-model-fixtures.js';
import { infer } from '../serve/test-server.js';

/** x ≥ 0 answered 2x; -1, -2, -3 an Error in its slot with a code; -9 makes the whole batch throw, with a code that would blame the input. */
const GRADED = `
export const inputSchema = { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] };
const CODES = { '-1': 'bad_input', '-2': 'unprocessable_input', '-3': 'ENOENT' };
export function execute(items) {
  if (items.some(({ x }) => x === -9)) throw Object.assign(new Error('a batch with -9'), { code: 'bad_input' });
  return items.map(({ x }) => (x >= 0 ? 2 * x : Object.assign(new Error('item ' + x + ' is refused'), { code: CODES[String(x)] })));
}
`;

/** The five items leave as one batch (a window of 10 s, a batch of 5), in serve and in batch(). */
const ITEMS = [5, -1, -2, -3, -9];

let dir: string;
let server: RunningServer;
beforeAll(async () => {
  dir = await codeModelDir({
    'graded/1/model.mjs': GRADED,
    'graded/config.json': JSON.stringify({ max_batch_size: 5, batch_window_ms: 10_000, request_timeout_ms: 20_000 }),
  });
  server = await serve({ modelRepository: dir, maxRequestTimeoutMs: 60_000 });
}, 60_000);
afterAll(() => server?.close({ drainMs: 1000 }));

describe("batch().stats() and /v1/stats of one function's items", () => {
  it('count the same outcomes: client_error for a slot Error blaming its input, error for the others', async () => {
    const replies = await Promise.all(
      ITEMS.map((x) => infer(`${server.url}/models/graded/predict`, { inputs: { x } })),
    );
    expect(replies.map((reply) => reply.status)).toEqual([200, 400, 422, 500, 500]);

    const model = await import(pathToFileURL(join(dir, 'graded/1/model.mjs')).href);
    const graded = batch((items: { x: number }[], context) => model.execute(items, context), {
      maxBatchSize: 5,
      batchWindowMs: 10_000,
      requestTimeoutMs: 20_000,
    });
    const settled = await Promise.allSettled(ITEMS.map((x) => graded({ x })));
    expect(settled.map((result) => result.status)).toEqual([
      'fulfilled',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
    ]);

    const served = (await (await fetch(`${server.url}/v1/stats`)).json()) as {
      snapshot: { counts: { outcomes: unknown } };
    };
    const expected = { ok: 1, client_error: 2, error: 2, timeout: 0, cancelled: 0, shutdown: 0, unavailable: 0 };
    expect(served.snapshot.counts.outcomes).toEqual(expected);
    expect(graded.stats().counts.outcomes).toEqual(expected);
    await graded.close();
  });
});

describe('an Error kept and reused by the batch function', () => {
  it.each(['a synchronous', 'an async'] as const)(
    '%s function: counted client_error in a slot, error when thrown for the batch',
    async (kind) => {
      // A module's constant, as a `NotFound` made once: answered in a slot, then thrown.
      const badId = Object.assign(new Error('bad id'), { code: 'bad_input' });
      const answer = (xs: readonly number[]): (number | Error)[] => {
        if (xs.includes(-9)) throw badId;
        return xs.map((x) => (x < 0 ? badId : 2 * x));
      };
      const double = batch<number, number>(kind === 'an async' ? async (xs) => answer(xs) : (xs) => answer(xs), {
        batchWindowMs: 1,
        isolation: 'off',
      });
      await expect(double(-1)).rejects.toBe(badId);
      await expect(double(-9)).rejects.toBe(badId);
      const { outcomes } = double.stats().counts;
      expect({ client_error: outcomes.client_error, error: outcomes.error }).toEqual({ client_error: 1, error: 1 });
      await double.close();
    },
  );
});
