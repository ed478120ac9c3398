/**
 * A code model's `initialize({ config })` gets its config.json's `parameters` (Triton's Python
 * backend reads its model config's `parameters`): the values a model's author sets, such as a
 * threshold or a file name. Before, `config` held only batchline's options, and a config.json
 * with `parameters` stopped the server (unknown field).
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeModelDir } from '../model/code-model-fixtures.js';
import { scanRepository } from '../../src/serve/repository.js';
import { infer, startTestServer, type TestServer } from './test-server.js';

/** Answers every item with what its initialize was told. */
const TOLD = `
export const inputSchema = { type: 'object' };
let told;
export function initialize({ config }) { told = { parameters: config.parameters, maxBatchSize: config.maxBatchSize }; }
export function execute(items) { return items.map(() => told); }
`;
const TOKEN = 'admin-secret';
let server: TestServer;
let repository: string;

beforeAll(async () => {
  repository = await codeModelDir({
    'told/1/model.mjs': TOLD,
    'told/config.json': JSON.stringify({
      max_batch_size: 4,
      parameters: { threshold: 0.5, labels: 'labels.txt', triton_style: { string_value: '7' } },
    }),
    'plain/1/model.mjs': TOLD,
  });
  server = await startTestServer({ modelRepository: repository, adminToken: TOKEN });
}, 60_000);

afterAll(async () => {
  await server?.close();
});

const toldBy = async (model: string) => {
  const reply = await infer(`${server.url}/models/${model}/predict`, { data: {} });
  expect(reply.status).toBe(200);
  return reply.json.outputs;
};

describe("a code model's initialize", () => {
  it("is told its config.json's parameters as written, beside its options (on a worker thread)", async () => {
    expect(await toldBy('told')).toEqual({
      parameters: { threshold: 0.5, labels: 'labels.txt', triton_style: { string_value: '7' } },
      maxBatchSize: 4,
    });
  });

  it('is told empty parameters when its model has no config.json', async () => {
    expect(await toldBy('plain')).toEqual({ parameters: {}, maxBatchSize: 8 });
  });

  it("takes a registration's parameters over its config.json's, name by name", async () => {
    const response = await request(`${server.url}/admin/models/told`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ module: 'told/1/model.mjs', version: 2, parameters: { threshold: 0.9 } }),
    });
    expect(response.statusCode).toBe(201);
    await response.body.dump();
    expect((await toldBy('told')).parameters).toEqual({
      threshold: 0.9,
      labels: 'labels.txt',
      triton_style: { string_value: '7' },
    });
  });
});

describe('a config.json whose parameters are not an object', () => {
  it('stops the start naming the file and the field', async () => {
    const bad = await codeModelDir({
      'm/1/model.mjs': TOLD,
      'm/config.json': JSON.stringify({ parameters: ['threshold', 0.5] }),
    });
    await expect(scanRepository(bad)).rejects.toThrow(
      /m\/config\.json: parameters: got \["threshold",0\.5\], expected a JSON object/,
    );
  });
});
