import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { BatchlineError } from '../../src/errors.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { startupVersions } from '../../src/serve/startup.js';
import { buildServer } from '../../src/serve/build-server.js';
import { linearModelOnnx, PADDLE_REC, writeRepository } from './repository-fixture.js';
import { infer, startTestServer, type TestServer } from './test-server.js';
import { tempDir } from '../temp-dir.js';
import { tableRow } from '../reliability/table.js';

const TOKEN = 'admin-secret';
const auth = { authorization: `Bearer ${TOKEN}` };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
}

async function call(
  method: 'GET' | 'POST' | 'DELETE' | 'PATCH',
  url: string,
  body?: unknown,
  headers: Record<string, string> = auth,
): Promise<Answer> {
  const response = await request(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, json: text === '' ? undefined : JSON.parse(text) };
}

/** A repository with model m version 1 (weights [1, 2]), spare files for registrations, and hostile ones. */
async function repository(): Promise<string> {
  const root = await writeRepository({
    'm/1/model.onnx': linearModelOnnx([1, 2]),
    'm/2/model.onnx': linearModelOnnx([10, 20]),
    'm/3/model.onnx': new TextEncoder().encode('this is not a protobuf'),
    'm/notes.txt': 'not a model',
    'other/1/model.onnx': linearModelOnnx([3]),
  });
  await mkdir(join(root, 'm', 'dir.onnx'));
  const outside = tempDir('batchline-outside-');
  await writeFile(join(outside, 'model.onnx'), linearModelOnnx([1, 2]));
  await symlink(join(outside, 'model.onnx'), join(root, 'm', 'escape.onnx'));
  await symlink(join(root, 'm', '2', 'model.onnx'), join(root, 'm', 'inside.onnx'));
  return root;
}

async function adminServer(flags: Record<string, unknown> = {}): Promise<TestServer> {
  const root = await repository();
  // Only m is loaded at start-up: a policy of version 1 (the files for 2 and 3 are spares).
  await writeFile(
    join(root, 'm', 'config.json'),
    JSON.stringify({ version_policy: { specific: [1] }, max_batch_size: 4 }),
  );
  await writeFile(join(root, 'other', 'config.json'), JSON.stringify({}));
  return startTestServer({ modelRepository: root, adminToken: TOKEN, defaultModel: 'm', ...flags });
}

/**
 * A server whose model `held` (an inline code model) runs one batch that waits for the test:
 * the request `held` is running until `release()`, so its version drains until then.
 */
