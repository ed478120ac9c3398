/**
 * Warmup count (Triton's model_warmup `count`): each warmup batch size runs that many times on
 * each instance, since onnxruntime's second run of a shape is still slower than the third.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { writeRepository } from './repository-fixture.js';
import { startTestServer, type TestServer } from './test-server.js';

/** Answers the size of each batch it ran before. */
const COUNTS_ITS_BATCHES = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'seen', datatype: 'INT32', shape: [-1] }];
const seen = [];
export function execute(items) {
  const before = [...seen];
  seen.push(items.length);
  return items.map(() => ({ seen: before }));
}
`;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function repositoryWith(config: object): Promise<string> {
  return writeRepository({
    'm/1/model.mjs': COUNTS_ITS_BATCHES,
    'm/config.json': { execution: 'worker', max_batch_size: 4, batch_window_ms: 0, ...config },
  });
}

describe('warmup_count', () => {
  it("runs each warmup size that many times, and shows it in the version's config and Triton's model_warmup count", async () => {
    server = await startTestServer({
      modelRepository: await repositoryWith({ warmup_batch_sizes: [1, 4], warmup_count: 2 }),
    });
    const response = await request(`${server.url}/models/m/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [1] }),
    });
    const answer = (await response.body.json()) as any;
    expect(response.statusCode, JSON.stringify(answer)).toBe(200);
    expect(answer.outputs.seen).toEqual([1, 1, 4, 4]);
    const version = (await (await request(`${server.url}/v1/models/m/versions/1`)).body.json()) as any;
    expect(version.config.warmup_count).toBe(2);
    const triton = (await (await request(`${server.url}/v2/models/m/config`)).body.json()) as any;
    expect(triton.model_warmup.map((sample: any) => [sample.batch_size, sample.count])).toEqual([
      [1, 2],
      [4, 2],
    ]);
  });

  it('refuses a count out of its range, naming the file and the field', async () => {
    const repository = await repositoryWith({ warmup_batch_sizes: [1], warmup_count: 0 });
    await expect(startTestServer({ modelRepository: repository })).rejects.toThrow(
      `${repository}/m/config.json: warmup_count: got 0, expected an integer from 1 to 100`,
    );
  });

  it('--warmup-count: 1 by default, refused out of its range naming the flag', () => {
    expect(resolveOptions(SERVE_OPTIONS, {}, {}).warmupCount).toBe(1);
    expect(resolveOptions(SERVE_OPTIONS, { warmupCount: '3' }, {}).warmupCount).toBe(3);
    expect(() => resolveOptions(SERVE_OPTIONS, { warmupCount: '101' }, {})).toThrow(
      "--warmup-count: got '101', expected an integer from 1 to 100",
    );
  });
});
