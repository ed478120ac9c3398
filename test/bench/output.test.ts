import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as hdr from 'hdr-histogram-js';
import { afterEach, describe, expect, it } from 'vitest';
import { benchMain } from '../../src/commands/bench-main.js';
import type { BenchOutputs } from '../../src/commands/bench-outputs.js';
import { compareMain } from '../../src/commands/compare-main.js';
import type { BenchProgress } from '../../src/bench/progress.js';
import { runBench } from '../../src/bench/run-bench.js';
import { writeFile } from 'node:fs/promises';
import { planFor, validated } from './plan-helper.js';
import { startServer, statusServer, type TestServer } from './servers.js';
import { TextSink } from './text-sink.js';

let server: TestServer | undefined;
let dir: string | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const outputs = { json: undefined, hdrLog: undefined, sweep: undefined, slo: 'p99<100ms', quiet: true };

describe('bench outputs', () => {
  it('writes --json with the documented shape', async () => {
    server = await statusServer(200);
    const stdout = new TextSink();
    const stderr = new TextSink();
    await benchMain(
      validated(server.url, { rate: '100', duration: '500ms', warmup: '0', seed: '7' }),
      { ...outputs, json: '-' },
      { stdout, stderr, env: {} },
    );
    const report = JSON.parse(stdout.text) as Record<string, unknown>;
    expect(report).toMatchObject({
      schema: 'batchline.bench/v2',
      mode: 'open',
      target_rate_rps: 100,
      seed: 7,
      requests: { sent: 50, completed: 50, errors: 0, dropped: 0 },
      status: { 200: 50 },
      errors: { timeout: 0, refused: 0, reset: 0, protocol: 0, other: 0 },
    });
    for (const key of ['duration_s', 'throughput_rps', 'goodput_rps']) expect(typeof report[key]).toBe('number');
    for (const key of ['latency_ms', 'service_ms', 'send_lag_ms']) {
      expect(Object.keys(report[key] as object).sort()).toEqual([
        'count',
        'max',
        'mean',
        'p50',
        'p90',
        'p95',
        'p99',
        'p999',
      ]);
    }
    // The people's summary moves to stderr when stdout carries the JSON.
    expect(stderr.text).toContain('Latency');
    // Every field is in docs/bench.md's table of fields, the generator's self-check ones too.
    const docs = await readFile(new URL('../../docs/bench.md', import.meta.url), 'utf8');
    const fields = docs.slice(docs.indexOf('| field | meaning |'), docs.indexOf('## `bench merge`'));
    const generator = Object.keys(report.generator as object);
    for (const key of [...Object.keys(report), ...generator]) expect(fields, key).toContain(key);
  });

  it('prints no seed for a closed loop, where none played a part, and the seed of an open loop', async () => {
    server = await statusServer(200);
    for (const [load, seed] of [
      [{ connections: '2', requests: '20' }, null],
      [{ rate: '100', requests: '20', seed: '7' }, 7],
    ] as const) {
      const stdout = new TextSink();
      const stderr = new TextSink();
      await benchMain(
        validated(server.url, { ...load, warmup: '0' }),
        { ...outputs, json: '-' },
        { stdout, stderr, env: {} },
      );
      expect((JSON.parse(stdout.text) as { seed: unknown }).seed).toBe(seed);
      if (seed === null) expect(stderr.text).not.toMatch(/seed/i);
      else expect(stderr.text).toContain('seed 7');
    }
  });

  it('keeps no send lag in a closed loop, which has no intended send times, and keeps it in an open loop', async () => {
    server = await statusServer(200);
    for (const [load, open] of [
      [{ connections: '2', requests: '20' }, false],
      [{ rate: '100', requests: '20' }, true],
    ] as const) {
      const stdout = new TextSink();
      const stderr = new TextSink();
      await benchMain(
        validated(server.url, { ...load, warmup: '0' }),
        { ...outputs, json: '-' },
        { stdout, stderr, env: {} },
      );
      const report = JSON.parse(stdout.text) as { send_lag_ms: { count: number } | null; send_lag_hdr: unknown };
      if (open) {
        expect(report.send_lag_ms?.count).toBe(20);
        expect(typeof report.send_lag_hdr).toBe('string');
        expect(stderr.text).toContain('send lag');
      } else {
        expect(report.send_lag_ms).toBeNull();
        expect(report.send_lag_hdr).toBeNull();
        expect(stderr.text).not.toContain('send lag');
      }
    }
  });

  it('writes an HdrHistogram log that hdr-histogram-js reads back', async () => {
    server = await statusServer(200);
    dir = await mkdtemp(join(tmpdir(), 'bench-'));
    const hdrLog = join(dir, 'run.hlog');
    await benchMain(
      validated(server.url, { rate: '200', duration: '1500ms', warmup: '0' }),
      { ...outputs, hdrLog },
      { stdout: new TextSink(), stderr: new TextSink(), env: {} },
    );
    const reader = new hdr.HistogramLogReader(await readFile(hdrLog, 'utf8'));
    let latencyCount = 0;
    let serviceCount = 0;
    let intervals = 0;
    for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram()) {
      if (h.tag === 'service') serviceCount += h.totalCount;
      else latencyCount += h.totalCount;
      intervals++;
    }
    expect(intervals).toBeGreaterThanOrEqual(4);
    expect(latencyCount).toBe(300);
    expect(serviceCount).toBe(300);
    expect(await readFile(hdrLog, 'utf8')).toMatch(/^#batchline bench GET \S+ seed \d+$/m);
    // A closed loop has no schedule, so no seed: its log said one all the same (the --json report says null).
    const closedLog = join(dir, 'closed.hlog');
    await benchMain(
      validated(server.url, { requests: '20', warmup: '0' }),
      { ...outputs, hdrLog: closedLog },
      { stdout: new TextSink(), stderr: new TextSink(), env: {} },
    );
    expect(await readFile(closedLog, 'utf8')).toMatch(/^#batchline bench GET \S+$/m);
  });

  // '-' is stdout, and stdout holds one document: '--hdr-log -' wrote the log after the text
  // summary, '--json - --hdr-log -' the log after the JSON (stdout no longer JSON), '--html -'
  // a file named '-', and a sweep's '--hdr-log -' files named '--100rps'.
  it('writes --hdr-log - alone on stdout, and refuses two documents there, an HTML page or a sweep on it', async () => {
    server = await statusServer(200);
    const stdout = new TextSink();
    const stderr = new TextSink();
    await benchMain(
      validated(server.url, { requests: '20', warmup: '0' }),
      { ...outputs, hdrLog: '-' },
      {
        stdout,
        stderr,
        env: {},
      },
    );
    const reader = new hdr.HistogramLogReader(stdout.text);
    let latencyCount = 0;
    for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram())
      if (h.tag !== 'service') latencyCount += h.totalCount;
    expect(latencyCount).toBe(20);
    expect(stdout.text).not.toContain('Latency');
    expect(stderr.text).toContain('Latency');
    const refused = (extra: Partial<BenchOutputs>, raw: Record<string, string> = {}) =>
      benchMain(
        validated(server!.url, { requests: '1', warmup: '0', ...raw }),
        { ...outputs, ...extra },
        {
          stdout: new TextSink(),
          stderr: new TextSink(),
          env: {},
        },
      );
    await expect(refused({ json: '-', hdrLog: '-' })).rejects.toThrow(
      '--json - and --hdr-log -: only one of them can go to stdout',
    );
    await expect(refused({ html: '-' })).rejects.toThrow("--html: got '-', expected a file's path");
    await expect(refused({ hdrLog: '-', sweep: '100,200' }, { requests: '0', duration: '100ms' })).rejects.toThrow(
      "--hdr-log: got '-', expected a file's path with --sweep",
    );
  });

  it('sends a body that fits the toy model to a batchline server when none is given', async () => {
    server = await startServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/v1/stats')
        res.end(JSON.stringify({ model: { version: 'toy-logistic-v1', inputs: [{ name: 'x', shape: [-1, 3] }] } }));
      else res.end('{"prediction":{"label":1}}');
    }, true);
    const stderr = new TextSink();
    await benchMain(validated(`${server.url}v1/infer`, { requests: '5', rate: '100', warmup: '0' }), outputs, {
      stdout: new TextSink(),
      stderr,
      env: {},
    });
    const infers = server.seen.filter((r) => r.url === '/v1/infer');
    expect(infers).toHaveLength(5);
    expect(infers[0]).toMatchObject({ method: 'POST', body: '{"inputs":[0.2,1.5,-0.3]}' });
    expect(infers[0]?.headers['content-type']).toBe('application/json');
    expect(stderr.text).toContain('toy-logistic-v1');
  });

  it('sends GET without a body to a server that is not batchline, and refuses a bodiless POST', async () => {
    server = await startServer((req, res) => {
      res.statusCode = req.url === '/v1/stats' ? 404 : 200;
      res.end();
    }, true);
    await benchMain(validated(server.url, { requests: '3', rate: '100', warmup: '0' }), outputs, {
      stdout: new TextSink(),
      stderr: new TextSink(),
      env: {},
    });
    expect(server.seen.filter((r) => r.url === '/').map((r) => [r.method, r.body])).toEqual([
      ['GET', ''],
      ['GET', ''],
      ['GET', ''],
    ]);
    await expect(
      benchMain(validated(server.url, { requests: '3', rate: '100', method: 'POST' }), outputs, {
        stdout: new TextSink(),
        stderr: new TextSink(),
        env: {},
      }),
    ).rejects.toThrow(/--body: missing for POST/);
  });

  it('sends --body with --header and --content-type', async () => {
    server = await startServer((_req, res) => res.end(), true);
    const v = validated(
      server.url,
      { requests: '2', rate: '100', warmup: '0', body: 'hello', contentType: 'text/plain' },
      ['x-test: 1', 'X-Test: 2'],
    );
    await benchMain(v, outputs, { stdout: new TextSink(), stderr: new TextSink(), env: {} });
    expect(server.seen[0]).toMatchObject({ method: 'POST', body: 'hello' });
    expect(server.seen[0]?.headers['content-type']).toBe('text/plain');
    expect(server.seen[0]?.headers['x-test']).toBe('1, 2');
  });

  it('emits progress snapshots through a callback, ending with the final counts', async () => {
    server = await statusServer(200);
    const snapshots: BenchProgress[] = [];
    const { result } = await runBench(planFor(server.url, { rate: '200', duration: '800ms', warmup: '200ms' }), {
      onProgress: (p) => snapshots.push(p),
    });
    expect(snapshots.length).toBeGreaterThanOrEqual(2);
    const last = snapshots.at(-1) as BenchProgress;
    expect(last.phase).toBe('draining');
    expect(last.sent).toBe(200);
    expect(last.completed).toBe(200);
    expect(last.status).toEqual({ 200: result.requests.completed });
    expect(last.targetRps).toBe(200);
    expect(snapshots.map((p) => p.elapsedMs)).toEqual([...snapshots.map((p) => p.elapsedMs)].sort((a, b) => a - b));
  });

  it('compares two saved runs from the command line', async () => {
    server = await statusServer(200);
    dir = await mkdtemp(join(tmpdir(), 'bench-'));
    const a = join(dir, 'a.json');
    const b = join(dir, 'b.json');
    await benchMain(
      validated(server.url, { rate: '100', duration: '300ms', warmup: '0' }),
      { ...outputs, json: a },
      { stdout: new TextSink(), stderr: new TextSink(), env: {} },
    );
    await benchMain(
      validated(server.url, { rate: '100', duration: '300ms', warmup: '0' }),
      { ...outputs, json: b },
      { stdout: new TextSink(), stderr: new TextSink(), env: {} },
    );
    const stdout = new TextSink();
    await compareMain(a, b, stdout);
    expect(stdout.text).toContain('throughput req/s');
    expect(stdout.text).toContain('verdict:');
    await writeFile(b, '{"not":"a report"}');
    await expect(compareMain(a, b, new TextSink())).rejects.toThrow(/not a batchline bench --json report/);
  });

  it("compare's page hides credential query values in its warning of different URLs; its text keeps them", async () => {
    // The page's title and footer hid them, as reports.md says, but the warning showed both keys.
    server = await statusServer(200);
    dir = await mkdtemp(join(tmpdir(), 'bench-'));
    const paths = [join(dir, 'a.json'), join(dir, 'b.json')] as const;
    for (const [i, key] of ['k3y-of-a', 'k3y-of-b'].entries())
      await benchMain(
        validated(`${server.url}/x?api_key=${key}&n=1`, { rate: '100', duration: '200ms', warmup: '0' }),
        { ...outputs, json: paths[i] },
        { stdout: new TextSink(), stderr: new TextSink(), env: {} },
      );
    const stdout = new TextSink();
    const page = join(dir, 'compare.html');
    await compareMain(paths[0], paths[1], stdout, { path: page, commandLine: 'batchline bench compare a.json b.json' });
    expect(stdout.text).toContain('the runs loaded different URLs');
    expect(stdout.text).toContain('api_key=k3y-of-a');
    const html = await readFile(page, 'utf8');
    expect(html).toContain('the runs loaded different URLs');
    expect(html).toContain('/x?api_key=***');
    for (const secret of ['k3y-of-a', 'k3y-of-b']) expect(html).not.toContain(secret);
  });

  it('draws a progress line on a terminal with --no-ui, and none under CI', async () => {
    server = await statusServer(200);
    const run = async (env: NodeJS.ProcessEnv): Promise<string> => {
      const stdout = Object.assign(new TextSink(), { isTTY: true });
      const stderr = Object.assign(new TextSink(), { isTTY: true, columns: 100 });
      await benchMain(
        validated(server!.url, { rate: '100', duration: '600ms', warmup: '0' }),
        { ...outputs, quiet: false, noUi: true },
        { stdout, stderr, env },
      );
      return stderr.text;
    };
    const drawn = await run({});
    expect(drawn).toMatch(/\r(measuring|draining) /);
    expect(drawn).toContain('req/s');
    expect(await run({ CI: 'true' })).not.toContain('\r');
  });
});

