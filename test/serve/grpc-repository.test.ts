import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { GRPC_STATUS } from '../../src/grpc-status.js';
import { grpcPairEachTest, type OipClient } from './grpc-helpers.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';

const TOKEN = 's3cret';
const admin = { metadata: { authorization: `Bearer ${TOKEN}` } };

const grpcServer = grpcPairEachTest();

/** A repository of two models, `a` (versions 1 and 2, both served) and `b`, on a server with the admin API unless `flags` say otherwise. */
async function start(flags: Record<string, unknown> = { adminToken: TOKEN }): Promise<OipClient> {
  const root = await writeRepository({
    'a/1/model.onnx': linearModelOnnx([1, 2]),
    'a/2/model.onnx': linearModelOnnx([3, 4]),
    'a/config.json': { version_policy: { all: true } },
    'b/1/model.onnx': linearModelOnnx([5, 6]),
  });
  return (await grpcServer.start({ modelRepository: root, ...flags })).client;
}

/** The gRPC status name and details of a failed call (undefined when it succeeded). */
function failure(result: { error?: { code: number; details: string } }): [string, string] | undefined {
  if (result.error === undefined) return undefined;
  const name = Object.entries(GRPC_STATUS).find(([, code]) => code === result.error!.code)?.[0];
  return [name ?? String(result.error.code), result.error.details];
}

/** What `/v2/repository/index` answers over HTTP, for comparison. */
async function httpIndex(body: object = {}): Promise<unknown> {
  const response = await request(`${grpcServer.current().server.url}/v2/repository/index`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(body),
  });
  return response.body.json();
}

describe("Triton's model repository calls over gRPC (--admin-token, --model-repository)", () => {
  it('lists, unloads and loads models as /v2/repository does, and lists the extension', async () => {
    const grpc = await start();
    expect((await grpc.call('ServerMetadata', {})).message.extensions).toContain('model_repository');
    const index = await grpc.call('RepositoryIndex', {}, admin);
    expect(index.message.models).toStrictEqual([
      { name: 'a', version: '2', state: 'READY', reason: '' },
      { name: 'a', version: '1', state: 'READY', reason: '' },
      { name: 'b', version: '1', state: 'READY', reason: '' },
    ]);
    expect(await httpIndex()).toStrictEqual(
      index.message.models.map(({ reason: _, ...row }: { reason: string }) => row),
    );

    expect(await grpc.call('RepositoryModelUnload', { model_name: 'a' }, admin)).toStrictEqual({ message: {} });
    expect((await grpc.call('ModelReady', { name: 'a' })).message.ready).toBe(false);
    const unloaded = await grpc.call('RepositoryIndex', {}, admin);
    expect(unloaded.message.models[0]).toStrictEqual({
      name: 'a',
      version: '',
      state: 'UNAVAILABLE',
      reason: 'unloaded',
    });
    expect((await grpc.call('RepositoryIndex', { ready: true }, admin)).message.models).toStrictEqual([
      { name: 'b', version: '1', state: 'READY', reason: '' },
    ]);

    // Answered once the versions are ready, as Triton's load is: a call right after it is served.
    expect(await grpc.call('RepositoryModelLoad', { model_name: 'a' }, admin)).toStrictEqual({ message: {} });
    expect((await grpc.call('ModelReady', { name: 'a', version: '1' })).message.ready).toBe(true);
    expect((await grpc.call('ModelReady', { name: 'a', version: '2' })).message.ready).toBe(true);
    // Triton's `unload_dependents` is taken (batchline has no ensembles: nothing depends on a model).
    const dependents = { model_name: 'b', parameters: { unload_dependents: { bool_param: true } } };
    expect(await grpc.call('RepositoryModelUnload', dependents, admin)).toStrictEqual({ message: {} });
  });

  it("refuses a call without the admin token, or with another, as /v2's 401 and 403", async () => {
    const grpc = await start();
    expect(failure(await grpc.call('RepositoryIndex', {}))).toStrictEqual([
      'UNAUTHENTICATED',
      'unauthorized: the admin API needs metadata authorization: Bearer <token>',
    ]);
    const wrong = { metadata: { authorization: 'Bearer guess' } };
    expect(failure(await grpc.call('RepositoryModelUnload', { model_name: 'a' }, wrong))).toStrictEqual([
      'PERMISSION_DENIED',
      'forbidden: wrong admin token',
    ]);
    expect(
      failure(await grpc.call('RepositoryModelLoad', { model_name: 'a' }, { metadata: { authorization: TOKEN } })),
    ).toStrictEqual(['UNAUTHENTICATED', 'unauthorized: the admin API needs metadata authorization: Bearer <token>']);
    // Nothing was unloaded.
    expect((await grpc.call('ModelReady', { name: 'a' })).message.ready).toBe(true);
  });

  it("refuses what /v2 refuses, with the error table's statuses and Triton's words", async () => {
    const grpc = await start();
    const cases: [string, object, string, string][] = [
      [
        'RepositoryIndex',
        { repository_name: 'r' },
        'UNIMPLEMENTED',
        "'repository_name' specification is not supported",
      ],
      ['RepositoryModelLoad', { model_name: 'nope' }, 'NOT_FOUND', "no such model: 'nope' is not in the repository"],
      ['RepositoryModelLoad', { model_name: '../a' }, 'NOT_FOUND', "no such model: '../a'"],
      [
        'RepositoryModelLoad',
        { model_name: 'a', parameters: { config: { string_param: '{"max_batch_size": 4}' } } },
        'INVALID_ARGUMENT',
        'load parameters (a config or files sent with the request: config) are not served',
      ],
      [
        'RepositoryModelUnload',
        { model_name: 'a', parameters: { unload_dependents: { int64_param: 1 } } },
        'INVALID_ARGUMENT',
        "invalid value type for 'unload_dependents' parameter, expected bool_param.",
      ],
    ];
    for (const [method, message, code, words] of cases) {
      const [status, details] = failure(await grpc.call(method, message, admin)) ?? [];
      expect([method, message, status]).toStrictEqual([method, message, code]);
      expect(details).toContain(words);
    }
    await grpc.call('RepositoryModelUnload', { model_name: 'b' }, admin);
    expect(failure(await grpc.call('RepositoryModelUnload', { model_name: 'b' }, admin))).toStrictEqual([
      'NOT_FOUND',
      "no such model: 'b' is not loaded",
    ]);
  });

  it('is UNIMPLEMENTED, saying why, without the admin API or with it on --admin-port', async () => {
    let grpc = await start({});
    expect((await grpc.call('ServerMetadata', {})).message.extensions).not.toContain('model_repository');
    expect(failure(await grpc.call('RepositoryIndex', {}, admin))).toStrictEqual([
      'UNIMPLEMENTED',
      "not found: RepositoryIndex: Triton's model repository extension is part of the admin API: serve with --admin-token and --model-repository",
    ]);
    grpc = await start({ adminToken: TOKEN, adminPort: 18999 });
    expect((await grpc.call('ServerMetadata', {})).message.extensions).not.toContain('model_repository');
    expect(failure(await grpc.call('RepositoryModelUnload', { model_name: 'a' }, admin))).toStrictEqual([
      'UNIMPLEMENTED',
      "not found: RepositoryModelUnload: Triton's model repository extension is on the admin API's listener (--admin-port 18999)",
    ]);
    expect((await grpc.call('ModelReady', { name: 'a' })).message.ready).toBe(true);
  });
});
