import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SHM_DIR } from '../../src/serve/system-shared-memory.js';
import { PADDLE_CLS, PADDLE_OUTPUT } from './repository-fixture.js';
import { startTestServer, type TestServer } from './test-server.js';

const MODEL = 'ch_ppocr_mobile_v2.0_cls_infer';
const IMAGE_VALUES = 3 * 48 * 192;
/** Two images for PaddleOCR's classifier, a ramp and its mirror: 2 × 110,592 bytes of FP32. */
const images = new Float32Array(2 * IMAGE_VALUES).map((_, i) =>
  i < IMAGE_VALUES ? (i % 192) / 192 : 1 - (i % 192) / 192,
);
const INPUT_BYTES = images.byteLength;
const OUTPUT_BYTES = 2 * 2 * 4; // [2, 2] FP32

/** A POSIX shared memory object, as a client's shm_open and ftruncate make it: the input at 0, room for the output after. */
const key = `/batchline-test-${process.pid}-${randomBytes(4).toString('hex')}`;
const file = join(SHM_DIR, key.slice(1));
const link = `${file}-link`;
beforeAll(() => {
  writeFileSync(file, Buffer.alloc(INPUT_BYTES + 64));
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.from(images.buffer), 0, INPUT_BYTES, 0);
  closeSync(fd);
  symlinkSync(file, link);
});
afterAll(() => {
  rmSync(file, { force: true });
  rmSync(link, { force: true });
});

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function call(method: 'GET' | 'POST', path: string, body?: object): Promise<{ status: number; json: any }> {
  const response = await request(`${server!.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: text === '' ? undefined : JSON.parse(text) };
}

const register = (region: string, body: object) =>
  call('POST', `/v2/systemsharedmemory/region/${region}/register`, body);
const infer = (body: object) => call('POST', `/v2/models/${MODEL}/infer`, body);

const shmInput = (region: string, byteSize = INPUT_BYTES, offset?: number) => ({
  name: 'x',
  shape: [2, 3, 48, 192],
  datatype: 'FP32',
  parameters: {
    shared_memory_region: region,
    shared_memory_byte_size: byteSize,
    ...(offset === undefined ? {} : { shared_memory_offset: offset }),
  },
});
const shmOutput = (region: string, byteSize = OUTPUT_BYTES, extra: object = {}) => ({
  name: PADDLE_OUTPUT,
  parameters: { shared_memory_region: region, shared_memory_byte_size: byteSize, ...extra },
});

describe("Triton's system shared memory extension (--allow-client-shm)", () => {
  it('registers regions of a /dev/shm object, reads inputs from one and writes outputs into another', async () => {
    server = await startTestServer({ allowClientShm: true }, PADDLE_CLS);
    expect((await call('GET', '/v2')).json.extensions).toContain('system_shared_memory');
    expect(await register('in', { key, offset: 0, byte_size: INPUT_BYTES })).toStrictEqual({ status: 200, json: {} });
    expect((await register('out', { key, offset: INPUT_BYTES, byte_size: 64 })).status).toBe(200);
    expect((await call('GET', '/v2/systemsharedmemory/status')).json).toStrictEqual([
      { name: 'in', key, offset: 0, byte_size: INPUT_BYTES },
      { name: 'out', key, offset: INPUT_BYTES, byte_size: 64 },
    ]);
    expect((await call('GET', '/v2/systemsharedmemory/region/out/status')).json).toStrictEqual([
      { name: 'out', key, offset: INPUT_BYTES, byte_size: 64 },
    ]);

    const answer = await infer({ inputs: [shmInput('in')], outputs: [shmOutput('out', 32)] });
    expect(answer).toStrictEqual({
      status: 200,
      json: {
        model_name: MODEL,
        model_version: '1',
        outputs: [{ name: PADDLE_OUTPUT, datatype: 'FP32', shape: [2, 2] }],
      },
    });
    const inBody = await infer({
      inputs: [{ name: 'x', shape: [2, 3, 48, 192], datatype: 'FP32', data: Array.from(images) }],
    });
    const written = readFileSync(file).subarray(INPUT_BYTES, INPUT_BYTES + OUTPUT_BYTES);
    expect(Array.from(new Float32Array(Uint8Array.from(written).buffer))).toStrictEqual(
      inBody.json.outputs[0].data.map(Math.fround),
    );

    // An offset into the region: the second image alone.
    const second = await infer({
      inputs: [{ ...shmInput('in', INPUT_BYTES / 2, INPUT_BYTES / 2), shape: [1, 3, 48, 192] }],
    });
    expect(second.json.outputs[0].data.map(Math.fround)).toStrictEqual(
      inBody.json.outputs[0].data.slice(2).map(Math.fround),
    );

    expect((await call('POST', '/v2/systemsharedmemory/region/in/unregister')).status).toBe(200);
    expect(
      (await call('GET', '/v2/systemsharedmemory/status')).json.map((r: { name: string }) => r.name),
    ).toStrictEqual(['out']);
    // Gone: Triton's NOT_FOUND, which its HTTP server answers 404.
    expect(await infer({ inputs: [shmInput('in')] })).toStrictEqual({
      status: 404,
      json: { error: "Unable to find shared memory region: 'in'" },
    });
    expect((await call('POST', '/v2/systemsharedmemory/unregister')).status).toBe(200);
    expect((await call('GET', '/v2/systemsharedmemory/status')).json).toStrictEqual([]);
  });

  it('refuses bad registrations with 400 in Triton’s words, and opens only files directly in /dev/shm', async () => {
    server = await startTestServer({ allowClientShm: true }, PADDLE_CLS);
    const cases: [string, object, string][] = [
      ['r', { offset: 0, byte_size: 8 }, "Shared memory register request has no 'key' field"],
      ['r', { key }, "Shared memory register request has no 'byte_size' field"],
      ['r', { key, byte_size: -1 }, "Unable to parse 'byte_size': a whole number of bytes, got -1"],
      ['r', { key, offset: '8', byte_size: 8 }, `Unable to parse 'offset': a whole number of bytes, got "8"`],
      ['r', { key, offset: INPUT_BYTES, byte_size: 65 }, "failed to register shared memory region 'r': invalid args"],
      [
        'r',
        { key: '/../../etc/passwd', byte_size: 8 },
        "cannot register shared memory region 'r' - invalid shm key '/../../etc/passwd'",
      ],
      ['r', { key: '/..', byte_size: 8 }, "invalid shm key '/..'"],
      ['r', { key: '/no-such-object', byte_size: 8 }, "Unable to open shared memory region: '/no-such-object'"],
      ['r', { key: `/${link.slice(SHM_DIR.length + 1)}`, byte_size: 8 }, 'Unable to open shared memory region'],
    ];
    for (const [region, body, message] of cases) {
      const answer = await register(region, body);
      expect([body, answer.status]).toStrictEqual([body, 400]);
      expect(answer.json.error).toContain(message);
    }
    expect((await call('POST', '/v2/systemsharedmemory/register', { key, byte_size: 8 })).json.error).toBe(
      "'region name' is necessary to register system shared memory region",
    );
    expect((await register('r', { key, byte_size: 8 })).status).toBe(200);
    // Triton's HTTP statuses: ALREADY_EXISTS is 400 (HttpCodeFromError), NOT_FOUND 404.
    expect(await register('r', { key, byte_size: 8 })).toStrictEqual({
      status: 400,
      json: { error: "shared memory region 'r' already in manager" },
    });
    expect(await call('GET', '/v2/systemsharedmemory/region/nope/status')).toStrictEqual({
      status: 404,
      json: { error: "Unable to find system shared memory region: 'nope'" },
    });
  });

  it('refuses inference requests that name regions wrongly, before the queue, with 400 (404 for a region not registered)', async () => {
    server = await startTestServer({ allowClientShm: true }, PADDLE_CLS);
    await register('in', { key, byte_size: INPUT_BYTES });
    await register('small', { key, offset: INPUT_BYTES, byte_size: 8 });
    expect(await infer({ inputs: [shmInput('nope')] })).toStrictEqual({
      status: 404,
      json: { error: "Unable to find shared memory region: 'nope'" },
    });
    const cases: [object, string][] = [
      [{ inputs: [shmInput('in', 8, INPUT_BYTES)] }, "Invalid offset for shared memory region: 'in'"],
      [{ inputs: [shmInput('in', INPUT_BYTES, 4)] }, "Invalid offset + byte size for shared memory region: 'in'"],
      [
        { inputs: [shmInput('in', 8)] },
        'input "x": shared_memory_byte_size is 8 bytes; shape [2, 3, 48, 192] of FP32 takes 221184',
      ],
      [
        { inputs: [{ ...shmInput('in'), data: [1] }] },
        "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'",
      ],
      [
        { inputs: [{ ...shmInput('in'), parameters: { shared_memory_region: 'in' } }] },
        "'shared_memory_region' needs 'shared_memory_byte_size'",
      ],
      [
        { inputs: [shmInput('in')], outputs: [shmOutput('small', 8, { classification: 1 })] },
        "Output can't set both 'shared_memory_region' and 'classification'",
      ],
      [
        { inputs: [shmInput('in')], outputs: [shmOutput('small', 8, { binary_data: true })] },
        "Output can't set both 'shared_memory_region' and 'binary_data'",
      ],
    ];
    for (const [body, message] of cases) {
      const answer = await infer(body);
      expect([message, answer.status]).toStrictEqual([message, 400]);
      expect(answer.json.error).toContain(message);
    }
    // Known only once the model has run: the [2, 2] output is 16 bytes.
    expect(await infer({ inputs: [shmInput('in')], outputs: [shmOutput('small', 8)] })).toStrictEqual({
      status: 400,
      json: {
        error: `invalid inputs: shared memory size specified with the request for output '${PADDLE_OUTPUT}' (8 bytes) should be at least 16 bytes to hold the results`,
      },
    });
  });

  it('is off by default: its routes 404 naming the flag, and a request naming a region is 400', async () => {
    server = await startTestServer({}, PADDLE_CLS);
    expect((await call('GET', '/v2')).json.extensions).not.toContain('system_shared_memory');
    const status = await call('GET', '/v2/systemsharedmemory/status');
    expect(status).toStrictEqual({
      status: 404,
      json: {
        error:
          "not found: GET /v2/systemsharedmemory/status: Triton's system shared memory extension is off: serve with --allow-client-shm",
      },
    });
    expect((await infer({ inputs: [shmInput('in')] })).json.error).toBe(
      'invalid inputs: input "x": Client shared memory is disabled. Start the server with \'--allow-client-shm\' to enable.',
    );
  });
});
