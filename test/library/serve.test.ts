/** `serve()` from code: the whole server in this process, its URL, stats and close. */
import { request } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import { PATIENCE } from '../patience.js';
import { batch, type BatchError, InvalidOptionError, serve } from '../../src/index.js';
import { OipClient } from '../serve/grpc-helpers.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { tempDir } from '../temp-dir.js';

describe('serve()', () => {
  it('starts the embedded model on a free port, answers /v1/infer, and closes', async () => {
    const server = await serve({ modelLatencyMs: 0, batchWindowMs: 1 });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(server.adminUrl).toBeUndefined();
      expect(server.grpcUrl).toBeUndefined();
      const answer = await request(`${server.url}/v1/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [0.2, 1.5, -0.3] }),
      });
      expect(answer.statusCode).toBe(200);
      expect(((await answer.body.json()) as any).prediction.model_version).toBe('toy-logistic-v1');

      // batch().stats() is the snapshot /v1/stats shows for a model: the same fields.
      const stats = (await (await request(`${server.url}/v1/stats`)).body.json()) as any;
      expect(stats.snapshot.counts.outcomes.ok).toBe(1);
      expect(server.stats()?.snapshot.counts.outcomes.ok).toBe(1);
      const library = batch(async (items: number[]) => items);
      expect(Object.keys(library.stats()).sort()).toEqual(Object.keys(stats.snapshot).sort());
    } finally {
      await server.close({ drainMs: 1000 });
    }
    await expect(request(`${server.url}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('serves the admin API on its own URL with an admin token', async () => {
    const server = await serve({ modelLatencyMs: 0, adminToken: 'secret' });
    try {
      expect(server.adminUrl).toBe(server.url);
      const listed = await request(`${server.adminUrl}/admin/models`, { headers: { authorization: 'Bearer secret' } });
      expect(listed.statusCode).toBe(200);
      await listed.body.dump();
    } finally {
      await server.close();
    }
  });

  it('serves the Open Inference Protocol over gRPC with grpcPort, and drains it on close', async () => {
    const server = await serve({ modelLatencyMs: 0, grpcPort: 0 });
    const client = new OipClient((server.grpcUrl ?? '').slice('grpc://'.length));
    try {
      expect(server.grpcUrl).toMatch(/^grpc:\/\/127\.0\.0\.1:\d+$/);
      expect((await client.call('ServerReady', {})).message).toEqual({ ready: true });
    } finally {
      await server.close({ drainMs: 1000 });
    }
    // Closed with the server: a call after close gets no answer from it.
    expect((await client.call('ServerLive', {}, { deadline: 2000 })).error?.code).toBe(14); // UNAVAILABLE
    client.close();
  });

  it('rejects a bad option with InvalidOptionError naming it, before anything listens', async () => {
    await expect(serve({ maxBatchSize: 0 })).rejects.toThrow(InvalidOptionError);
    await expect(serve({ maxBatchSize: 0 })).rejects.toThrow(/maxBatchSize: got 0/);
    // A value of another JavaScript type is refused, not read as the command reads its text:
    // host 5 passed as '5' and failed at listen (cannot_listen); 'yes' passed as true.
    await expect(serve({ host: 5 } as never)).rejects.toThrow(
      /^invalid option host: got 5 \(a number\), expected a string$/,
    );
    await expect(serve({ logRequests: 'yes' } as never)).rejects.toThrow(
      /^invalid option logRequests: got 'yes' \(a string\), expected true or false$/,
    );
    await expect(serve({ maxBatchSize: '8' } as never)).rejects.toThrow(
      /^invalid option maxBatchSize: got '8' \(a string\), expected an integer from 1 to 4096, or to 65536 for a code model that exports itemCost$/,
    );
    await expect(serve({ host: 5 } as never)).rejects.toThrow(InvalidOptionError);
    await expect(serve({ modelDir: 'x' } as never)).rejects.toThrow(/modelDir: not an option; the options are host/);
    // Every option is listed: the list is longer than the 400 characters an error's detail used to be cut at.
    const unknown = await serve({ modelDir: 'x' } as never).catch((error: Error) => error.message);
    expect(unknown).not.toContain('more characters');
    expect(unknown).toMatch(/, logRequests$/);
    // The command's spellings (config.json's, a flag's, an environment variable's) name the option to use.
    await expect(serve({ max_batch_size: 8 } as never)).rejects.toThrow(
      /^invalid option max_batch_size: not an option; use maxBatchSize$/,
    );
    await expect(serve({ 'model-repository': 'x' } as never)).rejects.toThrow(
      /model-repository: not an option; use modelRepository$/,
    );
    await expect(serve({ ADMIN_TOKEN: 'x' } as never)).rejects.toThrow(/ADMIN_TOKEN: not an option; use adminToken$/);
    // The middleware's names, as batch() takes them.
    await expect(serve({ workers: 2 } as never)).rejects.toThrow(
      /^invalid option workers: not an option; use instances$/,
    );
    await expect(serve({ max_wait_time: 0.01 } as never)).rejects.toThrow(
      /^invalid option max_wait_time: not an option; use batchWindowMs \(milliseconds\)$/,
    );
    // BentoML's, likewise.
    await expect(serve({ max_latency_ms: 1000 } as never)).rejects.toThrow(
      /^invalid option max_latency_ms: not an option; use requestTimeoutMs \(milliseconds\), with admission: 'sla'/,
    );
  });

  it('refuses null and an array for an option, which it read as their text; modelLatencyMs takes ms or 5+2n', async () => {
    // adminToken null served the admin API to 'Authorization: Bearer null' (200); host ['0.0.0.0']
    // was taken as '0.0.0.0'. (The missing repository stops a server that took them before it listens.)
    const nowhere = '/nonexistent/models';
    await expect(serve({ adminToken: null, modelRepository: nowhere } as never)).rejects.toThrow(
      /^invalid option adminToken: got null, expected a string$/,
    );
    await expect(serve({ host: ['0.0.0.0'], modelRepository: nowhere } as never)).rejects.toThrow(
      /^invalid option host: got an array, expected a string$/,
    );
    await expect(serve({ modelLatencyMs: null } as never)).rejects.toThrow(
      /^invalid option modelLatencyMs: got null, expected a number of ms, or a string such as 5\+2n$/,
    );
    // modelLatencyMs takes a number of ms or its text ('5+2n'): both pass the options, and stop at the repository.
    for (const modelLatencyMs of [5, '5+2n'])
      await expect(serve({ modelLatencyMs, modelRepository: nowhere })).rejects.toThrow(
        /^invalid option modelRepository: cannot read/,
      );
  });

  it("names the options of start-up checks in code's words (adminPort, not --admin-port), before anything listens", async () => {
    // These checks are the command's too, which spells them as flags; serve() was called with keys.
    await expect(serve({ adminPort: 18_099 })).rejects.toThrow(
      /^invalid option adminPort: the admin API it places is off without adminToken$/,
    );
    await expect(serve({ modelRepository: '/nonexistent/models' })).rejects.toThrow(
      /^invalid option modelRepository: cannot read \/nonexistent\/models \(ENOENT\)$/,
    );
    await expect(serve({ model: 'm.onnx', modelRepository: '/nonexistent/models' })).rejects.toThrow(
      /^invalid option model and modelRepository: give one/,
    );
    const failed = await serve({ modelRepository: '/nonexistent/models' }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(InvalidOptionError);
  });

  it('rejects options that are not an object with InvalidOptionError', async () => {
    await expect(serve(null as never)).rejects.toThrow(
      /^invalid option options: got null, expected an object of options such as \{ maxBatchSize: 32 \}$/,
    );
    await expect(serve('x' as never)).rejects.toThrow(
      /^invalid option options: got 'x' \(a string\), expected an object/,
    );
  });

  it('refuses a bad drainMs on close and keeps serving; a later close() drains', async () => {
    const server = await serve({ modelLatencyMs: 0 });
    try {
      // Infinity used to be taken, and Node's timer then fired after 1 ms: what was running got 503.
      await expect(server.close({ drainMs: Number.POSITIVE_INFINITY })).rejects.toThrow(
        /^close\(\{ drainMs \}\): got Infinity, expected a number of ms from 0 to 600000$/,
      );
      await expect(server.close({ drainMs: -1 })).rejects.toThrow(InvalidOptionError);
      const alive = await request(`${server.url}/healthz`);
      expect(alive.statusCode).toBe(200);
      await alive.body.dump();
    } finally {
      await server.close();
    }
  });

  it('ends a drain sooner when a later close() gives a shorter drainMs, as a second SIGTERM stops the command', async () => {
    // Each batch takes 5 s of pretend accelerator time: two requests hold the drain for 10 s.
    const server = await serve({ modelLatencyMs: 5000, maxBatchSize: 1, batchWindowMs: 0, requestTimeoutMs: 60_000 });
    const infer = () =>
      request(`${server.url}/v1/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [0.2, 1.5, -0.3] }),
      }).then(async (answer) => [answer.statusCode, ((await answer.body.json()) as any).error?.code]);
    const answers = Promise.all([infer(), infer()]);
    await vi.waitFor(() => {
      const snapshot = server.stats()?.snapshot;
      expect((snapshot?.runningRequests ?? 0) + (snapshot?.queueDepth ?? 0)).toBe(2);
    }, PATIENCE);
    const first = server.close({ drainMs: 60_000 });
    // A second close() used to be the first one again: the drain went on until both had run.
    await server.close({ drainMs: 0 });
    await first;
    expect(await answers).toEqual([
      [503, 'shutting_down'],
      [503, 'shutting_down'],
    ]);
  });

  it('keeps a longer drain when a later close() names no drainMs (it asked for nothing)', async () => {
    // A batch takes 1 s; the server's own drainTimeoutMs is 50 ms, which a plain close() took.
    const server = await serve({
      modelLatencyMs: 1000,
      batchWindowMs: 0,
      requestTimeoutMs: 60_000,
      drainTimeoutMs: 50,
    });
    const answer = request(`${server.url}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [0.2, 1.5, -0.3] }),
    }).then(async (response) => [response.statusCode, ((await response.body.json()) as any).error?.code]);
    await vi.waitFor(() => expect(server.stats()?.snapshot.runningRequests).toBe(1), PATIENCE);
    const first = server.close({ drainMs: 60_000 });
    // It used to fill in drainTimeoutMs and cut the running request off at 50 ms (503).
    const second = server.close();
    expect(await answer).toEqual([200, undefined]);
    await Promise.all([first, second]);
  });

  it("takes a model or repository as a file URL, as an ES module names its neighbours (new URL('./model.mjs', import.meta.url))", async () => {
    // A space in the path: `.pathname` of such a URL is percent-encoded (my%20app), a path that is not there.
    const dir = join(tempDir('serve-url-'), 'my app');
    mkdirSync(join(dir, 'double', '1'), { recursive: true });
    const module = join(dir, 'double', '1', 'model.mjs');
    writeFileSync(
      module,
      [
        "export const inputs = [{ name: 'x', datatype: 'FP32', shape: [2] }];",
        "export const outputs = [{ name: 'y', datatype: 'FP32', shape: [2] }];",
        'export const execute = (items) => items.map(({ x }) => ({ y: x.map((v) => 2 * v) }));',
      ].join('\n'),
    );
    // It was `got an object, expected a string` for the URL, and `cannot read file:///… (ENOENT)` for its href.
    for (const options of [
      { model: pathToFileURL(module), execution: 'inline' as const },
      { model: pathToFileURL(module).href, execution: 'inline' as const },
      { modelRepository: pathToFileURL(dir), execution: 'inline' as const },
    ]) {
      const server = await serve(options);
      try {
        const answer = await request(`${server.url}/models/double/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ inputs: [1, 2] }),
        });
        expect(((await answer.body.json()) as { outputs: unknown }).outputs).toEqual({ y: [2, 4] });
      } finally {
        await server.close();
      }
    }
    // A URL of another scheme is no file: said so, naming the option.
    await expect(serve({ model: new URL('https://example.com/model.onnx') })).rejects.toThrow(
      'invalid option model: got https://example.com/model.onnx, expected a path or a file: URL',
    );
  });

  // The command warns under a start-up version's line, and serve() wrote a registration's warnings
  // to stderr; a start-up version's went nowhere: a target given to the fixed policy, a queue below
  // a batch, started from code without a word.
  it.each([
    [{ targetLatencyMs: 50 }, ['--target-latency-ms (50 ms) is read by --batch-policy adaptive and aimd only']],
    [{ maxQueueSize: 4, maxBatchSize: 8 }, ['--max-queue-size (4) is below --max-batch-size (8)']],
    [{ targetLatencyMs: 50, batchPolicy: 'adaptive' as const }, []],
    [{}, []],
  ])("writes a start-up version's warnings to stderr, as the command logs them (%o)", async (options, expected) => {
    const written: string[] = [];
    const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const server = await serve({ modelLatencyMs: 0, ...options });
      await server.close();
    } finally {
      write.mockRestore();
    }
    const warnings = written
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('batchline serve: warning: '));
    expect(warnings).toHaveLength(expected.length);
    expected.forEach((text, i) =>
      expect(warnings[i]).toContain(`batchline serve: warning: model=toy-logistic-v1 version=1: ${text}`),
    );
  });

  it('rejects a model that is not there with the error table code, nothing left listening', async () => {
    const failed = await serve({ model: '/nonexistent/model.onnx' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(InvalidOptionError);
    expect([(failed as BatchError).code, (failed as BatchError).message]).toEqual([
      'invalid_option',
      'invalid option model: cannot read /nonexistent/model.onnx (ENOENT)',
    ]);
  });
});
