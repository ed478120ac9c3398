import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { addEncoded, encodeHistogram } from '../../src/bench/histogram-codec.js';
import { mergeMain } from '../../src/commands/merge-main.js';
import { mergeReports } from '../../src/bench/merge.js';
import { parseBenchJson, toBenchJson, type BenchJson } from '../../src/bench/report-json.js';
import { createLatencyHistogram, percentilesMs } from '../../src/core/latency-histogram.js';
import { runBatchline, succeeded } from '../batchline-cli.js';
import { fixedDelayServer, type TestServer } from './servers.js';
import { resultOf } from './result-fixture.js';
import { TextSink } from './text-sink.js';

/** A v2 report whose every answer took one of `latenciesMs`, at `rate` req/s. */
function report(rate: number, latenciesMs: number[]): BenchJson {
  const empty = createLatencyHistogram();
  const r = resultOf(latenciesMs, {
    mode: 'open',
    seed: rate,
    arrival: 'poisson',
    connections: 8,
    targetRateRps: rate,
    plannedRateRps: rate,
    warmupS: 1,
    durationS: 10,
    sendRateRps: rate,
    throughputRps: rate,
    goodputRps: rate,
    sendLag: percentilesMs(empty),
    generator: { lateSendFraction: 0, eventLoop: { p99Ms: 1, maxMs: 2, meanMs: 0 } },
    trend: { backlogGrowth: 0, latencyGrowthMs: 0, meanLatencyMs: 1, sustained: true },
    sendLagHdr: encodeHistogram(empty),
  });
  empty.destroy();
  return toBenchJson(r);
}

