/**
 * Triton's system shared memory over gRPC (`--allow-client-shm`): the `SystemSharedMemory*` calls
 * of Triton's grpc_service.proto on the same regions as `/v2`, and `ModelInfer` reading inputs
 * from regions and writing outputs into them, on PaddleOCR's classifier and a two-input code model.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHM_DIR } from '../../src/serve/system-shared-memory.js';
import { float32Bytes, float32Values, grpcPairEachTest, type OipClient } from './grpc-helpers.js';
import { PADDLE_CLS, PADDLE_OUTPUT, writeRepository } from './repository-fixture.js';

const IMAGE_VALUES = 3 * 48 * 192;
/** Two images for PaddleOCR's classifier, a ramp and its mirror: 2 × 110,592 bytes of FP32. */
const images = new Float32Array(2 * IMAGE_VALUES).map((_, i) =>
  i < IMAGE_VALUES ? (i % 192) / 192 : 1 - (i % 192) / 192,
);
const INPUT_BYTES = images.byteLength;
const OUTPUT_BYTES = 2 * 2 * 4; // [2, 2] FP32

/** A model of two inputs (s = a + b, per item of 2): one input in shared memory, the other raw. */
const SUM_MODEL = `
export const inputs = [{ name: 'a', datatype: 'FP32', shape: [2] }, { name: 'b', datatype: 'FP32', shape: [2] }];
export const outputs = [{ name: 's', datatype: 'FP32', shape: [2] }, { name: 'd', datatype: 'FP32', shape: [2] }];
export function execute(items) {
  return items.map(({ a, b }) => ({ s: [a[0] + b[0], a[1] + b[1]], d: [a[0] - b[0], a[1] - b[1]] }));
}
`;

/** A POSIX shared memory object as a client's shm_open and ftruncate make it: the images at 0, room for outputs after. */
const key = `/batchline-grpc-test-${process.pid}-${randomBytes(4).toString('hex')}`;
const file = join(SHM_DIR, key.slice(1));
beforeAll(() => {
  writeFileSync(file, Buffer.alloc(INPUT_BYTES + 64));
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.from(images.buffer), 0, INPUT_BYTES, 0);
  closeSync(fd);
});
afterAll(() => rmSync(file, { force: true }));

const grpcServer = grpcPairEachTest();

async function start(flags: Record<string, unknown>): Promise<OipClient> {
  const root = await writeRepository({ 'cls/1/model.onnx': await readFile(PADDLE_CLS), 'sum/1/model.mjs': SUM_MODEL });
  return (await grpcServer.start({ modelRepository: root, defaultModel: 'cls', ...flags })).client;
}

const int64 = (value: number) => ({ int64_param: value });
const regionParameters = (region: string, byteSize: number, offset?: number) => ({
  shared_memory_region: { string_param: region },
  shared_memory_byte_size: int64(byteSize),
  ...(offset === undefined ? {} : { shared_memory_offset: int64(offset) }),
});
const shmImages = (region: string, byteSize = INPUT_BYTES, offset?: number) => ({
  name: 'x',
  datatype: 'FP32',
  shape: [2, 3, 48, 192],
  parameters: regionParameters(region, byteSize, offset),
});
const shmSoftmax = (region: string, byteSize = OUTPUT_BYTES) => ({
  name: PADDLE_OUTPUT,
  parameters: regionParameters(region, byteSize),
});

/** The gRPC status name and details of a failed call (undefined when it succeeded). */
function failure(result: { error?: { code: number; details: string } }): [string, string] | undefined {
  if (result.error === undefined) return undefined;
  const names = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS'];
  const more = ['PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE'];
  return [[...names, ...more, 'UNIMPLEMENTED'][result.error.code] ?? String(result.error.code), result.error.details];
}