async function heldBatch(flags: Record<string, unknown> = {}) {
  let release = (): void => {};
  (globalThis as { adminTestGate?: Promise<void> }).adminTestGate = new Promise((resolve) => {
    release = resolve;
  });
  const root = await writeRepository({
    'held/1/model.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export async function execute(items) { await globalThis.adminTestGate; return items.map(({ x }) => ({ y: x })); }
`,
    'held/config.json': { execution: 'inline' },
  });
  server = await startTestServer({ modelRepository: root, adminToken: TOKEN, ...flags });
  const runtime = server.runtime;
  const version = runtime.registry.resolve('held', 1)!;
  const started = new Promise<void>((resolve) => version.batcher.addObserver({ batchStarted: () => resolve() }));
  const held = infer(`${server.url}/models/held/predict`, { inputs: [1] });
  await started;
  return { url: server.url, runtime, version, held, release };
}

describe('the admin API', () => {
  it("shows a version's options as config.json writes them, so that they register back as they are", async () => {
    // model_latency_ms was {"aMs":1,"bMs":0.5} and priority_queue_policy's fields camelCase: neither a
    // config.json nor a registration takes them back ('expected a single value', 'unknown field "maxQueueSize"').
    const given = {
      max_batch_size: 4,
      model_latency_ms: '1+0.5n',
      priority_levels: 2,
      priority_queue_policy: { 1: { max_queue_size: 4, default_timeout_microseconds: 100_000 } },
    };
    server = await adminServer();
    const registered = await call('POST', `${server.url}/admin/models/m`, {
      version: 2,
      path: 'm/2/model.onnx',
      ...given,
    });
    expect(registered.status).toBe(201);
    const config = (await call('GET', `${server.url}/v1/models/m/versions/2`)).json.config;
    expect(config).toMatchObject(given);
    expect((await call('GET', `${server.url}/v1/models/m/versions/1`)).json.config.model_latency_ms).toBe(0);
    const again = await call('POST', `${server.url}/admin/models/m`, { ...config, version: 4, path: 'm/2/model.onnx' });
    expect([again.status, again.json.error?.message]).toEqual([201, undefined]);
    expect(again.json.config).toEqual(config);
  });

  it('does not exist without --admin-token', async () => {
    server = await startTestServer();
    const reply = await call('GET', `${server.url}/admin/models`);
    expect([reply.status, reply.json.error.code]).toEqual([404, 'not_found']);
  });

  it.each([
    ['no Authorization header', {}, 401, 'unauthorized'],
    ['another scheme', { authorization: `Basic ${TOKEN}` }, 401, 'unauthorized'],
    ['an empty bearer', { authorization: 'Bearer ' }, 401, 'unauthorized'],
    ['a wrong token', { authorization: 'Bearer admin-secreT' }, 403, 'forbidden'],
    ['a longer token', { authorization: `Bearer ${TOKEN}x` }, 403, 'forbidden'],
  ])('refuses %s (%j) with %i %s, on every admin route', async (_name, headers, status, code) => {
    server ??= await adminServer();
    for (const [method, path, body] of [
      ['GET', '/admin/models', undefined],
      ['POST', '/admin/models/m', { version: 2, path: 'm/2/model.onnx' }],
      ['DELETE', '/admin/models/m/1', undefined],
      ['DELETE', '/admin/models/m', undefined],
    ] as const) {
      const reply = await call(method, `${server.url}${path}`, body, headers);
      expect([reply.status, reply.json.error.code], `${method} ${path}`).toEqual([status, code]);
      if (status === 401) expect(reply.headers['www-authenticate']).toBe('Bearer realm="batchline admin"');
    }
    // Nothing was registered or removed.
    expect(server.runtime.registry.versionsOf('m').map((v) => v.version)).toEqual([1]);
  });

  it.each([
    ['a path that climbs out', { version: 2, path: '../m/2/model.onnx' }, 400, 'bad_model_path', 'contains ".."'],
    [
      'a climb in the middle',
      { version: 2, path: 'm/2/../../../etc/model.onnx' },
      400,
      'bad_model_path',
      'contains ".."',
    ],
    ['an absolute path', { version: 2, path: '/etc/passwd.onnx' }, 400, 'bad_model_path', 'is absolute'],
    [
      'a symbolic link that leaves the repository',
      { version: 2, path: 'm/escape.onnx' },
      400,
      'bad_model_path',
      'leads outside the model repository',
    ],
    [
      'a file that is neither ONNX nor a code model',
      { version: 2, path: 'm/notes.txt' },
      400,
      'bad_model_path',
      'is neither an ONNX file (.onnx) nor a code model (.mjs, .js)',
    ],
    ['a directory named .onnx', { version: 2, path: 'm/dir.onnx' }, 400, 'bad_model_path', 'is not a regular file'],
    [
      'a missing file',
      { version: 2, path: 'm/9/model.onnx' },
      400,
      'bad_model_path',
      'no such file in the model repository',
    ],
    ['no path', { version: 2 }, 400, 'bad_model_path', '"path" must be a file name relative to the model repository'],
    [
      'a NUL in the path',
      { version: 2, path: 'm/2/model.onnx\u0000.onnx' },
      400,
      'bad_model_path',
      'holds a NUL character',
    ],
    ['a version that is registered', { version: 1, path: 'm/2/model.onnx' }, 409, 'version_exists', 'm version 1'],
    [
      'a file onnxruntime cannot load',
      { version: 3, path: 'm/3/model.onnx' },
      422,
      'model_load_failed',
      'could not load model: ',
    ],
    [
      'an option out of range',
      { version: 2, path: 'm/2/model.onnx', max_batch_size: 0 },
      400,
      'invalid_model_config',
      'request body: max_batch_size: got 0, expected an integer from 1 to 4096',
    ],
    [
      'an unknown field',
      { version: 2, path: 'm/2/model.onnx', modules: 'myapp.models' },
      400,
      'invalid_model_config',
      'unknown field "modules"',
    ],
    [
      "the middleware's module beside a path",
      { version: 2, path: 'm/2/model.onnx', module: 'myapp.models' },
      400,
      'invalid_model_config',
      'give path or module, not both',
    ],
    ['a bad version', { version: 'two', path: 'm/2/model.onnx' }, 400, 'invalid_model_config', 'version: got "two"'],
  ])('refuses %s (%j) with %i %s, disturbing nothing', async (_name, body, status, code, message) => {
    server ??= await adminServer();
    const reply = await call('POST', `${server.url}/admin/models/m`, body);
    expect([reply.status, reply.json.error.code]).toEqual([status, code]);
    expect(reply.json.error.message).toContain(message);
    expect(server.runtime.registry.versionsOf('m').map((v) => [v.version, v.state])).toEqual([[1, 'ready']]);
    expect((await infer(`${server.url}/models/m/predict`, { inputs: [1, 1] })).json.outputs.y).toEqual([3]);
  });

  it.each([
    ['a __proto__ key', '{"version": 2, "path": "m/2/model.onnx", "__proto__": {"max_batch_size": 1}}', '"__proto__"'],
    [
      'a __proto__ key in parameters',
      '{"version": 2, "path": "m/2/model.onnx", "parameters": {"__proto__": {"polluted": true}}}',
      '"parameters.__proto__"',
    ],
    [
      'a constructor.prototype',
      '{"version": 2, "path": "m/2/model.onnx", "constructor": {"prototype": {"polluted": true}}}',
      '"constructor.prototype"',
    ],
    // JSON.parse makes "\u005f_proto__" the key __proto__; Fastify's own parser refused it.
    [
      'a __proto__ key spelled with an escape',
      '{"version": 2, "path": "m/2/model.onnx", "parameters": {"\\u005f_proto__": {"polluted": true}}}',
      '"parameters.__proto__"',
    ],
    [
      'a constructor.prototype spelled with escapes',
      '{"version": 2, "path": "m/2/model.onnx", "\\u0063onstructor": {"prototyp\\u0065": {"polluted": true}}}',
      '"constructor.prototype"',
    ],
  ])('refuses %s with a 400 naming it, pollutes no prototype, disturbs nothing', async (_name, body, field) => {
    server ??= await adminServer();
    const response = await request(`${server.url}/admin/models/m`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body,
    });
    const json = (await response.body.json()) as any;
    // It was 400 bad_json "Body is not valid JSON but content-type is set to 'application/json'".
    expect([response.statusCode, json.error.code]).toEqual([400, 'bad_request']);
    expect(json.error.message).toBe(
      `malformed request: request body: ${field} is refused: a key that would set an object's prototype`,
    );
    expect(({} as { polluted?: unknown; max_batch_size?: unknown }).polluted).toBeUndefined();
    expect(({} as { max_batch_size?: unknown }).max_batch_size).toBeUndefined();
    expect(server.runtime.registry.versionsOf('m').map((v) => [v.version, v.state])).toEqual([[1, 'ready']]);
  });

  it('refuses a constructor field as any unknown one, naming it', async () => {
    server = await adminServer();
    const response = await request(`${server.url}/admin/models/m`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: '{"version": 2, "path": "m/2/model.onnx", "constructor": 1}',
    });
    const json = (await response.body.json()) as any;
    expect([response.statusCode, json.error.code]).toEqual([400, 'invalid_model_config']);
    expect(json.error.message).toMatch(
      /^invalid model configuration: request body: unknown field "constructor"; allowed: /,
    );
  });

  it('reads a latency_profile only as a regular file inside the repository, and never waits on a FIFO (#9)', async () => {
    server = await adminServer();
    const root = server.runtime.config.modelRepository!;
    const profile = {
      format: 'batchline-latency-profile/1',
      model: 'linear',
      warmup: 0,
      repetitions: 1,
      points: [{ batch_size: 1, mean_ms: 1, p50_ms: 1, p90_ms: 1, min_ms: 1, max_ms: 1, cv: 0 }],
      fit: { a_ms: 1, b_ms: 0, r2: 1 },
    };
    await writeFile(join(root, 'm', 'profile.json'), JSON.stringify(profile));
    // Four FIFOs, as many as libuv's threads: each held one for ever, and then every load hung.
    for (let i = 0; i < 4; i++) execFileSync('mkfifo', [join(root, 'm', `fifo${i}.json`)]);
    const refusals: [unknown, string][] = [
      ['/etc/shadow', 'latency_profile "/etc/shadow" is absolute'],
      ['../../etc/passwd', 'latency_profile "../../etc/passwd" contains ".."'],
      ['m/missing.json', 'latency_profile "m/missing.json": no such file in the model repository'],
      ...[0, 1, 2, 3].map((i): [string, string] => [`m/fifo${i}.json`, `"m/fifo${i}.json" is not a regular file`]),
    ];
    for (const [given, message] of refusals) {
      const reply = await call('POST', `${server.url}/admin/models/m`, {
        version: 2,
        path: 'm/2/model.onnx',
        latency_profile: given,
      });
      expect([reply.status, reply.json.error.code, reply.json.error.message], String(given)).toEqual([
        400,
        'bad_model_path',
        expect.stringContaining(message),
      ]);
    }
    // A file that is no profile: refused naming the body's field and the path it gave (it was
    // `invalid_option: --latency-profile` and the server's absolute path).
    const notAProfile = await call('POST', `${server.url}/admin/models/m`, {
      version: 2,
      path: 'm/2/model.onnx',
      latency_profile: 'm/notes.txt',
    });
    expect([notAProfile.status, notAProfile.json.error.code, notAProfile.json.error.message]).toEqual([
      400,
      'invalid_model_config',
      "invalid model configuration: request body: latency_profile: 'm/notes.txt' is not JSON; expected a file written by batchline profile --out",
    ]);
    const registered = await call('POST', `${server.url}/admin/models/m`, {
      version: 2,
      path: 'm/2/model.onnx',
      latency_profile: 'm/profile.json',
    });
    expect(registered.status).toBe(201);
    tableRow(
      '#9 an admin latency_profile of /etc/shadow, ../.., a missing file, 4 FIFOs',
      '400 bad_model_path at once, as model paths; a regular file inside the repository is read',
      `${refusals.length} × 400 bad_model_path; 4 FIFOs refused "is not a regular file"; then 201 with m/profile.json`,
    );
  });

  it("reads a config.json's latency_profile in the repository, as a registration's, and shows it so", async () => {
    // It was read from the server's working directory: 'cannot read 'm/profile.json' (ENOENT)' unless
    // serve ran in the repository; and a registration showed the real path, which it refuses back ('is absolute').
    const profile = {
      format: 'batchline-latency-profile/1',
      model: 'linear',
      warmup: 0,
      repetitions: 1,
      points: [{ batch_size: 1, mean_ms: 1, p50_ms: 1, p90_ms: 1, min_ms: 1, max_ms: 1, cv: 0 }],
      fit: { a_ms: 1, b_ms: 0, r2: 1 },
    };
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/2/model.onnx': linearModelOnnx([10, 20]),
      'm/profile.json': profile,
      'm/config.json': { version_policy: { specific: [1] }, latency_profile: 'm/profile.json' },
    });
    expect(process.cwd()).not.toBe(root);
    server = await startTestServer({ modelRepository: root, adminToken: TOKEN });
    const config = (await call('GET', `${server.url}/v1/models/m/versions/1`)).json.config;
    expect(config.latency_profile).toBe('m/profile.json');
    const again = await call('POST', `${server.url}/admin/models/m`, { ...config, version: 2, path: 'm/2/model.onnx' });
    expect([again.status, again.json.config?.latency_profile]).toEqual([201, 'm/profile.json']);
    const inherited = await call('POST', `${server.url}/admin/models/m`, { version: 3, path: 'm/2/model.onnx' });
    expect([inherited.status, inherited.json.config?.latency_profile]).toEqual([201, 'm/profile.json']);
  });

  it("refuses a config.json's latency_profile that is no profile as that file's field, at start-up and in a registration that inherits it", async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/p.json': 'nope',
      'm/config.json': { latency_profile: 'm/p.json' },
    });
    // It was named --latency-profile, a flag nobody gave.
    const config = resolveOptions(SERVE_OPTIONS, { modelRepository: root }, {});
    const built = buildServer(config);
    const error = await built.runtime.loadStartup((await startupVersions(config)).versions).then(
      () => undefined,
      (e: unknown) => e as BatchlineError,
    );
    await built.runtime.closeModels();
    expect([error?.code, error?.message]).toEqual([
      'INVALID_MODEL_CONFIG',
      `invalid model configuration: ${join(root, 'm', 'config.json')}: latency_profile: '${join(root, 'm', 'p.json')}' is not JSON; expected a file written by batchline profile --out`,
    ]);
    // A registration inheriting it is refused before a load; one that gives its own is not.
    await writeFile(join(root, 'm', 'config.json'), JSON.stringify({}));
    server = await startTestServer({ modelRepository: root, adminToken: TOKEN });
    await writeFile(join(root, 'm', 'config.json'), JSON.stringify({ latency_profile: 'm/p.json' }));
    const reply = await call('POST', `${server.url}/admin/models/m`, { version: 2, path: 'm/1/model.onnx' });
    expect([reply.status, reply.json.error.code, reply.json.error.message]).toEqual([
      400,
      'invalid_model_config',
      `invalid model configuration: m/config.json: latency_profile: '${join(root, 'm', 'p.json')}' is not JSON; expected a file written by batchline profile --out`,
    ]);
  });

  it('answers a registration whose version was deleted while it loaded 409, not 201 "draining" (#11)', async () => {
    server = await adminServer();
    const root = server.runtime.config.modelRepository!;
    // PaddleOCR's recognizer, in two processes: a load long enough for a DELETE to come first.
    await mkdir(join(root, 'm', '9'), { recursive: true });
    await copyFile(PADDLE_REC, join(root, 'm', '9', 'model.onnx'));
    const registering = call('POST', `${server.url}/admin/models/m`, {
      version: 9,
      path: 'm/9/model.onnx',
      execution: 'process',
      instances: 2,
    });
    for (let i = 0; i < 2000 && server.runtime.registry.resolve('m', 9)?.state !== 'loading'; i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    const removed = await call('DELETE', `${server.url}/admin/models/m/9`);
    const registered = await registering;
    expect([registered.status, registered.json.error?.code]).toEqual([409, 'version_removed']);
    expect(registered.json.error.message).toContain('m version 9 (a DELETE or an unload of it came first)');
    expect(removed.json).toEqual({ name: 'm', version: 9, state: 'removed' });
    expect(server.runtime.registry.versionsOf('m').map((v) => v.version)).toEqual([1]);
    tableRow(
      '#11 a registration (wait: true) and a DELETE of its version while it loads',
      'the POST is 409 version_removed, the DELETE 200; nothing left registered',
      `POST ${registered.status} ${registered.json.error.code}; DELETE ${removed.status} ${removed.json.state}`,
    );
  });

  it('takes a DELETE that says Content-Type: application/json and sends no body (#11)', async () => {
    server = await adminServer();
    const response = await request(`${server.url}/admin/models/m/1`, {
      method: 'DELETE',
      headers: { ...auth, 'content-type': 'application/json' },
    });
    expect([response.statusCode, await response.body.json()]).toEqual([
      200,
      { name: 'm', version: 1, state: 'removed' },
    ]);
    // A POST with no body is still refused, for what it is.
    const empty = await request(`${server.url}/admin/models/m`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'content-length': '0' },
    });
    const json = (await empty.body.json()) as { error: { code: string; message: string } };
    expect([empty.statusCode, json.error.code]).toEqual([400, 'invalid_model_config']);
    tableRow(
      '#11 DELETE with Content-Type: application/json and no body',
      'a request without a body: 200',
      `${response.statusCode} removed`,
    );
  });

  it('refuses at start an --admin-token no Authorization header can carry, without repeating it (#11)', () => {
    expect(() => resolveOptions(SERVE_OPTIONS, { adminToken: 'a b' }, {})).toThrow(
      "invalid option --admin-token: got '<3 characters, not shown>', expected printable ASCII characters without spaces",
    );
    expect(resolveOptions(SERVE_OPTIONS, { adminToken: 'p@ss!w0rd~' }, {}).adminToken).toBe('p@ss!w0rd~');
    tableRow(
      "#11 --admin-token 'a b'",
      'refused at start (exit 2), the token not printed',
      "invalid option --admin-token: got '<3 characters, not shown>', expected printable ASCII characters without spaces",
    );
  });

  it('serves a model whose name is 128 characters long on every route that names it (#10)', async () => {
    const name = `m${'x'.repeat(127)}`;
    const root = await writeRepository({ [`${name}/1/model.onnx`]: linearModelOnnx([1, 2]) });
    server = await startTestServer({ modelRepository: root, adminToken: TOKEN });
    expect((await infer(`${server.url}/models/${name}/predict`, { inputs: [1, 1] })).json.outputs.y).toEqual([3]);
    for (const path of [`/v1/models/${name}`, `/v1/models/${name}/versions/1`, `/v2/models/${name}/ready`])
      expect((await request(`${server.url}${path}`)).statusCode, path).toBe(200);
    const oip = await request(`${server.url}/v2/models/${name}/versions/1/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP32', data: [1, 1] }] }),
    });
    expect(oip.statusCode).toBe(200);
    await oip.body.dump();
    expect((await call('DELETE', `${server.url}/admin/models/${name}/1`)).status).toBe(200);
    tableRow(
      '#10 a model named with 128 characters, from a repository',
      'every route that names it answers (Fastify cut at 100)',
      '/models/…/predict, /v1/models/…, /v2/models/…/ready and …/infer 200; DELETE 200',
    );
  });

  it("answers a broken file with onnxruntime's own message", async () => {
    server = await adminServer();
    const reply = await call('POST', `${server.url}/admin/models/m`, { version: 3, path: 'm/3/model.onnx' });
    expect(reply.status).toBe(422);
    expect(reply.json.error.message).toMatch(/could not load model: .*(protobuf|parsing|Load model)/i);
  });

  it('refuses to load anything when the server has no repository', async () => {
    server = await startTestServer({ adminToken: TOKEN });
    const reply = await call('POST', `${server.url}/admin/models/m`, { version: 2, path: 'm/2/model.onnx' });
    expect([reply.status, reply.json.error.code]).toEqual([400, 'bad_model_path']);
    expect(reply.json.error.message).toContain('started without --model-repository');
  });

  it('answers a registration after the repository was removed with a 500 that says so, and goes on serving', async () => {
    server = await adminServer();
    const root = server.config.modelRepository!;
    await rm(root, { recursive: true, force: true });
    const reply = await call('POST', `${server.url}/admin/models/m`, { version: 2, path: 'm/2/model.onnx' });
    // Was "internal error: ENOENT: no such file or directory, realpath '…'".
    expect([reply.status, reply.json.error.code, reply.json.error.message]).toEqual([
      500,
      'internal',
      `internal error: the model repository ${root} cannot be read (ENOENT): moved or removed while serving?`,
    ]);
    expect((await infer(`${server.url}/models/m/predict`, { inputs: [1, 1] })).json.outputs.y).toEqual([3]);
  });

  it('registers a version (201 once ready), serves it as the latest, and lists it with its file and queue', async () => {
    server = await adminServer();
    const reply = await call('POST', `${server.url}/admin/models/m`, {
      version: 2,
      path: 'm/inside.onnx',
      batch_window_ms: 1,
    });
    expect(reply.status).toBe(201);
    // Options: the flags, then m/config.json (max_batch_size 4), then the request (batch_window_ms 1).
    expect(reply.json).toMatchObject({
      name: 'm',
      version: 2,
      state: 'ready',
      inputs: [{ name: 'x' }],
      config: { max_batch_size: 4, batch_window_ms: 1 },
    });
    expect((await infer(`${server.url}/models/m/predict`, { inputs: [1, 1] })).json).toMatchObject({
      model_version: '2',
      outputs: { y: [30] },
    });
    expect((await infer(`${server.url}/v1/infer`, { inputs: [1, 1] })).json.outputs.y).toEqual([30]);
    expect((await infer(`${server.url}/models/m/predict?version=1`, { inputs: [1, 1] })).json.outputs.y).toEqual([3]);
    const list = await call('GET', `${server.url}/admin/models`);
    expect(list.json.models.find((m: any) => m.name === 'm').versions).toEqual([
      { version: 2, state: 'ready', file: join('m', '2', 'model.onnx'), queue_depth: 0, running: 0 },
      { version: 1, state: 'ready', file: join('m', '1', 'model.onnx'), queue_depth: 0, running: 0 },
    ]);
    // A new model, its version chosen as 1.
    const other = await call('POST', `${server.url}/admin/models/fresh`, { path: 'other/1/model.onnx' });
    expect([other.status, other.json.version]).toEqual([201, 1]);
    expect((await infer(`${server.url}/models/fresh/predict`, { data: [2] })).json.outputs.y).toEqual([6]);
  });

  it('answers 202 with "wait": false and a state to poll, unavailable with the reason when the load fails', async () => {
    server = await adminServer();
    const started = await call('POST', `${server.url}/admin/models/m`, {
      version: 2,
      path: 'm/2/model.onnx',
      wait: false,
    });
    expect([started.status, started.json]).toEqual([202, { name: 'm', version: 2, state: 'loading', warnings: [] }]);
    expect(started.headers.location).toBe('/v1/models/m/versions/2');
    await server.runtime.registry.resolve('m', 2)!.loaded;
    expect((await call('GET', `${server.url}/v1/models/m/versions/2/ready`)).status).toBe(200);

    const broken = await call('POST', `${server.url}/admin/models/m`, {
      version: 3,
      path: 'm/3/model.onnx',
      wait: false,
    });
    expect(broken.status).toBe(202);
    await server.runtime.registry.resolve('m', 3)!.loaded;
    const polled = await call('GET', `${server.url}/v1/models/m/versions/3`);
    expect(polled.json).toMatchObject({
      version: 3,
      state: 'unavailable',
      reason: expect.stringContaining('could not load model'),
    });
    expect((await call('GET', `${server.url}/v1/models/m/versions/3/ready`)).status).toBe(503);
    // Latest is the highest version that takes work: 2, not the broken 3.
    expect((await infer(`${server.url}/models/m/predict`, { inputs: [1, 1] })).json.model_version).toBe('2');
    expect((await call('DELETE', `${server.url}/admin/models/m/3`)).status).toBe(200);
    expect(server.runtime.registry.versionsOf('m').map((v) => v.version)).toEqual([2, 1]);
  });

  it("tells the registration's caller what the log warns of, each warning a code and a message in the body's words", async () => {
    // The warnings went to the server's log only: a CI job registering the middleware's body got a plain 201.
    server = await adminServer();
    const plain = await call('POST', `${server.url}/admin/models/other`, { version: 2, path: 'm/2/model.onnx' });
    expect([plain.status, plain.json.warnings]).toEqual([201, []]);

    const target = await call('POST', `${server.url}/admin/models/other`, {
      version: 3,
      path: 'm/2/model.onnx',
      target_latency: 0.05,
    });
    expect([target.status, target.json.warnings]).toEqual([
      201,
      [
        {
          code: 'target_without_policy',
          message:
            'target_latency (50 ms) is read by batch_policy adaptive and aimd only, and batch_policy is fixed (the default): ' +
            'batches take max_batch_size and batch_window_ms as given; set batch_policy adaptive to batch toward it, ' +
            "or leave target_latency out (target_latency in the registration's body)",
        },
      ],
    ]);
    // An option of the model's config.json is named as that file's field, the file relative to the repository.
    const queue = await call('POST', `${server.url}/admin/models/m`, {
      version: 2,
      path: 'm/2/model.onnx',
      max_queue_size: 2,
      batch_window_ms: 5,
    });
    expect([queue.status, queue.json.warnings]).toEqual([
      201,
      [
        {
          code: 'queue_below_batch',
          message:
            'max_queue_size (2) is below max_batch_size (4): at most 2 wait, so no batch reaches 4, and each batch ' +
            'waits out batch_window_ms (5 ms) before it runs; raise max_queue_size to 4 or more, or lower max_batch_size to 2 ' +
            "(max_queue_size and batch_window_ms in the registration's body; max_batch_size in m/config.json)",
        },
      ],
    ]);
    // Known before the load: the 202 of "wait": false says them too.
    const later = await call('POST', `${server.url}/admin/models/other`, {
      version: 4,
      path: 'm/2/model.onnx',
      request_timeout_ms: 10,
      target_latency_ms: 40,
      wait: false,
    });
    expect(later.status).toBe(202);
    expect(later.json.warnings.map((w: { code: string }) => w.code)).toEqual([
      'deadline_within_window',
      'target_without_policy',
    ]);
    expect(later.json.warnings[0].message).toMatch(/^request_timeout_ms \(10 ms\) is not longer than batch_window_ms /);
    // With a policy that reads the target, nothing to say.
    const adaptive = await call('POST', `${server.url}/admin/models/other`, {
      version: 5,
      path: 'm/2/model.onnx',
      target_latency: 0.05,
      batch_policy: 'adaptive',
    });
    expect([adaptive.status, adaptive.json.warnings]).toEqual([201, []]);
  });

  it("names an option the server was started with as its flag in a registration's warning", async () => {
    server = await adminServer({ targetLatencyMs: 30 });
    const reply = await call('POST', `${server.url}/admin/models/other`, { version: 2, path: 'm/2/model.onnx' });
    expect(reply.status).toBe(201);
    expect(reply.json.warnings).toEqual([
      {
        code: 'target_without_policy',
        message: expect.stringMatching(
          /^--target-latency-ms \(30 ms\) is read by batch_policy adaptive and aimd only, .*or leave --target-latency-ms out$/,
        ),
      },
    ]);
  });

  it('refuses a DELETE that names no version with 400 saying to name one, and removes nothing', async () => {
    // It was a 404 for a route that does not exist. The middleware's API removes one version at a
    // time (DELETE /admin/models/{name}/{version}); a dropped version must not remove them all.
    server = await adminServer();
    await call('POST', `${server.url}/admin/models/m`, { version: 2, path: 'm/2/model.onnx' });
    for (const path of ['/admin/models/m', '/admin/models/m/']) {
      const refused = await call('DELETE', `${server.url}${path}`);
      expect([refused.status, refused.json.error.code], path).toEqual([400, 'bad_request']);
      expect(refused.json.error.message).toBe(
        "malformed request: name the version to remove: DELETE /admin/models/m/{version} (m's versions: 2, 1)",
      );
    }
    const unknown = await call('DELETE', `${server.url}/admin/models/nosuch`);
    expect([unknown.status, unknown.json.error.message]).toEqual([
      400,
      "malformed request: name the version to remove: DELETE /admin/models/nosuch/{version} (there is no model 'nosuch')",
    ]);
    expect(server.runtime.registry.versionsOf('m').map((v) => v.version)).toEqual([2, 1]);
  });

  // TorchServe's PUT /models/{name}?min_worker=N names no version: the PATCH that stands for it
  // was a 404 "not found: PATCH /admin/models/m", as if there were no such route.
  it('refuses a PATCH that names no version with 400 naming the route and the versions, and changes nothing', async () => {
    server = await adminServer();
    for (const path of ['/admin/models/m', '/admin/models/m/']) {
      const refused = await call('PATCH', `${server.url}${path}`, { instances: 2 });
      expect([refused.status, refused.json.error.code], path).toEqual([400, 'bad_request']);
      expect(refused.json.error.message).toBe(
        "malformed request: name the version to change: PATCH /admin/models/m/{version} (m's versions: 1)",
      );
    }
    expect(server.runtime.registry.versionsOf('m').map((v) => v.config.instances)).toEqual([1]);
  });

  it('registers several versions asked for at once without a number as the next ones', async () => {
    server = await adminServer();
    // The next version was chosen before the registration's awaits: five of six were 409 version_exists.
    const replies = await Promise.all(
      Array.from({ length: 6 }, () =>
        call('POST', `${server!.url}/admin/models/other`, { path: 'other/1/model.onnx' }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 201]);
    expect(replies.map((r) => r.json.version).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7]);
  });

  it('answers a second DELETE of a version being removed with that removal, as a Triton unload racing it', async () => {
    const { url, runtime, held, release } = await heldBatch();
    // Each DELETE that reaches the removal: the second must come while the first drains.
    const removalsAsked: (() => void)[] = [];
    const deregister = runtime.deregister.bind(runtime);
    runtime.deregister = (v) => {
      removalsAsked.shift()?.();
      return deregister(v);
    };
    const asked = (): Promise<void> => new Promise((resolve) => removalsAsked.push(resolve));
    const firstAsked = asked();
    const first = call('DELETE', `${url}/admin/models/held/1`);
    await firstAsked;
    // It was 503 "already being removed", which the refusals did not list.
    const secondAsked = asked();
    const second = call('DELETE', `${url}/admin/models/held/1`);
    // Answered before it reached the removal (503 "already being removed"): fail now, not at the timeout.
    await Promise.race([
      secondAsked,
      second.then((r) => {
        throw new Error(`the second DELETE was answered ${r.status} before the removal`);
      }),
    ]);
    release();
    expect([(await first).status, (await second).status, (await held).status]).toEqual([200, 200, 200]);
    expect(runtime.registry.resolve('held', 1)).toBeUndefined();
  });

  it("lets a DELETE during the server's drain wait for it, not close the model under the requests it answers", async () => {
    const { runtime, version, held, release } = await heldBatch();
    const stopping = runtime.drain(10_000);
    // The removal returned at once (the version was draining already) and closed the model: 500 "the model was closed".
    const removing = runtime.deregister(version);
    release();
    expect((await held).status).toBe(200);
    await Promise.all([stopping, removing]);
  });

  it("lets the server's drain of no time end a DELETE's drain now, not at the DELETE's own limit", async () => {
    const { runtime, version, held } = await heldBatch({ drainTimeoutMs: 600_000 }); // never let go
    const removing = runtime.deregister(version); // drains for up to 600 s
    await runtime.drain(0); // the server's stop, now
    expect((await held).status).toBe(503);
    await removing;
  });

  it("answers what a removal's drain cut short as the removal's, not the server's shutdown", async () => {
    const { url, held, release } = await heldBatch({ drainTimeoutMs: 1 });
    expect((await call('DELETE', `${url}/admin/models/held/1`)).status).toBe(200);
    // It said "shutting down: the drain time ran out …" of a server that went on serving.
    expect([(await held).status, (await held).json.error.message]).toEqual([
      503,
      'shutting down: its model version was removed, and the drain time ran out before this request was answered',
    ]);
    release();
  });

  it('deregisters a version: its queued requests are answered, new ones go to the next latest, then 404', async () => {
    // Batches of 500 ms: version 2 drains for about a second, longer than the request for it below
    // takes on a busy host (at 40 ms it was gone before that request, at a load average of 30).
    server = await adminServer({ modelLatencyMs: 500, batchWindowMs: 0, requestTimeoutMs: 10_000 });
    await call('POST', `${server.url}/admin/models/m`, { version: 2, path: 'm/2/model.onnx' });
    const v2 = server.runtime.registry.resolve('m', 2)!;
    // Eight requests on version 2, most of them queued behind its batches of 4.
    const queued = Array.from({ length: 8 }, () => infer(`${server!.url}/models/m/predict`, { inputs: [1, 1] }));
    for (let i = 0; i < 1000 && v2.batcher.counts.admitted < 8; i++)
      await new Promise((resolve) => setImmediate(resolve));
    const removing = call('DELETE', `${server.url}/admin/models/m/2`);
    for (let i = 0; i < 1000 && v2.state !== 'draining'; i++) await new Promise((resolve) => setImmediate(resolve));
    expect((await infer(`${server.url}/models/m/predict?version=2`, { inputs: [1, 1] })).json.error.code).toBe(
      'model_unavailable',
    );
    const during = await infer(`${server.url}/models/m/predict`, { inputs: [1, 1] });
    expect(during.json.model_version).toBe('1'); // the next latest, while 2 drains
    // Registered again while it drains: refused, saying why (it said only "already registered").
    const again = await call('POST', `${server.url}/admin/models/m`, { version: 2, path: 'm/2/model.onnx' });
    expect([again.status, again.json.error.code, again.json.error.message]).toEqual([
      409,
      'version_exists',
      'model version already registered: m version 2, which is being removed (its requests in flight are answered first); register it again once its DELETE has answered',
    ]);
    expect((await Promise.all(queued)).map((r) => [r.status, r.json.model_version])).toEqual(Array(8).fill([200, '2']));
    expect((await removing).json).toEqual({ name: 'm', version: 2, state: 'removed' });
    expect(server.runtime.registry.versionsOf('m').map((v) => v.version)).toEqual([1]);
    expect((await call('DELETE', `${server.url}/admin/models/m/2`)).json.error.code).toBe('model_not_found');
    // The last version goes: the model is gone.
    expect((await call('DELETE', `${server.url}/admin/models/m/1`)).status).toBe(200);
    const gone = await infer(`${server.url}/models/m/predict`, { inputs: [1, 1] });
    expect([gone.status, gone.json.error.code]).toEqual([404, 'model_not_found']);
    expect((await infer(`${server.url}/v1/infer`, { inputs: [1, 1] })).status).toBe(404);
    const metrics = await (await request(`${server.url}/metrics`)).body.text();
    expect(metrics).not.toContain('model="m"'); // a removed version leaves the metrics
    expect(metrics).toContain('batchline_queue_depth{model="other",version="1"} 0');
  });

  it('can listen on its own address with --admin-port, leaving the main listener without /admin', async () => {
    const root = await repository();
    await writeFile(join(root, 'm', 'config.json'), JSON.stringify({ version_policy: { specific: [1] } }));
    const config = resolveOptions(
      SERVE_OPTIONS,
      { port: 0, modelRepository: root, adminToken: TOKEN, adminPort: 1 },
      {},
    );
    const built = buildServer(config);
    const startup = await startupVersions(config);
    const url = await built.app.listen({ host: '127.0.0.1', port: 0 });
    const adminUrl = await built.admin!.listen({ host: '127.0.0.1', port: 0 });
    try {
      await built.runtime.loadStartup(startup.versions);
      expect((await call('GET', `${url}/admin/models`)).status).toBe(404);
      expect((await call('GET', `${adminUrl}/admin/models`)).status).toBe(200);
      expect((await call('GET', `${adminUrl}/admin/models`, undefined, {})).status).toBe(401);
      expect((await call('POST', `${adminUrl}/admin/models/m`, { version: 2, path: 'm/2/model.onnx' })).status).toBe(
        201,
      );
      expect((await infer(`${url}/models/m/predict`, { inputs: [1, 1] })).json.model_version).toBe('2');
    } finally {
      await built.runtime.drain(0);
      await Promise.all([built.app.close(), built.admin!.close()]);
      await built.runtime.closeModels();
    }
  });
});
