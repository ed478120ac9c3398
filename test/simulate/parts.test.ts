import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { burstyArrivals, burstyRates } from '../../src/core/bursty-arrivals.js';
import { SeededRandom } from '../../src/core/rng.js';
import { benchReplayFlags, parseArrivals } from '../../src/simulate/arrivals-file.js';
import {
  parseAffineLatency,
  serviceTimeWithJitter,
  tableLatency,
  fixedLatency,
} from '../../src/simulate/latency-model.js';
import { paretoFrontier, chooseUnderSlo } from '../../src/simulate/pareto.js';
import { parseSlo } from '../../src/simulate/slo.js';
import { gridPoints, parseSweep } from '../../src/simulate/sweep-grid.js';
import type { SimulationReport } from '../../src/simulate/report.js';
import { simulate } from './helpers.js';

describe('latency models', () => {
  it('parses affine service times in several spellings', () => {
    expect(parseAffineLatency('5+2n')).toEqual({ aMs: 5, bMs: 2 });
    expect(parseAffineLatency('5 + 2*n ms')).toEqual({ aMs: 5, bMs: 2 });
    expect(parseAffineLatency('0.5n+3')).toEqual({ aMs: 3, bMs: 0.5 });
    expect(parseAffineLatency('2n')).toEqual({ aMs: 0, bMs: 2 });
    expect(parseAffineLatency('n')).toEqual({ aMs: 0, bMs: 1 });
    expect(parseAffineLatency('20')).toEqual({ aMs: 20, bMs: 0 });
    for (const bad of ['', 'fast', '5+2m', '5+2n+3', '2n+3n', '-5+2n', '0', 'n^2'])
      expect(parseAffineLatency(bad)).toBeUndefined();
  });

  it('interpolates a profile table and extends it by the fitted slope', () => {
    const model = tableLatency(
      [
        { batchSize: 1, meanMs: 2 },
        { batchSize: 4, meanMs: 5 },
        { batchSize: 8, meanMs: 7 },
      ],
      0.6,
      'p.json',
    );
    expect([1, 2, 4, 6, 8, 10].map((n) => model.meanMs(n))).toEqual([2, 3, 5, 6, 7, 8.2]);
  });

  it('jitter keeps the mean and has the asked coefficient of variation', () => {
    const draw = serviceTimeWithJitter(fixedLatency(10), 0.5, new SeededRandom(3));
    const xs = Array.from({ length: 200_000 }, () => draw(4));
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / xs.length);
    expect(mean).toBeCloseTo(10, 1);
    expect(sd / mean).toBeCloseTo(0.5, 1);
  });
});

describe('bursty arrivals', () => {
  it('keep the asked mean rate and burst at the peak rate', () => {
    const options = { meanRps: 500, peakFactor: 3, onMeanMs: 100, offMeanMs: 400 };
    expect(burstyRates(options)).toEqual({ onRps: 1500, offRps: 250 });
    const process = burstyArrivals(options, new SeededRandom(5));
    let last = 0;
    const n = 400_000;
    const gaps: number[] = [];
    // Counted, then one expect: 400,000 expect() calls took 77 s on a loaded host, past the test's 60.
    let backwards = 0;
    for (let i = 0; i < n; i++) {
      const at = process.next() as number;
      gaps.push(at - last);
      if (at < last) backwards++;
      last = at;
    }
    expect(backwards).toBe(0);
    expect(n / (last / 1000) / 500).toBeCloseTo(1, 1);
    // Burstier than Poisson: squared coefficient of variation of the gaps above 1.
    const mean = last / n;
    const scv = gaps.reduce((a, g) => a + (g - mean) ** 2, 0) / n / mean ** 2;
    expect(scv).toBeGreaterThan(1.2);
  });

  it('with the largest peak factor is an on/off source', () => {
    expect(burstyRates({ meanRps: 100, peakFactor: 5, onMeanMs: 100, offMeanMs: 400 })).toEqual({
      onRps: 500,
      offRps: 0,
    });
    expect(() => burstyRates({ meanRps: 100, peakFactor: 6, onMeanMs: 100, offMeanMs: 400 })).toThrow(RangeError);
  });
});

