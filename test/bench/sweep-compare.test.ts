import { describe, expect, it } from 'vitest';
import { compareRuns, formatComparison } from '../../src/bench/compare.js';
import { parseBenchJson, toBenchJson, type BenchJson } from '../../src/bench/report-json.js';
import { formatReport } from '../../src/bench/report-text.js';
import { bodyFingerprint } from '../../src/bench/build-result.js';
import type { BenchResult } from '../../src/bench/result.js';
import { benchPageData } from '../../src/report/html/bench-page.js';
import { bestRate, formatSweep, parseSlo, parseSweep, runSweep } from '../../src/bench/sweep.js';
import type { BenchPlan } from '../../src/bench/plan.js';
import { createLatencyHistogram, percentilesMs } from '../../src/core/latency-histogram.js';
import { planFor } from './plan-helper.js';
import { resultOf } from './result-fixture.js';

/** The HTML page's data of a run with no server statistics, as `bench --html` builds it. */
function pageOf(result: BenchResult): ReturnType<typeof benchPageData> {
  return benchPageData(
    {
      result,
      seconds: [],
      samples: { ok: false, why: 'not a batchline server' },
      startEpochMs: 0,
      targetRpsAt: undefined,
    },
    'batchline bench',
    'now',
  );
}

function result(target: number, latenciesMs: number[], goodputRps = target): BenchResult {
  const empty = createLatencyHistogram();
  const r = resultOf(latenciesMs, {
    mode: 'open',
    seed: 1,
    arrival: 'constant',
    connections: 16,
    targetRateRps: target,
    plannedRateRps: target,
    warmupS: 1,
    durationS: 10,
    sendRateRps: target,
    throughputRps: goodputRps,
    goodputRps,
    sendLag: percentilesMs(empty),
  });
  empty.destroy();
  return { ...r, sendLagHdr: r.latencyHdr };
}

const spread = (center: number, n = 200): number[] =>
  Array.from({ length: n }, (_, i) => center * (0.8 + (0.4 * i) / n));

describe('sweep', () => {
  it('parses lists and ranges', () => {
    expect(parseSweep('100,200,400')).toEqual([100, 200, 400]);
    expect(parseSweep('100..500/100')).toEqual([100, 200, 300, 400, 500]);
    expect(() => parseSweep('100..50/10')).toThrow(/--sweep/);
    expect(() => parseSweep('0,10')).toThrow(/--sweep/);
  });

  // -R takes wrk's units (-R 2k), but a sweep's rates did not: '--sweep 1k..3k/1k' exited 2.
  it("takes -R's units, k and M", () => {
    expect(parseSweep('500,1k,1.5k')).toEqual([500, 1000, 1500]);
    expect(parseSweep('1k..3k/1k')).toEqual([1000, 2000, 3000]);
    expect(parseSweep('1M')).toEqual([1_000_000]);
  });

  it('parses SLOs', () => {
    expect(parseSlo('p99<100ms').clauses[0]).toMatchObject({ kind: 'latency', metric: 'p99', boundMs: 100 });
    expect(parseSlo('p99.9<1s').clauses[0]).toMatchObject({ metric: 'p999', boundMs: 1000 });
    expect(parseSlo('p95<1s').text).toBe('p95<1s & errors≤1%');
    expect(() => parseSlo('p97<1s')).toThrow(/--slo/);
  });

  it('names the highest rate that met the SLO', () => {
    const slo = parseSlo('p99<100ms');
    const steps = [
      result(100, spread(10)),
      result(200, spread(50)),
      result(300, spread(90), 250),
      result(400, spread(400)),
    ];
    expect(bestRate(steps, slo)).toBe(200);
    const text = formatSweep(steps, slo);
    expect(text).toContain('highest rate that met p99<100ms & errors≤1%: 200 req/s');
    expect(text.split('\n')[0]).toMatch(/rate\s+achieved\s+p50 ms\s+p99 ms\s+errors\s+goodput/);
  });

  it("shows the percentile the objective judges, so a step's verdict can be read off its row", () => {
    // Under --slo 'p95<50ms' the table showed p50 and p99 only: a row read 'missed' with nothing on it over 50.
    const slo = parseSlo('p95<50ms & p99.9<200ms');
    const steps = [result(100, spread(30)), result(200, spread(40)), result(300, spread(60))];
    const lines = formatSweep(steps, slo).split('\n');
    expect(lines[0]).toMatch(/^ *rate +achieved +p50 ms +p95 ms +p99 ms +p99\.9 ms +errors +goodput +p95<50ms/);
    const rows = lines.slice(1, 4).map((line) => line.trim().split(/\s+/));
    for (const [i, cells] of rows.entries()) {
      expect(Number(cells[3])).toBeCloseTo((steps[i] as BenchResult).latency.p95, 1);
      expect(cells.at(-1)).toBe(Number(cells[3]) < 50 ? 'met' : 'missed');
    }
    expect(rows.map((cells) => cells.at(-1))).toEqual(['met', 'met', 'missed']);
  });

  // A gRPC sweep's table counted every OK answer as an error beside its verdict 'met' (errors 150 of 150).
  it("counts a gRPC step's OK answers as successes in the errors column", () => {
    const slo = parseSlo('p99<100ms');
    const grpc = { ...result(100, spread(10)), status: { OK: 95, RESOURCE_EXHAUSTED: 5 } };
    const cells = (formatSweep([grpc], slo).split('\n')[1] as string).trim().split(/\s+/);
    expect(cells[4]).toBe('5');
  });

  it('does not count a step the user stopped part-way, however good it looked', () => {
    const slo = parseSlo('p99<100ms');
    const stopped = { ...result(300, spread(10)), stoppedAtS: 1.2 };
    expect(bestRate([result(100, spread(10)), stopped], slo)).toBe(100);
    expect(formatSweep([result(100, spread(10)), stopped], slo)).toMatch(/300\s.*stopped\n/);
  });
});

