/**
 * Warmup dims (Triton's model_warmup `dims`): a warmup batch of an input with free dimensions
 * takes the item shape given for it, not 1 for each free size, so that it warms the plan real
 * requests use; the shape is checked against the input's spec once the model loads.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { versionWarningLines } from '../../src/serve/version-log.js';
import { warmupDimsProblem } from '../../src/serve/warmup.js';
import { writeRepository } from './repository-fixture.js';
import { startTestServer, type TestServer } from './test-server.js';

/** Free rows of 3: answers how many values the first item of each batch it ran before held. */
const COUNTS_ITS_VALUES = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [-1, 3] }, { name: 'k', datatype: 'FP32', shape: [2] }];
export const outputs = [{ name: 'seen', datatype: 'INT32', shape: [-1] }];
const seen = [];
export function execute(items) {
  const before = [...seen];
  seen.push(items[0].x.length);
  return items.map(() => ({ seen: before }));
}
`;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function predict(): Promise<{ status: number; json: any }> {
  const response = await request(`${server!.url}/models/m/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { x: [[1, 2, 3]], k: [0, 0] } }),
  });
  return { status: response.statusCode, json: await response.body.json() };
}

async function repositoryWith(config: object): Promise<string> {
  return writeRepository({
    'm/1/model.mjs': COUNTS_ITS_VALUES,
    'm/config.json': { execution: 'worker', max_batch_size: 4, batch_window_ms: 0, ...config },
  });
}

describe('warmup_dims', () => {
  it("runs the warmup batches at the given item shape, and shows it in the version's config", async () => {
    server = await startTestServer({
      modelRepository: await repositoryWith({ warmup_batch_sizes: [1, 4], warmup_dims: { x: [48, 3] } }),
    });
    const answer = await predict();
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    // Two warmup batches of [48, 3] items (144 values each), not [1, 3] (3 values).
    expect(answer.json.outputs.seen).toEqual([144, 144]);
    const version = (await (await request(`${server.url}/v1/models/m/versions/1`)).body.json()) as any;
    expect(version.config.warmup_dims).toEqual({ x: [48, 3] });
    const triton = (await (await request(`${server.url}/v2/models/m/config`)).body.json()) as any;
    expect(triton.model_warmup[0].inputs.x.dims).toEqual([48, 3]);
    expect(triton.model_warmup[0].inputs.k.dims).toEqual([2]);
  });

  it('leaves a free dimension at 1 without them, as before', async () => {
    server = await startTestServer({ modelRepository: await repositoryWith({ warmup_batch_sizes: [1] }) });
    expect((await predict()).json.outputs.seen).toEqual([3]);
  });

  it('refuses dims that do not fit the inputs before the version is ready, naming the file, the input and its shape', async () => {
    const repository = await repositoryWith({ warmup_batch_sizes: [1], warmup_dims: { x: [48, 4] } });
    await expect(startTestServer({ modelRepository: repository })).rejects.toThrow(
      `invalid model configuration: ${repository}/m/config.json: warmup_dims: x: got [48, 4], expected its item shape [-1, 3] (-1: a size of your choice from 1)`,
    );
  });

  it('refuses --warmup-dims that name no input, naming the flag and the inputs', async () => {
    const refusal = await startTestServer({
      modelRepository: await repositoryWith({ warmup_batch_sizes: [1] }),
      warmupDims: 'image=3x48x192',
    }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(BatchlineError);
    expect((refusal as BatchlineError).code).toBe('INVALID_OPTION');
    expect((refusal as BatchlineError).detail).toBe(
      `--warmup-dims: no input is named "image"; the model's inputs: x [-1, 3], k [2]`,
    );
  });
});

describe('warmupDimsProblem', () => {
  const inputs = [
    { name: 'x', type: 'float32' as const, itemShape: [3, 'h', 'w'] },
    { name: 'mask', type: 'float32' as const, itemShape: [4] },
  ];
  it.each([
    [{ x: [3, 48, 192] }, undefined],
    [{ x: [3, 48, 192], mask: [4] }, undefined],
    [{ x: [3, 48] }, 'x: got [3, 48], expected its item shape [3, -1, -1] (-1: a size of your choice from 1)'],
    [
      { x: [1, 48, 192] },
      'x: got [1, 48, 192], expected its item shape [3, -1, -1] (-1: a size of your choice from 1)',
    ],
    [{ mask: [5] }, 'mask: got [5], expected its item shape [4] (-1: a size of your choice from 1)'],
    [{ y: [1] }, `no input is named "y"; the model's inputs: x [3, -1, -1], mask [4]`],
  ])('%j: %s', (dims, problem) => {
    expect(warmupDimsProblem(inputs, dims)).toBe(problem);
  });
});

describe('--warmup-dims', () => {
  it.each([
    ['x=3x48x192', { x: [3, 48, 192] }],
    ['x=3x48x192;mask=4', { x: [3, 48, 192], mask: [4] }],
    ['{"x": [3, 48, 192]}', { x: [3, 48, 192] }],
  ])('takes %s', (text, dims) => {
    expect(resolveOptions(SERVE_OPTIONS, { warmupDims: text }, {}).warmupDims).toEqual(dims);
  });

  it.each(['x=3x0', 'x', 'x=3,48', '[3, 48]', '{}', 'x=3x1.5'])('refuses %s, naming what it takes', (text) => {
    expect(() => resolveOptions(SERVE_OPTIONS, { warmupDims: text }, {})).toThrow(
      `--warmup-dims: got '${text}', expected input names with their item shapes, such as {"x": [3, 48, 192]} (or x=3x48x192 on the command line)`,
    );
  });
});

describe('warmup_dims without warmup_batch_sizes', () => {
  it("is warned of in a registration's answer, naming the fields as the body wrote them", async () => {
    server = await startTestServer({ modelRepository: await repositoryWith({}), adminToken: 't' });
    const response = await request(`${server.url}/admin/models/m`, {
      method: 'POST',
      headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
      body: JSON.stringify({ version: 2, path: 'm/1/model.mjs', warmup_dims: { x: [48, 3] } }),
    });
    const answer = (await response.body.json()) as any;
    expect(response.statusCode, JSON.stringify(answer)).toBe(201);
    expect(answer.warnings).toEqual([
      {
        code: 'warmup_dims_without_sizes',
        message:
          "warmup_dims is given without warmup_batch_sizes: no warmup batch runs, so it shapes nothing; give warmup_batch_sizes (the batch sizes to warm, such as 1,8), or leave warmup_dims out (warmup_dims in the registration's body)",
      },
    ]);
  });

  it("is warned of under the version's line at load, naming the flags", () => {
    const config = resolveOptions(SERVE_OPTIONS, { warmupDims: 'x=48x3' }, {});
    expect(versionWarningLines({ name: 'm', version: 1, config })).toEqual([
      'batchline serve: warning: model=m version=1: --warmup-dims is given without --warmup-batch-sizes: no warmup batch runs, so it shapes nothing; give --warmup-batch-sizes (the batch sizes to warm, such as 1,8), or leave --warmup-dims out',
    ]);
  });
});