describe('arrival files', () => {
  it('reads lines, JSON arrays, records, recordings and JSON lines', () => {
    const expected = Float64Array.from([0, 1, 2.5]);
    expect(parseArrivals('2.5\n0\n# comment\n\n1\n', 'f')).toEqual(expected);
    expect(parseArrivals('[0, 2.5, 1]', 'f')).toEqual(expected);
    expect(parseArrivals('[{"arrival_ms":0},{"arrival_ms":1},{"arrival_ms":2.5}]', 'f')).toEqual(expected);
    expect(parseArrivals('{"arrivals_ms":[0,1,2.5]}', 'f')).toEqual(expected);
    expect(parseArrivals('{"requests":[{"intended_ms":0},{"intended_ms":2.5},{"intended_ms":1}]}', 'f')).toEqual(
      expected,
    );
    expect(parseArrivals('{"id":0,"arrival_ms":0}\n{"id":1,"arrival_ms":1}\n{"id":2,"arrival_ms":2.5}\n', 'f')).toEqual(
      expected,
    );
  });

  it('names the file and the line it cannot read', () => {
    expect(() => parseArrivals('1\nx\n', 'a.txt')).toThrow(/--arrivals: 'a.txt' line 2 is not a number/);
    expect(() => parseArrivals('{"summary":{}}', 'b.json')).toThrow(/carries no arrival times/);
    expect(() => parseArrivals('-1\n', 'c.txt')).toThrow(/negative/);
    const bench = JSON.stringify({
      schema: 'batchline.bench/v1',
      target_rate_rps: 300,
      arrival: 'poisson',
      duration_s: 30,
      requests: { sent: 9000 },
    });
    expect(() => parseArrivals(bench, 'run.json')).toThrow(
      /bench --json summary without per-request times; simulate its load with --rate 300 --arrival poisson --duration 30s/,
    );
  });

  it('names every flag that rebuilds the load of a bench report, the value and the seed included', () => {
    const base = { schema: 'batchline.bench/v1', duration_s: 10, seed: 7, throughput_rps: 389.5 };
    expect(benchReplayFlags({ ...base, mode: 'open', target_rate_rps: 300, arrival: 'poisson' })).toBe(
      '--rate 300 --arrival poisson --duration 10s --seed 7',
    );
    expect(benchReplayFlags({ ...base, mode: 'open', target_rate_rps: 300, arrival: 'constant' })).toBe(
      '--rate 300 --arrival constant --duration 10s',
    );
    expect(
      benchReplayFlags({ ...base, mode: 'open', target_rate_rps: null, stages: '5s:100,5s:300', arrival: 'constant' }),
    ).toBe('--stages 5s:100,5s:300 --arrival constant');
    const closed = JSON.stringify({ ...base, mode: 'closed', target_rate_rps: null, stages: null, arrival: null });
    expect(() => parseArrivals(closed, 'closed.json')).toThrow(
      /simulate its load with --rate 389.5 --arrival poisson --duration 10s \(a closed loop has no schedule/,
    );
  });
});

describe('sweeps, Pareto and the SLO pick', () => {
  it('parses axes and builds the grid, first axis slowest', () => {
    const axes = parseSweep(['max-batch-size=1,2', 'batch-window-ms=0,5,10']);
    expect(axes.map((a) => [a.key, a.values])).toEqual([
      ['maxBatchSize', [1, 2]],
      ['batchWindowMs', [0, 5, 10]],
    ]);
    expect(gridPoints(axes)).toEqual([
      [1, 0],
      [1, 5],
      [1, 10],
      [2, 0],
      [2, 5],
      [2, 10],
    ]);
    expect(parseSweep(['max-batch-size=1,2 instances=1,2']).map((a) => a.flag)).toEqual([
      'max-batch-size',
      'instances',
    ]);
  });

  it('parses objectives', () => {
    expect(parseSlo('p99<50ms')).toMatchObject({
      clauses: [
        { metric: 'p99', boundMs: 50 },
        { metric: 'loss', bound: 0.001 },
      ],
      text: 'p99<50ms & loss≤0.1%',
    });
    expect(parseSlo('p50<10, p99.9<0.2s, loss<1%')).toMatchObject({
      clauses: [
        { metric: 'p50', boundMs: 10 },
        { metric: 'p999', boundMs: 200 },
        { metric: 'loss', bound: 0.01 },
      ],
    });
    expect(parseSlo('p95<40ms').clauses[0]).toMatchObject({ metric: 'p95', boundMs: 40 });
  });

  const report = (goodput: number, p99: number, instances = 1, completed = 100, arrived = 100): SimulationReport =>
    ({
      goodput_rps: goodput,
      latency_ms: { p50: p99 / 2, p90: p99, p99, p999: p99, max: p99, mean: p99 / 2 },
      config: { instances },
      requests: { completed, arrived },
    }) as unknown as SimulationReport;

  it('marks the frontier of goodput against p99', () => {
    const rows = [
      report(100, 50),
      report(200, 80),
      report(200, 60),
      report(150, 100),
      report(99.8, 20),
      report(300, 500),
    ];
    // #0 is beaten by #4 (same goodput within 0.5 %, lower p99); #1 by #2; #3 by #2.
    expect(paretoFrontier(rows)).toEqual([2, 4, 5]);
  });

  it('picks the best under the objective: most goodput, then fewest instances, then lowest p99', () => {
    const slo = parseSlo('p99<70ms');
    const rows = [
      report(200, 65, 2),
      report(199.5, 69, 1),
      report(200, 40, 2),
      report(100, 10, 1),
      report(300, 90, 1),
      report(400, 10, 1, 50, 100),
    ];
    expect(chooseUnderSlo(rows, slo).best).toBe(1);
    expect(chooseUnderSlo(rows, slo).meeting).toEqual([0, 1, 2, 3]);
    expect(chooseUnderSlo(rows, parseSlo('p99<5ms')).best).toBeUndefined();
  });
});

describe('simulate --help and profile --help stay light', () => {
  it('the command module reaches onnxruntime, fastify and ink only through dynamic imports', () => {
    const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');
    const seen = new Set<string>();
    const heavy: string[] = [];
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      // Static imports only: `import ... from '...'` and `export ... from '...'`, not `import('...')`.
      for (const match of source.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
        const spec = match[1] as string;
        if (/^(onnxruntime|fastify|ink|react|undici)/.test(spec)) heavy.push(`${file} -> ${spec}`);
        if (spec.startsWith('.')) visit(join(dirname(file), spec.replace(/\.js$/, '.ts')));
      }
    };
    visit(join(root, 'src/commands/simulate.ts'));
    visit(join(root, 'src/commands/profile.ts'));
    expect(heavy).toEqual([]);
  });
});

describe('report percentiles', () => {
  it.each([
    { rate: 10, requests: 200, arrival: 'constant' },
    { rate: 100, requests: 2000 },
    { rate: 300, requests: 3000, latency: '4+1n' },
  ])('never exceed the exact maximum (%j)', (overrides) => {
    const { report } = simulate(overrides);
    for (const summary of [report.latency_ms, report.queue_wait_ms]) {
      for (const key of ['p50', 'p90', 'p95', 'p99', 'p999'] as const)
        expect(summary[key]).toBeLessThanOrEqual(summary.max);
    }
  });
});