describe('sweep steps starved of connections', () => {
  /**
   * A server that answers in 40 ms up to `capacityRps`; `connections` carry at most 25 each a
   * second. A step is sustained when both keep up with its rate, and reports the plan's connections.
   */
  function fakeStep(capacityRps: number, plans: BenchPlan[]) {
    return async (plan: BenchPlan): Promise<BenchResult> => {
      plans.push(plan);
      const rate = plan.rateRps ?? 0;
      const carried = Math.min(capacityRps, (plan.connections * 1000) / 40);
      const r = result(rate, spread(40), Math.min(rate, carried));
      r.connections = plan.connections;
      const sustained = carried >= rate;
      r.trend = {
        backlogGrowth: sustained ? 0 : rate - carried,
        latencyGrowthMs: sustained ? 0 : 500,
        meanLatencyMs: 40,
        sustained,
      };
      return r;
    };
  }

  it('runs a step that waited for connections again with enough, and keeps them for the next steps', async () => {
    const plans: BenchPlan[] = [];
    const base = planFor('http://127.0.0.1:1/', { rate: '100', connections: '16' });
    const steps = await runSweep(base, [300, 400, 500, 600], fakeStep(10_000, plans));
    // 16 connections carry 400 req/s: 500 runs twice, the second time with 500 × 40 ms × 1.5 = 30.
    expect(plans.map((p) => [p.rateRps, p.connections])).toEqual([
      [300, 16],
      [400, 16],
      [500, 16],
      [500, 30],
      [600, 30],
    ]);
    expect(steps.map((s) => s.connections)).toEqual([16, 16, 30, 30]);
    expect(steps[2]?.warnings[0]).toBe(
      'connections raised from 16 to 30 for this step and the ones after it: with 16 it was not sustained while its sends waited for a free connection',
    );
    const slo = parseSlo('p99<80ms');
    expect(bestRate(steps, slo)).toBe(600);
    expect(formatSweep(steps, slo)).toContain('highest rate that met p99<80ms & errors≤1%: 600 req/s');
  });

  it('names no rate above what the server itself answers, connections raised or not', async () => {
    const plans: BenchPlan[] = [];
    const base = planFor('http://127.0.0.1:1/', { rate: '100', connections: '16' });
    const steps = await runSweep(base, [300, 400, 500, 600], fakeStep(450, plans));
    // 500 runs again with 30 connections and is still not sustained: the server's limit. 600 is
    // starved only by the server, not connections (30 carry 750), so it runs once.
    expect(plans.map((p) => [p.rateRps, p.connections])).toEqual([
      [300, 16],
      [400, 16],
      [500, 16],
      [500, 30],
      [600, 30],
    ]);
    expect(bestRate(steps, parseSlo('p99<80ms'))).toBe(400);
  });
});

describe('compare', () => {
  const json = (r: BenchResult): BenchJson => toBenchJson(r);

  it('calls overlapping runs noise', () => {
    const c = compareRuns(json(result(100, spread(10))), json(result(100, spread(10.3), 101)));
    expect(c.noise).toBe(true);
    expect(c.verdict).toContain('noise');
  });

  it('names a real latency change', () => {
    const c = compareRuns(json(result(100, spread(10))), json(result(100, spread(20))));
    expect(c.noise).toBe(false);
    expect(c.verdict).toContain('latency is higher in B');
    expect(formatComparison(c, 'a.json', 'b.json')).toContain('latency p50 ms');
  });
});

