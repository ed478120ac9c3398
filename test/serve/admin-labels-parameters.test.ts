import { readFile } from 'node:fs/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GrpcTestServer, OipClient, startGrpcTestServer } from './grpc-helpers.js';
import { PADDLE_CLS, PADDLE_OUTPUT, writeRepository } from './repository-fixture.js';

const TOKEN = 'admin-secret';
const IMAGE_VALUES = 3 * 48 * 192;
/** One 3×48×192 image for PaddleOCR's text-direction classifier. */
const image = { name: 'x', shape: [1, 3, 48, 192], datatype: 'FP32', data: new Array(IMAGE_VALUES).fill(0.5) };
const classified = { inputs: [image], outputs: [{ name: PADDLE_OUTPUT, parameters: { classification: 2 } }] };

/**
 * `cls` as a Triton user writes it: a config.json naming its labels file and its own parameters,
 * version 1 served from the start, version 2 on disk for the admin API to register.
 */
let server: GrpcTestServer;
beforeAll(async () => {
  const model = await readFile(PADDLE_CLS);
  const root = await writeRepository({
    'cls/1/model.onnx': model,
    'cls/2/model.onnx': model,
    'cls/config.json': {
      version_policy: { specific: [1] },
      label_filename: 'directions.txt',
      parameters: { threshold: 0.5, mode: 'fast', triton: { string_value: 'as written' } },
    },
    'cls/directions.txt': 'upright\nupside-down\n',
    'cls/other.txt': 'zero\none-eighty\n',
  });
  server = await startGrpcTestServer({ modelRepository: root, adminToken: TOKEN });
});
afterAll(() => server?.close());

async function call(method: 'GET' | 'POST', path: string, body?: object): Promise<{ status: number; json: any }> {
  const response = await request(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.statusCode, json: await response.body.json() };
}

/** The labels a version answers in its classes ("value:index:label"), sorted. */
async function labelsOf(version: number): Promise<string[]> {
  const answer = await call('POST', `/v2/models/cls/versions/${version}/infer`, classified);
  expect(answer.status).toBe(200);
  return (answer.json.outputs[0].data as string[]).map((entry) => entry.split(':')[2] ?? '').sort();
}

describe("a registration's label_filename and parameters, as config.json gives them", () => {
  it("registers a version with its config.json's labels file and parameters, and shows both", async () => {
    const registered = await call('POST', '/admin/models/cls', { version: 2, path: 'cls/2/model.onnx' });
    expect(registered.status).toBe(201);
    expect(registered.json.config).toMatchObject({
      label_filename: 'directions.txt',
      parameters: { threshold: 0.5, mode: 'fast' },
    });
    expect(await labelsOf(2)).toStrictEqual(['upright', 'upside-down']);
    // As Triton's config shows them: every value a string_value, on HTTP and over gRPC.
    const triton = await call('GET', '/v2/models/cls/versions/2/config');
    expect(triton.json.parameters).toStrictEqual({
      threshold: { string_value: '0.5' },
      mode: { string_value: 'fast' },
      triton: { string_value: 'as written' },
    });
    expect(triton.json.output[0].label_filename).toBe('directions.txt');
    const client = new OipClient(server.target);
    const overGrpc = await client.call('ModelConfig', { name: 'cls', version: '1' });
    client.close();
    expect(overGrpc.message.config.parameters).toStrictEqual(triton.json.parameters);
    // The start-up version shows them in /v1 too, as config.json names them.
    const v1 = await call('GET', '/v1/models/cls/versions/1');
    expect(v1.json.config).toMatchObject({
      label_filename: 'directions.txt',
      parameters: { threshold: 0.5, mode: 'fast' },
    });
  });

  it('takes label_filename in the body, over the config.json’s, and refuses a path or a missing file naming it', async () => {
    const registered = await call('POST', '/admin/models/cls', {
      version: 3,
      path: 'cls/2/model.onnx',
      label_filename: 'other.txt',
      parameters: { mode: 'exact' },
    });
    expect(registered.status).toBe(201);
    expect(registered.json.config).toMatchObject({
      label_filename: 'other.txt',
      parameters: { threshold: 0.5, mode: 'exact' },
    });
    expect(await labelsOf(3)).toStrictEqual(['one-eighty', 'zero']);

    const path = await call('POST', '/admin/models/cls', {
      version: 4,
      path: 'cls/2/model.onnx',
      label_filename: '../x',
    });
    expect(path.status).toBe(400);
    expect(path.json.error.message).toContain(
      `label_filename: got "../x", expected the name of a file in the model's folder`,
    );
    const missing = await call('POST', '/admin/models/cls', {
      version: 4,
      path: 'cls/2/model.onnx',
      label_filename: 'none.txt',
    });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: 'bad_model_path' });
    expect(missing.json.error.message).toContain('label_filename "cls/none.txt": no such file in the model repository');
  });
});