describe("Triton's system shared memory over gRPC (--allow-client-shm)", () => {
  it('registers, lists and unregisters regions, shared with /v2, and lists the extension', async () => {
    const grpc = await start({ allowClientShm: true });
    const meta = await grpc.call('ServerMetadata', {});
    expect(meta.message.extensions).toContain('system_shared_memory');
    expect(await grpc.call('SystemSharedMemoryRegister', { name: 'in', key, byte_size: INPUT_BYTES })).toStrictEqual({
      message: {},
    });
    const out = { name: 'out', key, offset: INPUT_BYTES, byte_size: 64 };
    expect((await grpc.call('SystemSharedMemoryRegister', out)).error).toBeUndefined();
    const all = await grpc.call('SystemSharedMemoryStatus', {});
    expect(all.message.regions).toStrictEqual({
      in: { name: 'in', key, offset: 0, byte_size: INPUT_BYTES },
      out,
    });
    expect((await grpc.call('SystemSharedMemoryStatus', { name: 'out' })).message.regions).toStrictEqual({ out });
    // One registry: /v2 lists what gRPC registered.
    const overHttp = await request(`${grpcServer.current().server.url}/v2/systemsharedmemory/status`);
    expect(((await overHttp.body.json()) as { name: string }[]).map((region) => region.name)).toStrictEqual([
      'in',
      'out',
    ]);
    expect((await grpc.call('SystemSharedMemoryUnregister', { name: 'in' })).error).toBeUndefined();
    expect(Object.keys((await grpc.call('SystemSharedMemoryStatus', {})).message.regions)).toStrictEqual(['out']);
    // An empty name is every region, as in Triton; a name not registered is no error.
    expect((await grpc.call('SystemSharedMemoryUnregister', { name: 'never' })).error).toBeUndefined();
    expect((await grpc.call('SystemSharedMemoryUnregister', {})).error).toBeUndefined();
    expect((await grpc.call('SystemSharedMemoryStatus', {})).message.regions).toStrictEqual({});
  });

  it('refuses bad registrations in Triton’s words and statuses (NOT_FOUND, ALREADY_EXISTS, INVALID_ARGUMENT)', async () => {
    const grpc = await start({ allowClientShm: true });
    const cases: [object, string][] = [
      [{ key, byte_size: 8 }, "'region name' is necessary to register system shared memory region"],
      [{ name: 'r', byte_size: 8 }, "invalid shm key ''"],
      [
        { name: 'r', key, offset: INPUT_BYTES, byte_size: 65 },
        "failed to register shared memory region 'r': invalid args",
      ],
      [{ name: 'r', key: '/../../etc/passwd', byte_size: 8 }, "invalid shm key '/../../etc/passwd'"],
      [{ name: 'r', key: '/no-such-object', byte_size: 8 }, "Unable to open shared memory region: '/no-such-object'"],
    ];
    for (const [message, words] of cases) {
      const [code, details] = failure(await grpc.call('SystemSharedMemoryRegister', message)) ?? [];
      expect([message, code]).toStrictEqual([message, 'INVALID_ARGUMENT']);
      expect(details).toContain(words);
    }
    await grpc.call('SystemSharedMemoryRegister', { name: 'r', key, byte_size: 8 });
    // Triton's shared_memory_manager.cc: TRITONSERVER_ERROR_ALREADY_EXISTS and _NOT_FOUND, which its gRPC server passes on.
    expect(failure(await grpc.call('SystemSharedMemoryRegister', { name: 'r', key, byte_size: 8 }))).toStrictEqual([
      'ALREADY_EXISTS',
      "shared memory region 'r' already in manager",
    ]);
    expect(failure(await grpc.call('SystemSharedMemoryStatus', { name: 'nope' }))).toStrictEqual([
      'NOT_FOUND',
      "Unable to find system shared memory region: 'nope'",
    ]);
  });

  it('reads inputs from a region and writes outputs into one: the bytes the same images give in the message', async () => {
    const grpc = await start({ allowClientShm: true });
    await grpc.call('SystemSharedMemoryRegister', { name: 'in', key, byte_size: INPUT_BYTES });
    await grpc.call('SystemSharedMemoryRegister', { name: 'out', key, offset: INPUT_BYTES, byte_size: 64 });
    const inMessage = await grpc.infer({
      model_name: 'cls',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 3, 48, 192] }],
      raw_input_contents: [Buffer.from(images.buffer)],
    });
    const softmax = float32Values(inMessage.message.raw_output_contents[0]);

    const answer = await grpc.infer({
      model_name: 'cls',
      id: 'shm-1',
      inputs: [shmImages('in')],
      outputs: [shmSoftmax('out')],
    });
    expect(answer.error).toBeUndefined();
    // As Triton answers: the output's name, datatype and shape, no contents, an empty raw entry.
    expect(answer.message).toMatchObject({
      id: 'shm-1',
      outputs: [{ name: PADDLE_OUTPUT, datatype: 'FP32', shape: [2, 2], contents: null }],
      raw_output_contents: [Buffer.alloc(0)],
    });
    const written = readFileSync(file).subarray(INPUT_BYTES, INPUT_BYTES + OUTPUT_BYTES);
    expect(float32Values(written)).toStrictEqual(softmax);

    // An offset into the region: the second image alone, its answer raw in the message.
    const second = await grpc.infer({
      model_name: 'cls',
      inputs: [{ ...shmImages('in', INPUT_BYTES / 2, INPUT_BYTES / 2), shape: [1, 3, 48, 192] }],
    });
    expect(float32Values(second.message.raw_output_contents[0])).toStrictEqual(softmax.slice(2));
  });

  it('counts raw_input_contents over the inputs not in shared memory, and keeps raw outputs at their index', async () => {
    const grpc = await start({ allowClientShm: true });
    const a = float32Bytes([1, 2, 3, 4]); // two items of [2]
    const fd = openSync(file, 'r+');
    writeSync(fd, a, 0, a.length, INPUT_BYTES);
    closeSync(fd);
    await grpc.call('SystemSharedMemoryRegister', { name: 'a', key, offset: INPUT_BYTES, byte_size: 16 });
    await grpc.call('SystemSharedMemoryRegister', { name: 's', key, offset: INPUT_BYTES + 16, byte_size: 16 });
    const answer = await grpc.infer({
      model_name: 'sum',
      inputs: [
        { name: 'a', datatype: 'FP32', shape: [2, 2], parameters: regionParameters('a', 16) },
        { name: 'b', datatype: 'FP32', shape: [2, 2] },
      ],
      outputs: [{ name: 's', parameters: regionParameters('s', 16) }, { name: 'd' }],
      raw_input_contents: [float32Bytes([10, 20, 30, 40])], // b's: the one input not in a region
    });
    expect(answer.error).toBeUndefined();
    // Triton's answer: an empty raw entry for the output in shared memory, d's bytes at index 1.
    expect(answer.message.raw_output_contents.map((bytes: Uint8Array) => bytes.length)).toStrictEqual([0, 16]);
    expect(float32Values(answer.message.raw_output_contents[1])).toStrictEqual([-9, -18, -27, -36]);
    expect(float32Values(readFileSync(file).subarray(INPUT_BYTES + 16, INPUT_BYTES + 32))).toStrictEqual([
      11, 22, 33, 44,
    ]);

    const both = await grpc.infer({
      model_name: 'sum',
      inputs: [
        { name: 'a', datatype: 'FP32', shape: [2, 2], parameters: regionParameters('a', 16) },
        { name: 'b', datatype: 'FP32', shape: [2, 2] },
      ],
      raw_input_contents: [a, a],
    });
    expect(failure(both)).toStrictEqual([
      'INVALID_ARGUMENT',
      'invalid inputs: raw_input_contents has 2 entries for 1 inputs not in shared memory: one per input, in the order of "inputs"',
    ]);
  });

  it('refuses requests that name regions wrongly, before the queue, with Triton’s statuses', async () => {
    const grpc = await start({ allowClientShm: true });
    await grpc.call('SystemSharedMemoryRegister', { name: 'in', key, byte_size: INPUT_BYTES });
    await grpc.call('SystemSharedMemoryRegister', { name: 'small', key, offset: INPUT_BYTES, byte_size: 8 });
    // A region not registered is Triton's NOT_FOUND (GetMemoryInfo); the rest INVALID_ARGUMENT.
    expect(failure(await grpc.infer({ model_name: 'cls', inputs: [shmImages('nope')] }))).toStrictEqual([
      'NOT_FOUND',
      "Unable to find shared memory region: 'nope'",
    ]);
    expect(
      failure(await grpc.infer({ model_name: 'cls', inputs: [shmImages('in')], outputs: [shmSoftmax('nope')] })),
    ).toStrictEqual(['NOT_FOUND', "Unable to find shared memory region: 'nope'"]);
    const cases: [object, string][] = [
      [{ inputs: [shmImages('in', INPUT_BYTES, 4)] }, "Invalid offset + byte size for shared memory region: 'in'"],
      [
        { inputs: [shmImages('in', 8)] },
        'shared_memory_byte_size is 8 bytes; shape [2, 3, 48, 192] of FP32 takes 221184',
      ],
      [
        { inputs: [{ ...shmImages('in'), contents: { fp32_contents: [1] } }] },
        `input "x": unexpected 'content' provided when using shared memory`,
      ],
      [
        {
          inputs: [
            { ...shmImages('in'), parameters: { shared_memory_region: int64(1), shared_memory_byte_size: int64(8) } },
          ],
        },
        "invalid value type for 'shared_memory_region' parameter for tensor 'x', expected string_param, got int64_param",
      ],
      [
        {
          inputs: [shmImages('in')],
          outputs: [
            {
              name: PADDLE_OUTPUT,
              parameters: { ...regionParameters('small', 8), shared_memory_byte_size: { string_param: '8' } },
            },
          ],
        },
        "invalid value type for 'shared_memory_byte_size' parameter for tensor 'softmax_0.tmp_0', expected int64_param or uint64_param, got string_param",
      ],
      [
        {
          inputs: [shmImages('in')],
          outputs: [
            { ...shmSoftmax('small', 8), parameters: { ...regionParameters('small', 8), classification: int64(1) } },
          ],
        },
        "Output can't set both 'shared_memory_region' and 'classification'",
      ],
      [
        { inputs: [{ ...shmImages('in'), parameters: { shared_memory_offset: int64(0) } }] },
        "'shared_memory_offset' is given without 'shared_memory_region'",
      ],
    ];
    for (const [message, words] of cases) {
      const [code, details] = failure(await grpc.infer({ model_name: 'cls', ...message })) ?? [];
      expect([words, code]).toStrictEqual([words, 'INVALID_ARGUMENT']);
      expect(details).toContain(words);
    }
    // Known only once the model has run: the [2, 2] output is 16 bytes.
    expect(
      failure(await grpc.infer({ model_name: 'cls', inputs: [shmImages('in')], outputs: [shmSoftmax('small', 8)] })),
    ).toStrictEqual([
      'INVALID_ARGUMENT',
      `invalid inputs: shared memory size specified with the request for output '${PADDLE_OUTPUT}' (8 bytes) should be at least 16 bytes to hold the results`,
    ]);
  });

  it('is off by default: register and unregister are UNIMPLEMENTED naming the flag, status lists nothing', async () => {
    const grpc = await start({});
    expect((await grpc.call('ServerMetadata', {})).message.extensions).not.toContain('system_shared_memory');
    expect((await grpc.call('SystemSharedMemoryStatus', {})).message.regions).toStrictEqual({});
    const disabled = "Client shared memory is disabled. Start the server with '--allow-client-shm' to enable.";
    expect(failure(await grpc.call('SystemSharedMemoryRegister', { name: 'in', key, byte_size: 8 }))).toStrictEqual([
      'UNIMPLEMENTED',
      `not found: SystemSharedMemoryRegister: ${disabled}`,
    ]);
    expect(failure(await grpc.call('SystemSharedMemoryUnregister', {}))?.[0]).toBe('UNIMPLEMENTED');
    expect(failure(await grpc.infer({ model_name: 'cls', inputs: [shmImages('in')] }))).toStrictEqual([
      'INVALID_ARGUMENT',
      `invalid inputs: input "x": ${disabled}`,
    ]);
  });
});