describe('bench as load testers type it', () => {
  it('assumes http:// for localhost:8080/v1/infer', () => {
    expect(validated('localhost:8080/v1/infer').plan.url).toBe('http://localhost:8080/v1/infer');
    expect(validated('127.0.0.1:9/x?y=1').plan.url).toBe('http://127.0.0.1:9/x?y=1');
    expect(validated('https://example.com/').plan.url).toBe('https://example.com/');
  });

  it('takes -c, -d, -R and -n beside -H', async () => {
    const { buildProgram } = await import('../../src/cli.js');
    const help =
      buildProgram()
        .commands.find((c) => c.name() === 'bench')
        ?.helpInformation() ?? '';
    for (const flag of [
      '-c, --connections',
      '-d, --duration',
      '-R, --rate',
      '-n, --requests',
      '-H, --header',
      '--threshold',
    ])
      expect(help).toContain(flag);
  });

  it("explains that batchline's /v1/infer takes POST and a body instead of sending GETs that all get 404", async () => {
    const { startTestServer } = await import('../serve/test-server.js');
    const serve = await startTestServer();
    try {
      for (const raw of [{ method: 'GET' }, {}] as Record<string, string>[]) {
        const run = benchMain(validated(`${serve.url}/v1/infer`, { ...raw, requests: '5', warmup: '0' }), outputs, {
          stdout: new TextSink(),
          stderr: new TextSink(),
          env: {},
        });
        if (raw.method === 'GET')
          await expect(run).rejects.toThrow(/\/v1\/infer takes POST with a JSON body.*drop --method GET/);
        else await run; // without --method, the toy model's body is found and sent
      }
      expect(serve.runtime.defaultVersion?.batcher.counts.outcomes.ok).toBe(5);
    } finally {
      await serve.close();
    }
  });

  it('cycles through the lines of --body @file.jsonl', async () => {
    server = await startServer((_req, res) => res.end(), true);
    dir = await mkdtemp(join(tmpdir(), 'batchline-bodies-'));
    const file = join(dir, 'bodies.jsonl');
    await writeFile(file, '{"inputs":[1]}\n{"inputs":[2]}\n\n{"inputs":[3]}\n');
    await benchMain(
      validated(server.url, { requests: '4', warmup: '0', connections: '1', body: `@${file}` }),
      outputs,
      { stdout: new TextSink(), stderr: new TextSink(), env: {} },
    );
    expect(server.seen.map((r) => [r.method, r.body])).toEqual([
      ['POST', '{"inputs":[1]}'],
      ['POST', '{"inputs":[2]}'],
      ['POST', '{"inputs":[3]}'],
      ['POST', '{"inputs":[1]}'],
    ]);
  });
});
