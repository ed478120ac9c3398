/**
 * A code model's `itemCost` (Ray Serve's `batch_size_fn`, batch()'s `itemCost`) in `serve`: its
 * batches hold items while their costs sum to at most max_batch_size, an item that costs more
 * runs alone, and a cost the function refuses to give (a throw, a value that is no positive
 * integer) refuses that request alone with 400 naming itemCost. Before, serve ignored the export
 * and batched by count.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { codeModelDir } from '../model/code-model-fixtures.js';
import { versionLine } from '../../src/serve/version-log.js';
import { infer, startTestServer, type TestServer } from './test-server.js';

/** A JSON model whose item costs its text's length; each answer says what its batch held and cost. */
const WORDS = `
export const inputSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
export function itemCost({ text }) {
  if (text === 'throw') throw new Error('no tokenizer for this text');
  if (text === 'half') return 1.5;
  if (text === 'none') return undefined;
  if (text === 'later') return Promise.reject(new Error('costed later'));
  return text.length;
}
export function execute(items) {
  const cost = items.reduce((sum, { text }) => sum + text.length, 0);
  return items.map(() => ({ batchCost: cost, batchSize: items.length }));
}
`;

/** A tensor model whose item costs its free dimension's length (from the shapes it is told). */
const TOKENS = `
export const inputs = [{ name: 'ids', datatype: 'INT32', shape: [-1] }];
export const outputs = [{ name: 'cost', datatype: 'INT32', shape: [1] }, { name: 'size', datatype: 'INT32', shape: [1] }];
export function itemCost({ ids }, { shapes }) {
  if (!(ids instanceof Int32Array)) throw new Error('ids is not an Int32Array');
  return shapes.ids[0];
}
export function execute(items) {
  const cost = items.reduce((sum, { ids }) => sum + ids.length, 0);
  return items.map(() => ({ cost: [cost], size: [items.length] }));
}
`;

const LIMIT = 10;
const TOKEN = 'admin-secret';
let server: TestServer;

beforeAll(async () => {
  // A long window: the requests sent together meet in the queue, and only the limit splits them.
  const batching = { max_batch_size: LIMIT, batch_window_ms: 200, max_queue_size: 256 };
  const repository = await codeModelDir({
    'words/1/model.mjs': WORDS,
    'words/config.json': JSON.stringify(batching),
    'tokens/1/model.mjs': TOKENS,
    'tokens/config.json': JSON.stringify({ ...batching, execution: 'process' }),
  });
  server = await startTestServer({ modelRepository: repository, adminToken: TOKEN });
}, 60_000);

afterAll(async () => {
  await server?.close();
});

const words = (text: string) => infer(`${server.url}/models/words/predict`, { data: { text } });

/** Lengths 1 to 7 in a fixed order, some past half the limit: a batch by count would cost up to 8 × 7. */
const LENGTHS = Array.from({ length: 40 }, (_, i) => 1 + ((i * 5) % 7));

