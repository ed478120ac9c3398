import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { buildServer, type BuiltServer } from '../../src/serve/build-server.js';
import { startupVersions } from '../../src/serve/startup.js';
import { PATIENCE_MS } from '../patience.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';

const TOKEN = 'ops-token';
let built: BuiltServer | undefined;
afterEach(async () => {
  await built?.runtime.drain(0);
  await built?.app.close();
  await built?.runtime.closeModels();
  built = undefined;
});

/** A server of `repository` whose log lines are kept in `lines`. */
async function serveLogged(repository: string, flags: Record<string, unknown> = {}) {
  const lines: string[] = [];
  const config = resolveOptions(
    SERVE_OPTIONS,
    { port: 0, modelRepository: repository, adminToken: TOKEN, ...flags },
    {},
  );
  const startup = await startupVersions(config);
  built = buildServer(config, { logEvent: (line) => lines.push(line) });
  const url = await built.app.listen({ host: '127.0.0.1', port: 0 });
  await built.runtime.loadStartup(startup.versions);
  return { url, lines, runtime: built.runtime };
}

async function admin(method: 'POST' | 'DELETE', url: string, body?: object): Promise<number> {
  const response = await request(url, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await response.body.text();
  return response.statusCode;
}

async function scrape(url: string): Promise<string> {
  const response = await request(`${url}/metrics`);
  return response.body.text();
}

/** Resolves with the first line `lines` gets that matches `pattern` (bounded by PATIENCE_MS, then fails with what came). */
async function lineMatching(lines: string[], pattern: RegExp): Promise<string> {
  // A bound in time, not in polls: a stalled host's timers fire late, so 4,000 polls of 5 ms were no 20 s.
  for (const giveUpAtMs = performance.now() + PATIENCE_MS; performance.now() < giveUpAtMs; ) {
    const found = lines.find((line) => pattern.test(line));
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`no line matches ${pattern}; the log: ${JSON.stringify(lines)}`);
}

describe("the server's log says what changed while it served", () => {
  it('registrations, failed loads and removals through the admin API, one line each', async () => {
    const repository = await writeRepository({
      'lin/1/model.onnx': linearModelOnnx([1, 2]),
      'lin/2/model.onnx': linearModelOnnx([3, 4]),
      'lin/3/model.onnx': 'not an onnx graph',
      'lin/config.json': { version_policy: { specific: [1] }, execution: 'inline' },
    });
    const { url, lines } = await serveLogged(repository);
    expect(lines).toEqual([]); // start-up versions are the command's own lines

    expect(await admin('POST', `${url}/admin/models/lin`, { version: 2, path: 'lin/2/model.onnx' })).toBe(201);
    expect(lines).toContainEqual(
      expect.stringMatching(/^batchline serve: model=lin version=2 registered: loading \S+lin\/2\/model\.onnx$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^batchline serve: model=lin version=2 ready inputs=x\[2\]:float32 max_batch_size=8 /),
    );

    // A version whose queue cannot hold a full batch is warned of, as one loaded at start-up is,
    // naming each option as the registration wrote it (the middleware's max_wait_time too).
    expect(lines.filter((line) => line.includes('warning'))).toEqual([]);
    expect(
      await admin('POST', `${url}/admin/models/lin`, {
        version: 4,
        path: 'lin/2/model.onnx',
        max_queue_size: 2,
        max_wait_time: 0.01,
      }),
    ).toBe(201);
    expect(lines.slice(-2)).toEqual([
      expect.stringMatching(
        /^batchline serve: model=lin version=4 ready inputs=x\[2\]:float32 max_batch_size=8 .*max_queue_size=2 /,
      ),
      'batchline serve: warning: model=lin version=4: max_queue_size (2) is below --max-batch-size (8): ' +
        'at most 2 wait, so no batch reaches 8, and each batch waits out max_wait_time (10 ms) before it runs; ' +
        "raise max_queue_size to 8 or more, or lower --max-batch-size to 2 (max_queue_size and max_wait_time in the registration's body)",
    ]);
    // A deadline no longer than the window: every request that came alone was a 504, and nothing said why.
    expect(
      await admin('POST', `${url}/admin/models/lin`, { version: 5, path: 'lin/2/model.onnx', request_timeout_ms: 10 }),
    ).toBe(201);
    expect(lines.at(-1)).toBe(
      'batchline serve: warning: model=lin version=5: request_timeout_ms (10 ms) is not longer than --batch-window-ms (10 ms): ' +
        'a request that comes alone waits out the window and misses its deadline before its batch runs; ' +
        "raise it above 10 ms, or lower --batch-window-ms (request_timeout_ms in the registration's body)",
    );

    // The middleware's target_latency under the default fixed policy was taken and did nothing, without a word.
    expect(
      await admin('POST', `${url}/admin/models/lin`, { version: 6, path: 'lin/2/model.onnx', target_latency: 0.05 }),
    ).toBe(201);
    expect(lines.at(-1)).toBe(
      'batchline serve: warning: model=lin version=6: target_latency (50 ms) is read by --batch-policy adaptive and aimd only, ' +
        'and --batch-policy is fixed (the default): batches take --max-batch-size and --batch-window-ms as given; ' +
        "set --batch-policy adaptive to batch toward it, or leave target_latency out (target_latency in the registration's body)",
    );
    // With a policy that reads it, nothing to say.
    expect(
      await admin('POST', `${url}/admin/models/lin`, {
        version: 7,
        path: 'lin/2/model.onnx',
        target_latency_ms: 50,
        batch_policy: 'adaptive',
      }),
    ).toBe(201);
    expect(lines.at(-1)).toMatch(/^batchline serve: model=lin version=7 ready .*batch_policy=adaptive/);

    expect(await admin('POST', `${url}/admin/models/lin`, { version: 3, path: 'lin/3/model.onnx' })).toBe(422);
    expect(lines).toContainEqual(
      expect.stringMatching(/^batchline serve: model=lin version=3 failed to load: could not load model: /),
    );

    expect(await admin('DELETE', `${url}/admin/models/lin/1`)).toBe(200);
    expect(lines.slice(-2)).toEqual([
      'batchline serve: model=lin version=1 deregistered: draining 0 queued and 0 running requests (up to 10000 ms)',
      'batchline serve: model=lin version=1 removed',
    ]);
  });

  it('a version removed while it loads: its load stopped, not failed', async () => {
    const repository = await writeRepository({
      'lin/1/model.onnx': linearModelOnnx([1, 2]),
      'lin/2/model.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize() { return new Promise(() => {}); }
export function execute(items) { return items.map(({ x }) => ({ y: x })); }
`,
      'lin/config.json': { version_policy: { specific: [1] } },
    });
    const { url, lines, runtime } = await serveLogged(repository);
    const registered = await admin('POST', `${url}/admin/models/lin`, {
      version: 2,
      path: 'lin/2/model.mjs',
      wait: false,
    });
    expect(registered).toBe(202);
    expect(await admin('DELETE', `${url}/admin/models/lin/2`)).toBe(200);
    expect(runtime.registry.resolve('lin', 2)).toBeUndefined();
    // It was "failed to load: its load was stopped by a drain …", an error for an ordinary removal.
    expect(lines.filter((line) => line.includes('model=lin version=2'))).toEqual([
      expect.stringMatching(/^batchline serve: model=lin version=2 registered: loading /),
      'batchline serve: model=lin version=2 deregistered: draining 0 queued and 0 running requests (up to 10000 ms)',
      'batchline serve: model=lin version=2 load stopped: removed (or the server stopped) while it loaded',
      'batchline serve: model=lin version=2 removed',
    ]);
  });

  it('an instance that dies: which one, why, the restart, and its return', async () => {
    const repository = await writeRepository({
      'lin/1/model.onnx': linearModelOnnx([1, 2]),
      'lin/config.json': { execution: 'process', instances: 2 },
    });
    const { url, lines, runtime } = await serveLogged(repository);
    const version = runtime.registry.resolve('lin')!;
    expect(await scrape(url)).toContain('batchline_instance_restarts_total{model="lin",version="1"} 0\n');
    const pid = version.model.health().instances[1]!.pid!;
    process.kill(pid, 'SIGKILL');
    expect(await lineMatching(lines, /instance=1 down/)).toBe(
      'batchline serve: model=lin version=1 instance=1 down: exited (signal SIGKILL); restarting in 100 ms',
    );
    expect(await lineMatching(lines, /instance=1 up/)).toBe(
      'batchline serve: model=lin version=1 instance=1 up again (restart 1)',
    );
    const metrics = await scrape(url);
    expect(metrics).toContain('batchline_instance_restarts_total{model="lin",version="1"} 1\n');
    expect(metrics).toContain('batchline_instances{model="lin",version="1",state="up"} 2\n');
  });

  it('the circuit breaker opening, letting its probe through and closing', async () => {
    const repository = await writeRepository({
      'unlucky/1/model.mjs': `export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) {
  if (items.some(({ x }) => x[0] === 13)) throw new Error('unlucky batch');
  return items.map(({ x }) => ({ y: x }));
}`,
      'unlucky/config.json': { batch_window_ms: 0, breaker_failures: 2, breaker_ratio: 0, breaker_open_ms: 50 },
    });
    const { url, lines } = await serveLogged(repository);
    const predict = async (x: number): Promise<number> => {
      const response = await request(`${url}/models/unlucky/predict`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [x] }),
      });
      await response.body.text();
      return response.statusCode;
    };
    expect([await predict(13), await predict(13)]).toEqual([500, 500]);
    // Only /metrics' batchline_breaker_state said so: the log showed 503s and nothing of why or until when.
    expect(await lineMatching(lines, /circuit breaker open/)).toBe(
      'batchline serve: model=unlucky version=1 circuit breaker open: its batches keep failing (--breaker-failures, --breaker-ratio); requests are answered 503 circuit_open, and in 50 ms a batch is let through as a probe',
    );
    // Refused until its 50 ms are up, then the good item is the probe (bounded by PATIENCE_MS).
    for (const giveUpAtMs = performance.now() + PATIENCE_MS; performance.now() < giveUpAtMs; )
      if ((await predict(1)) === 200) break;
    expect(await lineMatching(lines, /circuit breaker half-open/)).toBe(
      'batchline serve: model=unlucky version=1 circuit breaker half-open: the next batch is its probe',
    );
    expect(await lineMatching(lines, /circuit breaker closed/)).toBe(
      'batchline serve: model=unlucky version=1 circuit breaker closed: its probe batch succeeded; serving again',
    );
  });

  it('an instance that cannot come back says so, and that /healthz now fails', async () => {
    const repository = await writeRepository({
      'lin/1/model.onnx': linearModelOnnx([1, 2]),
      'lin/config.json': { execution: 'process' },
    });
    const { url, lines, runtime } = await serveLogged(repository);
    const version = runtime.registry.resolve('lin')!;
    await writeFile(join(repository, 'lin/1/model.onnx'), 'gone bad');
    process.kill(version.model.health().instances[0]!.pid!, 'SIGKILL');
    const third = await lineMatching(lines, /3 failures in a row/);
    expect(third).toMatch(
      /^batchline serve: model=lin version=1 instance=0 down: could not restart: .+; restarting in 400 ms \(3 failures in a row: \/healthz answers 503 until it is back\)$/,
    );
    // The one instance is restarting, or loading again after its backoff: not up, and Prometheus sees it.
    expect(await scrape(url)).toContain('batchline_instances{model="lin",version="1",state="up"} 0\n');
  });
});

describe('Prometheus sees requests that reach no model version', () => {
  it('counts a removed version or an unknown model answered 404, which no version label can carry', async () => {
    const repository = await writeRepository({
      'lin/1/model.onnx': linearModelOnnx([1, 2]),
      'lin/2/model.onnx': linearModelOnnx([3, 4]),
      'lin/config.json': { version_policy: { all: true }, execution: 'inline' },
    });
    const { url } = await serveLogged(repository);
    expect(await scrape(url)).toContain('batchline_unrouted_responses_total{code="404",protocol="http"} 0\n');
    expect(await admin('DELETE', `${url}/admin/models/lin/1`)).toBe(200);
    for (const path of ['/models/lin/predict?version=1', '/models/nope/predict']) {
      const response = await request(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"inputs":[1,1]}',
      });
      await response.body.text();
      expect(response.statusCode).toBe(404);
    }
    expect(await scrape(url)).toContain('batchline_unrouted_responses_total{code="404",protocol="http"} 2\n');
  });
});