let server: TestServer | undefined;
let dir: string | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('bench merge', () => {
  it('adds the histograms exactly, never averaging percentiles, and sums counts and rates', () => {
    // A: 990 fast answers; B: 10 fast and 990 slow. Averaging p50s would say 30 ms; the sum says 10.
    const a = report(
      100,
      Array.from({ length: 990 }, () => 10),
    );
    const b = report(300, [...Array.from({ length: 10 }, () => 10), ...Array.from({ length: 990 }, () => 50)]);
    const { json } = mergeReports([
      { file: 'a.json', report: a },
      { file: 'b.json', report: b },
    ]);
    expect(json.requests).toMatchObject({ sent: 1990, completed: 1990, ok: 1990 });
    expect(json.throughput_rps).toBe(400);
    expect(json.target_rate_rps).toBe(400);
    expect(json.latency_ms.count).toBe(1990);
    expect(json.latency_ms.p50).toBeCloseTo(10, 1);
    expect(json.latency_ms.p90).toBeCloseTo(50, 0);
    expect(json.latency_ms.max).toBe(50);
    expect(json.merged_from?.map((m) => m.file)).toEqual(['a.json', 'b.json']);
    expect(json.warnings).toEqual([]);
  });

  it('judges a report written before trend.refused by its own refused sends: not sustained when its --max-in-flight refused most of its schedule', () => {
    const a = report(100, [10]);
    const b = report(
      100,
      Array.from({ length: 100 }, () => 10),
    );
    // As bench wrote it before it judged refused sends: 'sustained', and no 'refused'.
    const before = {
      ...b,
      requests: { ...b.requests, dropped: 300 },
      trend: { backlog_growth: 0, latency_growth_ms: 0, sustained: true },
    };
    const { json, result } = mergeReports([
      { file: 'a.json', report: a },
      { file: 'before.json', report: before },
    ]);
    expect(json.trend).toMatchObject({ refused: true, sustained: false });
    expect(result.trend).toMatchObject({ refused: true, sustained: false });
  });

  it('warns when the runs used different methods or sent different bodies', () => {
    const a = report(100, [10]);
    const b = report(100, [10]);
    const { json } = mergeReports([
      { file: 'a.json', report: { ...a, body: { count: 1, bytes: 2, sha256: 'aa' } } },
      { file: 'b.json', report: { ...b, seed: 2, method: 'POST', body: { count: 1, bytes: 2, sha256: 'bb' } } },
    ]);
    expect(json.warnings).toEqual(['the runs used different methods: GET, POST', 'the runs sent different bodies']);
    expect(json.body).toBeNull();
  });

  it('keeps no send lag for closed loops, also from reports written while closed loop kept a histogram of zeros', () => {
    const closed = (rate: number): BenchJson => ({
      ...report(rate, [10, 20]),
      mode: 'closed',
      target_rate_rps: null,
      planned_rate_rps: null,
    });
    const { json, result } = mergeReports([
      { file: 'a.json', report: closed(100) },
      { file: 'b.json', report: { ...closed(200), send_lag_ms: null, send_lag_hdr: null } },
    ]);
    expect(json.send_lag_ms).toBeNull();
    expect(json.send_lag_hdr).toBeNull();
    expect(result.sendLag).toBeUndefined();
    expect(json.latency_ms.count).toBe(4);
  });

  it('merges two bench processes that ran at the same time into the report of their sum', async () => {
    server = await fixedDelayServer(5);
    dir = await mkdtemp(join(tmpdir(), 'batchline-merge-'));
    const files = [join(dir, 'a.json'), join(dir, 'b.json')];
    // Two generators at once, as two machines would run them, each with its own seed.
    await Promise.all(
      files.map(async (file, i) =>
        succeeded(
          await runBatchline([
            'bench',
            '-R',
            '100',
            '-d',
            '1',
            '--warmup',
            '200ms',
            '--arrival',
            'poisson',
            '--seed',
            String(i + 1),
            '--json',
            file,
            '--quiet',
            server!.url,
          ]),
        ),
      ),
    );
    const [a, b] = await Promise.all(files.map(async (file) => parseBenchJson(await readFile(file, 'utf8'), file)));
    const out = join(dir, 'merged.json');
    const stdout = new TextSink();
    await mergeMain(files, out, stdout);
    const merged = parseBenchJson(await readFile(out, 'utf8'), out);

    expect(merged.requests.sent).toBe(a!.requests.sent + b!.requests.sent);
    expect(merged.latency_ms.count).toBe(a!.latency_ms.count + b!.latency_ms.count);
    expect(merged.throughput_rps).toBeCloseTo(a!.throughput_rps + b!.throughput_rps, 1);
    expect(merged.target_rate_rps).toBe(200);
    // The merged percentiles are those of both runs' answers together.
    const union = createLatencyHistogram();
    addEncoded(union, a!.latency_hdr);
    addEncoded(union, b!.latency_hdr);
    const expected = percentilesMs(union, Math.max(a!.latency_ms.max, b!.latency_ms.max));
    for (const key of ['p50', 'p90', 'p95', 'p99', 'p999'] as const)
      expect(merged.latency_ms[key]).toBeCloseTo(expected[key], 3);
    expect(stdout.text).toContain(`merged 2 runs: ${files.join(', ')}`);
    // A rate under 100 req/s (a busy host) prints a decimal: 59.0 req/s.
    expect(stdout.text).toMatch(/answered\s+[\d.]+ req\/s/);
  });

  // 'bench merge a.json a.json' (or a copy of a report) summed the run with itself: every count
  // and rate doubled, without a warning, as if two machines had loaded the server.
  it('refuses the same run given twice, under one name or two', () => {
    const a = report(100, [10, 20]);
    expect(() =>
      mergeReports([
        { file: 'a.json', report: a },
        { file: 'b.json', report: report(200, [5]) },
        { file: 'copy.json', report: structuredClone(a) },
      ]),
    ).toThrow(
      'copy.json is the run a.json holds (the same start, seed and histograms): merged, it would count every request twice',
    );
  });

  it('refuses fewer than two reports, and says why a v1 report cannot be merged', async () => {
    await expect(mergeMain(['one.json'], undefined, new TextSink())).rejects.toThrow(/two or more/);
    const v1 = { ...report(1, [1]), schema: 'batchline.bench/v1' } as unknown as BenchJson;
    expect(() =>
      mergeReports([
        { file: 'old.json', report: v1 },
        { file: 'new.json', report: report(1, [1]) },
      ]),
    ).toThrow(/old.json is a batchline.bench\/v1 report/);
  });
});