describe('a sweep report given to compare or merge', () => {
  // bench's own --sweep --json output was called 'not a batchline bench --json report'.
  it('is named as a sweep report, with the way to take one step out of it', () => {
    const sweep = JSON.stringify({
      schema: 'batchline.bench-sweep/v1',
      slo: 'p99<100ms',
      best_rate_rps: 100,
      steps: [toBenchJson(result(100, spread(10)))],
    });
    expect(() => parseBenchJson(sweep, 'sweep.json')).toThrow(
      "sweep.json is a --sweep report (batchline.bench-sweep/v1), one report per step in its steps; compare and merge read a single run's: take a step out, such as jq '.steps[0]' sweep.json",
    );
  });

  it('names a --sweep-connections report too', () => {
    const sweep = JSON.stringify({
      schema: 'batchline.bench-connections-sweep/v1',
      slo: 'p99<100ms',
      best_connections: 4,
      best_throughput_rps: 100,
      steps: [toBenchJson(result(100, spread(10)))],
    });
    expect(() => parseBenchJson(sweep, 'c.json')).toThrow(
      "c.json is a --sweep-connections report (batchline.bench-connections-sweep/v1), one report per step in its steps; compare and merge read a single run's: take a step out, such as jq '.steps[0]' c.json",
    );
    // A schema named as an object's own property is no sweep's.
    expect(() => parseBenchJson(JSON.stringify({ schema: 'constructor' }), 'x.json')).toThrow(/not a batchline bench/);
  });
});

describe('compare of a run with no 2xx answer', () => {
  const json = (r: BenchResult): BenchJson => toBenchJson(r);
  // A server that answers every request with a fast 500: its 2xx latency is empty.
  const all500: BenchResult = {
    ...result(100, []),
    requests: { sent: 6000, completed: 6000, ok: 0, late: 0, errors: 0, dropped: 0 },
    status: { 500: 6000 },
    throughputRps: 6000,
    goodputRps: 0,
  };

  // Its latency showed as 0.000 ms, '-100.0%' against A, and the verdict was only
  // 'throughput is higher in B (+5900.0%)': a server broken into 500s read as a faster one.
  it('shows its latency as empty, not as 0 ms, and says its answers were not 2xx', () => {
    const c = compareRuns(json(result(100, spread(10))), json(all500));
    const p50 = c.rows.find((row) => row.figure === 'latency p50 ms');
    expect(p50).toMatchObject({ b: '-', change: '-' });
    expect(p50?.a).not.toBe('-');
    expect(c.rows.map((row) => row.b)).not.toContain('0.000');
    expect(c.noise).toBe(false);
    expect(c.verdict).toContain('B has no 2xx answer (A had 200)');
    expect(c.verdict).toContain('goodput is lower in B (-100.0%)');
    const reverse = compareRuns(json(all500), json(result(100, spread(10))));
    expect(reverse.verdict).toContain('A had no 2xx answer (B has 200)');
  });
});

describe('compare of runs that did different things', () => {
  const json = (r: BenchResult): BenchJson => toBenchJson(r);
  const base = result(100, spread(10));
  const closed = (connections: number): BenchResult => ({
    ...base,
    mode: 'closed',
    connections,
    targetRateRps: undefined,
    plannedRateRps: undefined,
    arrival: undefined,
    seed: undefined,
  });

  it('warns, naming both sides, when the runs loaded other URLs, methods, bodies or loads', () => {
    const body = (text: string) => bodyFingerprint([new TextEncoder().encode(text)]);
    const b: BenchResult = {
      ...base,
      url: 'http://y/',
      method: 'POST',
      body: body('{"inputs":[1]}'),
      targetRateRps: 200,
      arrival: 'poisson',
    };
    const c = compareRuns(json({ ...base, body: body('{"inputs":[2]}') }), json(b));
    expect(c.warnings).toEqual([
      'the runs loaded different URLs: A http://x/, B http://y/',
      'the runs used different methods: A GET, B POST',
      expect.stringMatching(
        /^the runs sent different bodies: A 1 body of 14 bytes \(sha256 \w{12}\), B 1 body of 14 bytes \(sha256 \w{12}\)$/,
      ),
      'the runs used different load: A open loop at 100 req/s (constant), B open loop at 200 req/s (poisson)',
    ]);
    // A warning line beside the verdict, not a refusal.
    const text = formatComparison(c, 'a.json', 'b.json');
    expect(text).toContain('verdict: ');
    expect(text).toContain('\nWarnings\n  ! the runs loaded different URLs: A http://x/, B http://y/\n');
  });

  it('says nothing of two runs of the same load, nor of bodies a report did not record', () => {
    const a = json({ ...base, body: bodyFingerprint([new Uint8Array([1, 2])]) });
    const { body: _, ...older } = json(base);
    expect(compareRuns(a, json({ ...base, body: bodyFingerprint([new Uint8Array([1, 2])]) })).warnings).toEqual([]);
    expect(compareRuns(a, older as BenchJson).warnings).toEqual([]);
    expect(formatComparison(compareRuns(a, a), 'a', 'b')).not.toContain('Warnings');
  });

  it('counts one sender and one connection in the singular, in compare and on the HTML page', () => {
    expect(compareRuns(json(closed(1)), json(closed(2))).warnings).toEqual([
      'the runs used different load: A closed loop with 1 sender, B closed loop with 2 senders',
    ]);
    const page = pageOf(closed(1));
    expect(page.subtitle).toMatch(/^closed loop, 1 sender · 1 connection · /);
  });
});