describe('a code model that exports itemCost', () => {
  it('gets batches whose costs sum to at most max_batch_size (a JSON model on a thread)', async () => {
    const replies = await Promise.all(LENGTHS.map((length) => words('w'.repeat(length))));
    expect(replies.map((reply) => reply.status)).toEqual(LENGTHS.map(() => 200));
    const batches = replies.map((reply) => reply.json.outputs as { batchCost: number; batchSize: number });
    expect(batches.filter((batch) => batch.batchCost > LIMIT && batch.batchSize > 1)).toEqual([]);
    // They did meet: batches of several items, not one each.
    expect(batches.some((batch) => batch.batchSize > 1)).toBe(true);
  });

  it("batches by cost inline too, where the module and its cost copy share the server's thread", async () => {
    const dir = await codeModelDir({ 'model.mjs': WORDS });
    const inline = await startTestServer(
      { execution: 'inline', maxBatchSize: LIMIT, batchWindowMs: 200 },
      `${dir}/model.mjs`,
    );
    try {
      const replies = await Promise.all(
        LENGTHS.map((length) => infer(inline.url, { inputs: { text: 'w'.repeat(length) } })),
      );
      expect(replies.map((reply) => reply.status)).toEqual(LENGTHS.map(() => 200));
      const batches = replies.map((reply) => reply.json.outputs as { batchCost: number; batchSize: number });
      expect(batches.filter((batch) => batch.batchCost > LIMIT && batch.batchSize > 1)).toEqual([]);
      expect((await infer(inline.url, { inputs: { text: 'throw' } })).status).toBe(400);
    } finally {
      await inline.close();
    }
  });

  it("is said so in its version's line of the log", () => {
    expect(versionLine(server.runtime.registry.resolve('words')!)).toContain(`max_batch_size=${LIMIT} item_cost=true `);
    expect(versionLine(server.runtime.registry.resolve('tokens')!)).toContain('item_cost=true');
  });

  it('runs an item that costs more than the limit alone, and answers it', async () => {
    const [long, ...short] = await Promise.all([words('w'.repeat(LIMIT + 5)), words('ab'), words('cd')]);
    expect(long.status).toBe(200);
    expect(long.json.outputs).toEqual({ batchCost: LIMIT + 5, batchSize: 1 });
    for (const reply of short) expect(reply.json.outputs.batchCost).toBeLessThanOrEqual(LIMIT);
  });

  it("costs a tensor model's items by their free dimension (in a child process), whatever the protocol", async () => {
    const send = (length: number) =>
      infer(`${server.url}/models/tokens/predict`, { inputs: Array.from({ length }, (_, i) => i) });
    const replies = await Promise.all(LENGTHS.map(send));
    expect(replies.map((reply) => reply.status)).toEqual(LENGTHS.map(() => 200));
    const batches = replies.map((reply) => ({ cost: reply.json.outputs.cost[0], size: reply.json.outputs.size[0] }));
    expect(batches.filter((batch) => batch.cost > LIMIT && batch.size > 1)).toEqual([]);
    // A /v2 request of 3 rows of 4: each row an item of cost 4, so two share a batch and one waits.
    const v2 = await infer(`${server.url}/v2/models/tokens/infer`, {
      inputs: [{ name: 'ids', datatype: 'INT32', shape: [3, 4], data: Array.from({ length: 12 }, (_, i) => i) }],
    });
    expect(v2.status).toBe(200);
    const costs = (v2.json.outputs as { name: string; data: number[] }[]).find((o) => o.name === 'cost')!.data;
    expect(costs.every((cost) => cost <= LIMIT)).toBe(true);
  });

  it.each([
    ['throw', 'itemCost threw for this item: no tokenizer for this text'],
    ['half', 'itemCost returned 1.5 for this item, expected a positive integer'],
    ['none', 'itemCost returned undefined for this item, expected a positive integer'],
    ['', 'itemCost returned 0 for this item, expected a positive integer'],
    // A Promise, here one that rejects: left unhandled, its rejection ended the server.
    ['later', 'itemCost returned a Promise for this item; return the cost itself'],
  ])('refuses an item whose cost is %j alone: 400 bad_input naming itemCost', async (text, message) => {
    const [bad, ...good] = await Promise.all([words(text), words('abc'), words('defg')]);
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('bad_input');
    expect(bad.json.error.message).toContain(message);
    expect(good.map((reply) => reply.status)).toEqual([200, 200]);
  });

  it.each([
    // The names each protocol's other refusals give a row (`json[1]: …`, `instances[1]: …`): all said `row 1:`.
    [
      'json[1]',
      '/v2/models/words/infer',
      { inputs: [{ name: 'json', datatype: 'BYTES', shape: [2], data: ['{"text": "ab"}', '{"text": "half"}'] }] },
    ],
    ['instances[1]', '/v1/models/words:predict', { instances: [{ text: 'ab' }, { text: 'half' }] }],
    ['inputs[1]', '/v1/models/words:predict', { inputs: [{ text: 'ab' }, { text: 'half' }] }],
  ])(
    'refuses a request of several rows whole, naming the row whose cost is refused %s as %s names rows',
    async (row, path, body) => {
      const admitted = server.runtime.registry.resolve('words')!.batcher.counts.admitted;
      const reply = await infer(`${server.url}${path}`, body);
      expect(reply.status).toBe(400);
      expect(reply.json.error).toContain(`${row}: itemCost returned 1.5`);
      expect(server.runtime.registry.resolve('words')!.batcher.counts.admitted).toBe(admitted);
    },
  );

  it('refuses a request of several rows whole when the queue has room for some: none admitted, none cancelled', async () => {
    const dir = await codeModelDir({ 'model.mjs': WORDS });
    // Room for two rows, and a window that holds the first request in the queue until close().
    const small = await startTestServer(
      { execution: 'inline', maxBatchSize: LIMIT, batchWindowMs: 60_000, maxQueueSize: 2 },
      `${dir}/model.mjs`,
    );
    const counts = small.runtime.registry.resolve('model')!.batcher.counts;
    try {
      const waiting = infer(small.url, { inputs: { text: 'ab' } });
      await vi.waitFor(() => expect(counts.admitted).toBe(1));
      const reply = await infer(`${small.url}/v2/models/model/infer`, {
        inputs: [{ name: 'json', datatype: 'BYTES', shape: [2], data: ['{"text": "cd"}', '{"text": "ef"}'] }],
      });
      expect(reply.status).toBe(429);
      expect(counts.admitted).toBe(1);
      expect(counts.outcomes.cancelled).toBe(0);
      expect(counts.rejected.queue_full).toBe(2);
      await small.close();
      expect((await waiting).status).toBe(200);
    } finally {
      await small.close();
    }
  });

  it('refuses to load a module whose itemCost is async (422 naming itemCost): a cost is needed before the queue', async () => {
    const dir = join(server.config.modelRepository!, 'asynccost', '1');
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'model.mjs'),
      WORDS.replace('export function itemCost', 'export async function itemCost'),
    );
    const response = await request(`${server.url}/admin/models/asynccost`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ path: 'asynccost/1/model.mjs' }),
    });
    const body = (await response.body.json()) as { error: { code: string; message: string } };
    expect([response.statusCode, body.error.code]).toEqual([422, 'model_load_failed']);
    expect(body.error.message).toContain('itemCost is an async function');
  });

  it.each([
    [{ batch_policy: 'adaptive' }, 'got batch_policy adaptive (request body: batch_policy)'],
    [{ admission: 'sla' }, 'got admission sla (request body: admission)'],
  ])('refuses to load with %j, whose estimates count items (422 naming itemCost)', async (options, named) => {
    const response = await request(`${server.url}/admin/models/words`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ module: 'words/1/model.mjs', ...options }),
    });
    const body = (await response.body.json()) as { error: { code: string; message: string } };
    expect(response.statusCode).toBe(422);
    expect(body.error.code).toBe('model_load_failed');
    expect(body.error.message).toContain('exports itemCost, which works with batch_policy fixed or aimd');
    expect(body.error.message).toContain(named);
    // What was serving serves on.
    expect((await words('abc')).status).toBe(200);
  });
});
