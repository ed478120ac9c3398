/**
 * A served version whose code model exports `itemCost` has its settings checked as a costed
 * version: its max_batch_size is a cost, taken past the 4096 items a version that counts items
 * takes (a token budget of 16384), and its queue, which counts requests, is not compared with it
 * (no queue_below_batch warning). Before, both were decided from the options alone, before the
 * load told serve the module exports itemCost: 16384 was refused for every version, and the
 * warning was given to a costed one.
 */
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { MAX_SERVED_BATCH_COST, SERVE_OPTIONS } from '../../src/options/serve.js';
import { isStatsAnswer } from '../../src/stats-contract/is-server-stats.js';
import { resolveOptions } from '../../src/options/schema.js';
import { startupVersions } from '../../src/serve/startup.js';
import { versionWarningLines } from '../../src/serve/version-log.js';
import { serve } from '../../src/index.js';
import { runBatchline } from '../batchline-cli.js';
import { codeModelDir } from '../model/code-model-fixtures.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';
import { infer, startTestServer, type TestServer } from './test-server.js';

/** A JSON model whose item costs its text's length; each answer says how many items its batch held. */
const COSTED = `
export const inputSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
export const itemCost = ({ text }) => text.length;
export const execute = (items) => items.map(() => ({ batchSize: items.length }));
`;
/** The same model without itemCost: its batches count items. */
const COUNTED = `
export const inputSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
export const execute = (items) => items.map(() => ({ batchSize: items.length }));
`;

