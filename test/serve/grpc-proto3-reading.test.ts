import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PATIENCE_MS } from '../patience.js';
import { type GrpcTestServer, startGrpcTestServer } from './grpc-helpers.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';

/**
 * The methods besides ModelInfer read their requests' bytes as proto3 does (and Triton's C++
 * protobuf): the bytes are written by hand, as a proxy that concatenates encoded parts writes
 * them, and sent as they are.
 */
const TOKEN = 's3cret';

let server: GrpcTestServer;
let client: grpc.Client;
beforeAll(async () => {
  const repository = await writeRepository({ 'b/1/model.onnx': linearModelOnnx([5, 6]) });
  server = await startGrpcTestServer({ modelRepository: repository, adminToken: TOKEN });
  client = new grpc.Client(server.target, grpc.credentials.createInsecure());
});
afterAll(async () => {
  client?.close();
  await server?.close();
});

/** `method` called with `bytes` as they are: 'OK' or the status's name and details. */
function call(method: string, bytes: Uint8Array): Promise<string> {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${TOKEN}`);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      `/inference.GRPCInferenceService/${method}`,
      (value: Buffer) => value,
      (value: Buffer) => value,
      Buffer.from(bytes),
      metadata,
      { deadline: Date.now() + PATIENCE_MS },
      (error) => resolve(error === null ? 'OK' : `${grpc.status[error.code]} ${error.details}`),
    );
  });
}

/** A `ModelRepositoryParameter` of one member: bool_param 1, int64_param 2, string_param 3, bytes_param 4. */
function parameter(id: number, value: boolean | number | string | Uint8Array): Uint8Array {
  const writer = protobuf.Writer.create().uint32((id << 3) | (id <= 2 ? 0 : 2));
  if (typeof value === 'boolean') writer.bool(value);
  else if (typeof value === 'number') writer.int64(value);
  else if (typeof value === 'string') writer.string(value);
  else writer.bytes(value);
  return writer.finish();
}

/** A Repository{Load,Unload}Request of `model` whose parameter `key` is an entry with `values` (each a `value` field). */
function repositoryRequest(model: string, key: string, ...values: Uint8Array[]): Uint8Array {
  const entry = protobuf.Writer.create()
    .uint32((1 << 3) | 2)
    .string(key);
  for (const value of values) entry.uint32((2 << 3) | 2).bytes(value);
  return protobuf.Writer.create()
    .uint32((2 << 3) | 2)
    .string(model)
    .uint32((3 << 3) | 2)
    .bytes(entry.finish())
    .finish();
}

const concat = (...parts: Uint8Array[]): Uint8Array => Buffer.concat(parts);

/** Loads `b` again (an unload that is taken unloads it), so the next unload has a model to take. */
async function loadB(): Promise<void> {
  const request = protobuf.Writer.create()
    .uint32((2 << 3) | 2)
    .string('b')
    .finish();
  expect(await call('RepositoryModelLoad', request)).toBe('OK');
}

describe('the repository calls read a oneof and a message given twice as proto3 does', () => {
  it("reads unload_dependents' oneof as its member last on the wire", async () => {
    // bool_param then string_param: proto3 has the string, refused as Triton refuses it.
    expect(
      await call(
        'RepositoryModelUnload',
        repositoryRequest('b', 'unload_dependents', concat(parameter(1, true), parameter(3, 'yes'))),
      ),
    ).toMatch(/^INVALID_ARGUMENT .*expected bool_param/);
    // string_param then bool_param: proto3 has the bool.
    await loadB();
    expect(
      await call(
        'RepositoryModelUnload',
        repositoryRequest('b', 'unload_dependents', concat(parameter(3, 'yes'), parameter(1, true))),
      ),
    ).toBe('OK');
  });

  it("merges a map entry's value given twice, as proto3 merges any message field given twice", async () => {
    // A bool_param, then an empty value: merged, the bool stays.
    await loadB();
    expect(
      await call(
        'RepositoryModelUnload',
        repositoryRequest('b', 'unload_dependents', parameter(1, true), new Uint8Array()),
      ),
    ).toBe('OK');
  });

  it('refuses a load config given as string_param then bytes_param as any load parameter', async () => {
    expect(
      await call(
        'RepositoryModelLoad',
        repositoryRequest('b', 'config', concat(parameter(3, '{}'), parameter(4, Buffer.from('{}')))),
      ),
    ).toMatch(/^INVALID_ARGUMENT invalid model configuration: load parameters .*: config\) are not served/);
  });
});