describe('the HTML page of a run', () => {
  it('gives each kind of request with no answer its first cause on the HTML page, as the text report does', () => {
    const r = result(100, spread(10));
    const failed: BenchResult = {
      ...r,
      errors: { ...r.errors, reset: 3, timeout: 2 },
      errorCauses: { reset: 'other side closed (UND_ERR_SOCKET)' },
    };
    const page = pageOf(failed);
    const rows = page.tables.flatMap((table) => table.rows.map((row) => row.join(' | ')));
    expect(rows).toContain('no answer: reset (first: other side closed (UND_ERR_SOCKET)) | 3');
    // A kind whose cause was not kept (an older report merged in) keeps its plain row.
    expect(rows).toContain('no answer: timeout | 2');
  });

  it("writes the Stability and Latency tables' figures as the text report does (107.3, not 107.263 or 4 digits)", () => {
    const r: BenchResult = {
      ...resultOf([0.51234, 12.3456, 107.263, 12_345.6]),
      stability: {
        percentage: 20,
        windowS: 1,
        windowRequests: undefined,
        maxWindows: 4,
        latency: 'p99',
        windows: [
          { throughputRps: 150.43, latencyMs: 107.263 },
          { throughputRps: 48.27, latencyMs: 0.51234 },
          { throughputRps: 151.5, latencyMs: 12_345.6 },
          { throughputRps: 0, latencyMs: undefined },
        ],
        kept: [2, 3, 4],
        spread: { throughputPct: Number.POSITIVE_INFINITY, latencyPct: Number.POSITIVE_INFINITY },
        settled: false,
        stopped: false,
      },
    };
    const page = pageOf(r);
    const text = formatReport(r).split('\n');
    // The text report's Stability rows: `  window  req/s  p99 ms  [kept]`.
    const textWindows = text
      .filter((line) => /^\s+\d+\s+\S+\s+\S+(\s+kept)?$/.test(line))
      .map((line) => line.trim().split(/\s+/).slice(0, 3));
    const stability = page.tables.find((t) => t.title.startsWith('Stability'));
    // A window without a figure is the page's dash (–) where the text has '-'.
    expect(stability?.rows.map((row) => row.slice(0, 3).map((cell) => (cell === '–' ? '-' : cell)))).toEqual(
      textWindows,
    );
    expect(textWindows).toEqual([
      ['1', '150', '107.3'],
      ['2', '48.3', '0.512'],
      ['3', '152', '12346'],
      ['4', '0.0', '-'],
    ]);
    // The Latency table's 2xx row against the text report's `latency 2xx` row.
    const textRow = text
      .find((line) => line.trimStart().startsWith('latency 2xx'))
      ?.trim()
      .split(/\s+/)
      .slice(2);
    const latency = page.tables.find((t) => t.title === 'Latency, ms');
    expect(latency?.rows.find((row) => row[0] === '2xx answers')?.slice(2)).toEqual(textRow);
  });
});

describe('report text', () => {
  it('is a pure function of the result with the summary table', () => {
    const r = result(100, spread(10));
    expect(formatReport(r)).toBe(formatReport(r));
    const text = formatReport({ ...r, warnings: ['something'] });
    for (const part of ['p50', 'p90', 'p99', 'p99.9', 'max', 'mean', 'status      200: 200', 'seed 1', '! something'])
      expect(text).toContain(part);
  });
});

describe('sweep HdrHistogram logs', () => {
  it('name one log per step after the rate', async () => {
    const { stepLogPath } = await import('../../src/commands/bench-outputs.js');
    expect(stepLogPath('out/run.hlog', '500rps')).toBe('out/run-500rps.hlog');
    expect(stepLogPath('run', '2.5rps')).toBe('run-2.5rps');
    expect(stepLogPath('./a.b/run', '10rps')).toBe('./a.b/run-10rps');
  });
});