const TOKENS = 16384;
const TOKEN = 'admin-secret';
const TODAYS_RANGE = 'expected an integer from 1 to 4096';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function register(body: Record<string, unknown>, model = 'm'): Promise<{ status: number; json: any }> {
  const response = await request(`${server!.url}/admin/models/${model}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, json: await response.body.json() };
}

/** The refusal a promise rejects with, as code and message. */
async function refusalOf(promise: Promise<unknown>): Promise<{ code: string; detail: string }> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(BatchlineError);
  return { code: (error as BatchlineError).code, detail: (error as BatchlineError).detail };
}

describe('max_batch_size of a costed version', () => {
  it(`takes ${TOKENS} from a config.json, loads, and batches by cost`, async () => {
    const repository = await codeModelDir({
      'words/1/model.mjs': COSTED,
      'words/config.json': JSON.stringify({ max_batch_size: TOKENS, batch_window_ms: 200, max_queue_size: 64 }),
    });
    server = await startTestServer({ modelRepository: repository });
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => infer(`${server!.url}/models/words/predict`, { data: { text: 'abc' } })),
    );
    expect(replies.map((reply) => reply.status)).toEqual(replies.map(() => 200));
    // They met in one window: batches of several items, under a limit far above their costs.
    expect(replies.some((reply) => (reply.json.outputs as { batchSize: number }).batchSize > 1)).toBe(true);
    // Triton's model config says the limit.
    const config = await request(`${server.url}/v2/models/words/config`);
    expect(((await config.body.json()) as { max_batch_size: number }).max_batch_size).toBe(TOKENS);
  });

  it(`takes ${TOKENS} from the flag for a --model that exports itemCost`, async () => {
    const dir = await codeModelDir({ 'words.mjs': COSTED });
    server = await startTestServer({ maxBatchSize: TOKENS }, join(dir, 'words.mjs'));
    expect((await infer(server.url, { inputs: { text: 'abc' } })).status).toBe(200);
  });

  it(`takes up to ${MAX_SERVED_BATCH_COST}, whose /v1/stats watch and bench still read`, async () => {
    const dir = await codeModelDir({ 'words.mjs': COSTED });
    server = await startTestServer({ maxBatchSize: MAX_SERVED_BATCH_COST }, join(dir, 'words.mjs'));
    expect((await infer(server.url, { inputs: { text: 'abc' } })).status).toBe(200);
    const stats = await request(`${server.url}/v1/stats`);
    expect(isStatsAnswer(await stats.body.json())).toBe(true);
    expect(() => resolveOptions(SERVE_OPTIONS, { maxBatchSize: String(MAX_SERVED_BATCH_COST + 1) }, {})).toThrow(
      `--max-batch-size: got '${MAX_SERVED_BATCH_COST + 1}', expected an integer from 1 to 4096, or to ${MAX_SERVED_BATCH_COST} for a code model that exports itemCost`,
    );
  });

  it(`refuses ${TOKENS} for an ONNX model, before the load, with the message it always had`, async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/config.json': { max_batch_size: TOKENS },
    });
    const fromFile = resolveOptions(SERVE_OPTIONS, { modelRepository: root }, {});
    expect(await refusalOf(startupVersions(fromFile))).toEqual({
      code: 'INVALID_MODEL_CONFIG',
      detail: `${root}/m/config.json: max_batch_size: got ${TOKENS}, ${TODAYS_RANGE}`,
    });
    const fromFlag = resolveOptions(
      SERVE_OPTIONS,
      { model: join(root, 'm/1/model.onnx'), maxBatchSize: String(TOKENS) },
      {},
    );
    expect(await refusalOf(startupVersions(fromFlag))).toEqual({
      code: 'INVALID_OPTION',
      detail: `--max-batch-size: got '${TOKENS}', ${TODAYS_RANGE}`,
    });
  });

  it(`refuses ${TOKENS} for a code model without itemCost, once loaded, with the same message`, async () => {
    const repository = await codeModelDir({
      'words/1/model.mjs': COUNTED,
      'words/config.json': JSON.stringify({ max_batch_size: TOKENS }),
    });
    const config = resolveOptions(SERVE_OPTIONS, { modelRepository: repository, port: 0 }, {});
    const startup = await startupVersions(config);
    const { buildServer } = await import('../../src/serve/build-server.js');
    const built = buildServer(config);
    try {
      expect(await refusalOf(built.runtime.loadStartup(startup.versions))).toEqual({
        code: 'INVALID_MODEL_CONFIG',
        detail: `${repository}/words/config.json: max_batch_size: got ${TOKENS}, ${TODAYS_RANGE}`,
      });
    } finally {
      await built.runtime.closeModels();
    }
    // A registration: 400 invalid_model_config naming the body's field, and nothing stays registered.
    server = await startTestServer({
      modelRepository: await codeModelDir({ 'words/1/model.mjs': COUNTED, 'costed/1/model.mjs': COSTED }),
      adminToken: TOKEN,
    });
    expect((await register({ module: 'costed/1/model.mjs', max_batch_size: TOKENS }, 'costed')).status).toBe(201);
    const counted = await register({ module: 'words/1/model.mjs', max_batch_size: TOKENS, version: 7 }, 'words');
    expect([counted.status, counted.json.error]).toEqual([
      400,
      {
        code: 'invalid_model_config',
        message: `invalid model configuration: request body: max_batch_size: got ${TOKENS}, ${TODAYS_RANGE}`,
      },
    ]);
    expect(server.runtime.registry.resolve('words', 7)).toBeUndefined();
  });
});

describe("a code model's max_batch_size refused once loaded, named as it was given", () => {
  // The refusal said `--max-batch-size: got '16384'` whatever gave the value: the version's
  // options kept the value, not whether a flag, MAX_BATCH_SIZE or serve()'s maxBatchSize wrote it.
  const refused = (name: string, got: string) => `${name}: got ${got}, ${TODAYS_RANGE}`;

  it.each([
    ['the flag', ['--max-batch-size', String(TOKENS)], {}, refused('--max-batch-size', `'${TOKENS}'`)],
    [
      'MAX_BATCH_SIZE',
      [],
      { MAX_BATCH_SIZE: String(TOKENS) },
      refused('MAX_BATCH_SIZE (--max-batch-size)', `'${TOKENS}'`),
    ],
  ])('by %s: `batchline serve` exits 2 naming it', async (_, args, env, message) => {
    const dir = await codeModelDir({ 'words.mjs': COUNTED });
    const run = await runBatchline(['serve', '--port', '0', '--no-ui', '--model', join(dir, 'words.mjs'), ...args], {
      env: { ...env, CI: 'true' },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`batchline: invalid option ${message}\n`);
  });

  it("by serve()'s maxBatchSize: rejects naming the key, the number shown as code gave it", async () => {
    const dir = await codeModelDir({ 'words.mjs': COUNTED });
    // It said maxBatchSize: got '16384' (quoted as a flag's text), where serve()'s other refusals show a number as one.
    await expect(serve({ model: join(dir, 'words.mjs'), maxBatchSize: TOKENS })).rejects.toThrow(
      new RegExp(`^invalid option ${refused('maxBatchSize', String(TOKENS))}$`),
    );
  });

  it("by the server's MAX_BATCH_SIZE, for a registration that sets none: its 400 names the variable", async () => {
    const repository = await codeModelDir({ 'costed/1/model.mjs': COSTED, 'words/1/model.mjs': COUNTED });
    // Only the costed model at start-up (the counted one would stop it); the other registered.
    server = await startTestServer({ modelRepository: repository, adminToken: TOKEN }, undefined, {
      env: { MAX_BATCH_SIZE: String(TOKENS) },
      loads: (version) => version.name === 'costed',
    });
    const counted = await register({ module: 'words/1/model.mjs', version: 2 }, 'words');
    expect([counted.status, counted.json.error]).toEqual([
      400,
      {
        code: 'invalid_option',
        message: `invalid option ${refused('MAX_BATCH_SIZE (--max-batch-size)', `'${TOKENS}'`)}`,
      },
    ]);
  });
});

describe('the warnings of a costed version', () => {
  it('leave out queue_below_batch: its queue counts requests, its max_batch_size a cost', async () => {
    const repository = await codeModelDir({ 'costed/1/model.mjs': COSTED, 'counted/1/model.mjs': COUNTED });
    server = await startTestServer({ modelRepository: repository, adminToken: TOKEN });
    const settings = { max_batch_size: 512, max_queue_size: 16 };
    const costed = await register({ module: 'costed/1/model.mjs', version: 2, ...settings }, 'costed');
    expect([costed.status, costed.json.warnings]).toEqual([201, []]);
    expect(versionWarningLines(server.runtime.registry.resolve('costed', 2)!)).toEqual([]);
    // The same settings for a model that counts items: warned of, in the answer and the log.
    const counted = await register({ module: 'counted/1/model.mjs', version: 2, ...settings }, 'counted');
    expect(counted.json.warnings.map((w: { code: string }) => w.code)).toEqual(['queue_below_batch']);
    expect(versionWarningLines(server.runtime.registry.resolve('counted', 2)!)).toHaveLength(1);
    // "wait": false answers before the load, which alone says whether the model is costed: left to the log.
    const early = await register({ module: 'costed/1/model.mjs', version: 3, wait: false, ...settings }, 'costed');
    expect([early.status, early.json.warnings]).toEqual([202, []]);
  });
});
