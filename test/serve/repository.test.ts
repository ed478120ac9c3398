import { join } from 'node:path';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { scanRepository, unreadTritonConfigWarning } from '../../src/serve/repository.js';
import { loadRepositoryModel, unloadRepositoryModel } from '../../src/serve/repository-extension.js';
import { startServer } from '../../src/serve/start-server.js';
import { startupVersions } from '../../src/serve/startup.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';

const onnx = linearModelOnnx([1, 2]);

/** A stream to give a server as its stderr, and the lines written to it. */
function logLines(): { lines: string[]; stderr: Writable } {
  const lines: string[] = [];
  const stderr = new Writable({
    write(chunk, _encoding, done) {
      lines.push(
        ...String(chunk)
          .split('\n')
          .filter((line) => line !== ''),
      );
      done();
    },
  });
  return { lines, stderr };
}

async function refusal(files: Record<string, Uint8Array | string | object>): Promise<string> {
  const root = await writeRepository(files);
  const error = await scanRepository(root).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BatchlineError);
  expect((error as BatchlineError).exitCode).toBe(2);
  return (error as Error).message.replaceAll(root, 'REPO');
}

describe('a model repository', () => {
  it('lists its models, versions by policy (latest 1 by default) and options', async () => {
    const root = await writeRepository({
      'b/1/model.onnx': onnx,
      'b/2/model.onnx': onnx,
      'b/config.json': { max_batch_size: 4, version_policy: { all: true } },
      'a/1/model.onnx': onnx,
      'a/7/model.onnx': onnx,
      'a/notes/readme.txt': 'not a version',
      'README.md': 'not a model',
      '.hidden/1/model.onnx': onnx,
    });
    const models = await scanRepository(root);
    expect(models.map((m) => [m.name, m.versions.map((v) => v.version)])).toEqual([
      ['a', [7]],
      ['b', [2, 1]],
    ]);
    expect(models[0]!.versions[0]!.path).toBe(join(root, 'a', '7', 'model.onnx'));
    expect(models[1]!.config.options).toEqual({ maxBatchSize: 4 });
  });

  it('warns at start-up of a Triton config.pbtxt, which is not read (its batch limit would be lost silently)', async () => {
    const root = await writeRepository({
      'triton/1/model.onnx': onnx,
      'triton/config.pbtxt': 'max_batch_size: 16\ndynamic_batching { }\n',
      'plain/1/model.onnx': onnx,
    });
    const models = await scanRepository(root);
    expect(models.map((m) => m.unreadTritonConfig)).toEqual([undefined, join(root, 'triton', 'config.pbtxt')]);
    const startup = await startupVersions(resolveOptions(SERVE_OPTIONS, { modelRepository: root }, {}));
    expect(startup.warnings).toEqual([
      `${join(root, 'triton', 'config.pbtxt')} is not read: a model's settings are the config.json beside it, and the flags (docs/models.md#many-models-a-model-repository)`,
    ]);
    expect(startup.versions.find((v) => v.name === 'triton')!.config.maxBatchSize).toBe(8);
  });

  it('says so too when serve() starts from code, and when Triton loads the model', async () => {
    const root = await writeRepository({
      'triton/1/model.onnx': onnx,
      'triton/config.pbtxt': 'max_batch_size: 16\n',
    });
    const { lines, stderr } = logLines();
    const config = resolveOptions(SERVE_OPTIONS, { port: 0, modelRepository: root, adminToken: 't' }, {});
    const server = await startServer(config, stderr);
    try {
      const warning = `batchline serve: warning: ${unreadTritonConfigWarning(join(root, 'triton', 'config.pbtxt'))}`;
      expect(lines.filter((line) => line.includes('warning'))).toEqual([warning]);
      await unloadRepositoryModel(server.runtime, 'triton');
      await loadRepositoryModel(server.runtime, 'triton');
      expect(lines.filter((line) => line.includes('warning'))).toEqual([warning, warning]);
    } finally {
      await server.close({ drainMs: 0 });
    }
  });

  it("groups a setting's warning for the versions a Triton load brings up in one line, as start-up does", async () => {
    // The load logged it once per version (model=m version=2: …, model=m version=1: …), where
    // start-up's log said it once for both.
    const root = await writeRepository({
      'm/1/model.onnx': onnx,
      'm/2/model.onnx': onnx,
      'm/config.json': { max_batch_size: 16, version_policy: { all: true } },
    });
    const { lines, stderr } = logLines();
    const config = resolveOptions(
      SERVE_OPTIONS,
      { port: 0, host: '127.0.0.1', modelRepository: root, adminToken: 't', maxQueueSize: 4, batchWindowMs: 0 },
      {},
    );
    const server = await startServer(config, stderr);
    try {
      const warning =
        'batchline serve: warning: model=m versions=1,2: --max-queue-size (4) is below max_batch_size (16): at most 4 wait, ' +
        'so no batch reaches 16; raise --max-queue-size to 16 or more, or lower max_batch_size to 4 ' +
        `(max_batch_size in ${join(root, 'm', 'config.json')})`;
      const warnings = () => lines.filter((line) => line.includes('warning'));
      expect(warnings()).toEqual([warning]);
      for (const action of ['unload', 'load']) {
        const reply = await request(`${server.url}/v2/repository/models/m/${action}`, {
          method: 'POST',
          headers: { authorization: 'Bearer t' },
        });
        await reply.body.text();
        expect(reply.statusCode).toBe(200);
      }
      expect(lines.filter((line) => line.includes(' ready '))).toHaveLength(2); // both versions came up again
      expect(warnings()).toEqual([warning, warning]);
    } finally {
      await server.close({ drainMs: 0 });
    }
  });

  it.each([
    [{ 'README.md': 'x' }, 'REPO holds no models'],
    [
      { 'a b/1/model.onnx': onnx },
      "REPO/a b is not a model: a model's name is letters, digits, '_', '.' and '-' (at most 128); every folder of the repository is read as a model, except those whose name starts with '.': move other folders out",
    ],
    [
      { 'a/model.onnx': onnx },
      "REPO/a is not a model: a model's folder holds a folder per version, named by its number (REPO/a/1/model.onnx or model.mjs), and an optional config.json; every folder of the repository is read as a model, except those whose name starts with '.': move other folders out",
    ],
    // A folder of documents beside a model stops the start, as it stops tritonserver's (--exit-on-error);
    // a hidden one (.git) is skipped.
    [
      { 'm/1/model.onnx': onnx, 'README/index.md': '# models', '.git/HEAD': 'ref: refs/heads/main' },
      "REPO/README is not a model: a model's folder holds a folder per version",
    ],
    [{ 'a/1/other.onnx': onnx }, 'REPO/a/1: no model.onnx'],
    [
      { 'a/1/model.onnx': onnx, 'a/config.json': { version_policy: { specific: [1, 3] } } },
      'REPO/a/config.json: version_policy names version 3, which REPO/a does not have',
    ],
    [{ 'a/1/model.onnx': onnx, 'a/config.json': '{"max_batch_size": 8,' }, 'REPO/a/config.json: not valid JSON'],
    [
      { 'a/1/model.onnx': onnx, 'a/config.json': { max_queue_size: -1 } },
      'REPO/a/config.json: max_queue_size: got -1, expected an integer from 1 to 10000000',
    ],
  ])('refuses %j, naming the place', async (files, message) => {
    expect(await refusal(files)).toContain(message);
  });

  it('names a directory it cannot read', async () => {
    const error = await scanRepository('/nonexistent/models').then(
      () => undefined,
      (e: unknown) => e as BatchlineError,
    );
    expect(error?.code).toBe('INVALID_OPTION');
    expect(error?.message).toContain('--model-repository: cannot read /nonexistent/models (ENOENT)');
  });
});

describe('--model given a file of a repository layout', () => {
  it('serves NAME/VERSION/model.onnx as the repository would, NAME version VERSION; any other file by its name, version 1', async () => {
    const root = await writeRepository({
      'scale/2/model.onnx': onnx,
      'loose/model.onnx': onnx,
      'classifier.onnx': onnx,
      'scale/0/model.onnx': onnx,
    });
    const served = async (path: string, flags: Record<string, unknown> = {}) => {
      const { versions } = await startupVersions(
        resolveOptions(SERVE_OPTIONS, { model: join(root, path), ...flags }, {}),
      );
      return versions.map((v) => [v.name, v.version]);
    };
    // It was model, version 1: /v2/models/scale/versions/2 was 404.
    expect(await served('scale/2/model.onnx')).toEqual([['scale', 2]]);
    expect(await served('scale/2/model.onnx', { modelName: 'mine' })).toEqual([['mine', 2]]);
    expect(await served('loose/model.onnx')).toEqual([['model', 1]]);
    expect(await served('classifier.onnx')).toEqual([['classifier', 1]]);
    expect(await served('scale/0/model.onnx')).toEqual([['model', 1]]);
  });
});
