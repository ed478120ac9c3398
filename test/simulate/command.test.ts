import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram, exitCodeFor } from '../../src/cli.js';
import { type BatchlineError, ExitWithCode } from '../../src/errors.js';
import { simulateMain } from '../../src/commands/simulate-main.js';
import { simulateOptions } from './helpers.js';
import { runBatchline, succeeded } from '../batchline-cli.js';
import { tempDir } from '../temp-dir.js';
import { tableRow } from '../reliability/table.js';

function sink(): { text: string; write(chunk: string): void } {
  return {
    text: '',
    write(chunk: string) {
      this.text += chunk;
    },
  };
}

async function run(overrides: Record<string, unknown>, sweep?: string[]): Promise<string> {
  const out = sink();
  await simulateMain({
    options: simulateOptions(overrides),
    given: new Set(Object.keys(overrides)),
    sweep,
    stdout: out,
    workers: 1,
  });
  return out.text;
}

async function exitCodeOf(args: string[]): Promise<{ code: number; stderr: string }> {
  const err = sink();
  const program = buildProgram();
  program.configureOutput({ writeErr: (s) => err.write(s), writeOut: () => {} });
  try {
    await program.parseAsync(['node', 'batchline', ...args]);
    return { code: 0, stderr: err.text };
  } catch (error) {
    return { code: exitCodeFor(error, err as unknown as NodeJS.WritableStream), stderr: err.text };
  }
}

const dir = tempDir('batchline-simulate-');

describe('batchline simulate', () => {
  it('keeps stdout for the JSON alone with --json -: the events go to stderr (they went nowhere)', async () => {
    const out = sink();
    const err = sink();
    await simulateMain({
      options: simulateOptions({ rate: 100, requests: 5, events: true, json: '-' }),
      given: new Set(['rate', 'requests', 'events', 'json']),
      sweep: undefined,
      stdout: out,
      stderr: err,
      workers: 1,
    });
    expect(JSON.parse(out.text)).toMatchObject({ requests: { arrived: 5 } });
    expect(err.text).toMatch(/batch started +#0 on instance 0/);
  });

  it('prints a report with the seed, counts, rates, percentiles, batch sizes and utilization', async () => {
    const text = await run({ rate: 300, requests: 20_000 });
    for (const part of [
      'seed 1',
      'arrived 20000',
      'throughput',
      'goodput',
      'p99.9',
      'latency ms',
      'queue ms',
      'mean size',
      'instance 0',
    ]) {
      expect(text).toContain(part);
    }
  });

  it('is byte-identical for the same seed and options, and differs for another seed', async () => {
    const options = { rate: 400, requests: 5000, arrival: 'bursty', latencyCv: 0.2, seed: 42 };
    const a = await run({ ...options, json: '-' });
    const b = await run({ ...options, json: '-' });
    expect(a).toBe(b);
    expect(await run({ ...options, json: '-', seed: 43 })).not.toBe(a);
    expect(await run(options)).toBe(await run(options));
  });

  it('--json carries the documented fields', async () => {
    const report = JSON.parse(await run({ rate: 300, requests: 2000, json: '-' }));
    expect(Object.keys(report.requests)).toEqual(
      expect.arrayContaining(['arrived', 'admitted', 'rejected', 'completed', 'expired']),
    );
    for (const key of ['latency_ms', 'queue_wait_ms'])
      expect(Object.keys(report[key])).toEqual(['p50', 'p90', 'p95', 'p99', 'p999', 'max', 'mean']);
    expect(report).toMatchObject({ seed: 1, batch_size: { mean: expect.any(Number), histogram: expect.any(Object) } });
    expect(report.throughput_rps).toBeGreaterThan(0);
    expect(report.goodput_rps).toBeGreaterThan(0);
    expect(report.utilization).toHaveLength(1);
  });

  it('--trace writes one JSON line per request with its fate', async () => {
    const path = join(dir, 'trace.jsonl');
    await run({ rate: 300, requests: 300, maxQueueSize: 4, requestTimeoutMs: 35, trace: path });
    const lines = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(300);
    expect(lines.map((l) => l.id)).toEqual([...Array(300).keys()]);
    expect(new Set(lines.map((l) => l.outcome))).toEqual(new Set(['ok', 'rejected', 'expired']));
    expect(Object.keys(lines.find((l) => l.outcome === 'ok'))).toEqual([
      'id',
      'arrival_ms',
      'outcome',
      'batch',
      'start_ms',
      'end_ms',
    ]);
    expect(lines.find((l) => l.outcome === 'rejected')).toMatchObject({
      reason: 'queue_full',
      batch: null,
      start_ms: null,
    });
  });

  it('--events prints admissions, batch starts, completions, rejections and expiries in order', async () => {
    const text = await run({
      rate: 1000,
      requests: 12,
      maxQueueSize: 2,
      maxBatchSize: 2,
      requestTimeoutMs: 30,
      events: true,
    });
    const timeline = text.slice(0, text.indexOf('batchline simulate'));
    for (const word of ['admitted', 'batch started', 'completed', 'rejected', 'batch finished'])
      expect(timeline).toContain(word);
    const times = timeline
      .trim()
      .split('\n')
      .map((line) => Number.parseFloat(line));
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('replays --arrivals from a file, including its own trace', async () => {
    const path = join(dir, 'arrivals.txt');
    writeFileSync(path, '# ms\n0\n1.5\n1.5\n30\n');
    const report = JSON.parse(await run({ arrivals: path, json: '-', batchWindowMs: 5 }));
    expect(report.requests.arrived).toBe(4);
    expect(report.batch_size.histogram).toEqual({ '1': 1, '3': 1 });
    const tracePath = join(dir, 'replay.jsonl');
    await run({ rate: 500, requests: 1000, trace: tracePath });
    const original = JSON.parse(await run({ rate: 500, requests: 1000, json: '-' }));
    const replayed = JSON.parse(await run({ arrivals: tracePath, json: '-' }));
    expect(replayed.latency_ms).toEqual(original.latency_ms);
  });

  it('takes --rate with a metric suffix, as bench does (2k = 2000)', async () => {
    const { code, stderr } = await exitCodeOf([
      'simulate',
      '--rate',
      '2k',
      '--requests',
      '100',
      '--json',
      join(dir, 'k.json'),
    ]);
    expect([code, stderr]).toEqual([0, '']);
    expect(JSON.parse(readFileSync(join(dir, 'k.json'), 'utf8')).config.arrivals).toBe(
      'poisson at 2000 req/s, 100 requests',
    );
  });

  it('--slo says met or missed, and a miss exits 1', async () => {
    expect(await run({ rate: 100, requests: 2000, slo: 'p99<100ms' })).toContain('met');
    await expect(run({ rate: 100, requests: 2000, slo: 'p99<5ms' })).rejects.toBeInstanceOf(ExitWithCode);
    // Its --json says so too, as a sweep's rows do: only the exit code did.
    expect(JSON.parse(await run({ rate: 100, requests: 2000, slo: 'p99<100ms', json: '-' }))).toMatchObject({
      slo: 'p99<100ms & loss≤0.1%',
      meets_slo: true,
    });
  });

  it('a sweep prints the grid, the Pareto frontier and the best configuration under the SLO', async () => {
    const text = await run({ rate: 600, latency: '4+1n', requests: 20_000, slo: 'p99<50ms' }, [
      'max-batch-size=1,8,16',
      'batch-window-ms=0,5',
    ]);
    expect(text).toContain('Pareto frontier');
    expect(text).toMatch(/recommendation: #\d+ {2}--max-batch-size (8|16) --batch-window-ms (0|5)/);
    expect(text.match(/<- best/g)).toHaveLength(1);
    const csv = await run({ rate: 600, latency: '4+1n', requests: 5000, csv: '-' }, ['max-batch-size=1,8']);
    expect(csv.split('\n')[0]).toMatch(/^index,max-batch-size,goodput_rps,/);
    expect(csv.trim().split('\n')).toHaveLength(3);
  });

  it("a sweep's JSON numbers its rows as the table and the CSV do, from 1", async () => {
    // The JSON's rows ran from index 0 and its "best": 1 was the table's #2 and the CSV's index 2.
    const options = { rate: 600, latency: '4+1n', requests: 5000, slo: 'p99<50ms' };
    const sweep = ['max-batch-size=1,8,16'];
    const best = /^ *(\d+) .*<- best$/m.exec(await run(options, sweep))?.[1];
    const pareto = /Pareto frontier.*: (.*)$/m.exec(await run(options, sweep))?.[1];
    const csv = (await run({ ...options, csv: '-' }, sweep)).trim().split('\n').slice(1);
    const json = JSON.parse(await run({ ...options, json: '-' }, sweep));
    expect(best).toBeDefined();
    expect(json.best_row).toBe(Number(best));
    expect(json.pareto_rows.map((n: number) => `#${n}`).join(' ')).toBe(pareto);
    expect(json.rows.map((row: { row: number }) => row.row)).toEqual(csv.map((line) => Number(line.split(',')[0])));
    expect(json.rows.map((row: { row: number }) => row.row)).toEqual([1, 2, 3]);
    expect(json.rows[json.best_row - 1].config['max-batch-size']).toBe(Number(csv[json.best_row - 1]?.split(',')[1]));
    // A renamed field, so a script reading the old 0-based ones fails instead of picking the row after.
    expect(json).not.toHaveProperty('best');
    expect(json.rows[0]).not.toHaveProperty('index');
  });

  it("a sweep over the rate gives each row's arrivals, not the first row's as every row's", async () => {
    // The header read `arrivals  poisson at 200 req/s` above rows at 200, 300 and 400 req/s, all "on the same arrivals".
    const text = await run({ latency: '4+1n', requests: 2000 }, ['rate=200,300,400', 'max-batch-size=8,16']);
    const header = text.slice(0, text.indexOf('\n\n'));
    expect(header).toContain('each on arrivals of the same seed');
    expect(header).toMatch(/^arrivals {2}poisson at 200 req\/s, 2000 requests {2}\(#1 #2\)$/m);
    expect(header).toMatch(/^ {10}poisson at 300 req\/s, 2000 requests {2}\(#3 #4\)$/m);
    expect(header).toMatch(/^ {10}poisson at 400 req\/s, 2000 requests {2}\(#5 #6\)$/m);
    expect(header).toMatch(/^service {3}affine 4 \+ 1·n ms$/m);
    const sameRate = await run({ rate: 300, requests: 2000 }, ['latency-ms=5,40']);
    expect(sameRate).toContain('each on the same arrivals');
    expect(sameRate).toMatch(/^arrivals {2}poisson at 300 req\/s, 2000 requests$/m);
    expect(sameRate).toMatch(/^service {3}fixed 5 ms per batch {2}\(#1\)$/m);
  });

  it("a sweep under an objective on another percentile shows that percentile, so a row's verdict can be read", async () => {
    // scaling.md's sweep under 'p95<50ms' showed p50 and p99 only: #2 'ok' at p99 54.46 ms, #3 '-' at 60.83.
    const text = await run({ modelLatencyMs: '20', requests: 20_000, slo: 'p95<50ms' }, ['rate=300,320,340,360']);
    expect(text).toMatch(/^# +rate +goodput\/s +thru\/s +p50 ms +p95 ms +p99 ms +batch/m);
    const p95 = text
      .split('\n')
      .filter((line) => /^\d /.test(line))
      .map((line) => [Number(line.split(/\s+/)[5]), line.trimEnd().endsWith('-') ? '-' : 'ok']);
    expect(p95).toHaveLength(4);
    for (const [ms, verdict] of p95) expect(verdict).toBe((ms as number) < 50 ? 'ok' : '-');
    expect(text).toMatch(/^ {2}p95 \d+\.\d\d ms · p99 /m);
  });

  it("says whose time Little's law multiplies: the batcher's, from admission to answer", async () => {
    // Over a serving path the line read '× 14.624 ms (Little's law)' under a latency mean of 16.420 ms.
    const text = await run({ rate: 300, requests: 2000 });
    expect(text).toMatch(
      /^in system {3}mean [\d.]+ requests \(queued [\d.]+\) = [\d.]+ req\/s × [\d.]+ ms from admission to answer \(Little's law\)$/m,
    );
  });

  it('warns as serve does when the queue cannot hold a full batch, and gives the capacity the batches can reach', async () => {
    // 99.9 % refused at "offered load 4.9 % of" a capacity of full batches of 4096 that a queue of 128 never reaches.
    const text = await run({
      rate: 1_000_000,
      requests: 100_000,
      instances: 256,
      maxBatchSize: 4096,
      latency: '1+0.001n',
    });
    expect(text).toMatch(
      /^warning {5}--max-queue-size \(128\) is below --max-batch-size \(4096\): at most 128 wait, so no batch reaches 4096, and each batch waits out --batch-window-ms \(10 ms\)/m,
    );
    const capacity = Number(/^capacity {4}([\d.]+) req\/s/m.exec(text)?.[1]);
    const goodput = Number(/goodput ([\d.]+) req\/s/.exec(text)?.[1]);
    expect(capacity).toBe(12_800); // one batch of 128 a window of 10 ms
    expect(goodput).toBeLessThanOrEqual(capacity);
    expect(goodput).toBeGreaterThan(capacity * 0.9);
    expect(JSON.parse(await run({ maxQueueSize: 4, requests: 100, json: '-' })).warnings).toEqual([
      expect.stringMatching(/^--max-queue-size \(4\) is below --max-batch-size \(8\)/),
    ]);
    expect(JSON.parse(await run({ requests: 100, json: '-' })).warnings).toEqual([]);
    expect(await run({ requests: 500 }, ['max-queue-size=4,6,128'])).toMatch(
      /^warning #1: --max-queue-size \(4\) is below[^\n]*\nwarning #2: --max-queue-size \(6\) is below/m,
    );
  });

  it('warns when a lone request waits out the window past its deadline, as serve does', async () => {
    // Every request expired, and nothing said why.
    const text = await run({ requestTimeoutMs: 5, batchWindowMs: 10, requests: 200 });
    expect(text).toMatch(
      /^warning {5}--request-timeout-ms \(5 ms\) is not longer than --batch-window-ms \(10 ms\): a request that comes alone waits out the window and misses its deadline/m,
    );
  });

  it("warns of a target latency given to the fixed policy, as serve does, in serve's order", async () => {
    // simulate called two of serve's three checks itself, and ran such a target without a word.
    const text = await run({ targetLatencyMs: 30, requests: 200 });
    expect(text).toMatch(
      /^warning {5}--target-latency-ms \(30 ms\) is read by --batch-policy adaptive and aimd only, and --batch-policy is fixed \(the default\): batches take --max-batch-size and --batch-window-ms as given/m,
    );
    expect(
      JSON.parse(await run({ targetLatencyMs: 30, batchPolicy: 'aimd', requests: 200, json: '-' })).warnings,
    ).toEqual([]);
    const all = JSON.parse(
      await run({
        targetLatencyMs: 30,
        maxQueueSize: 4,
        requestTimeoutMs: 5,
        batchWindowMs: 10,
        requests: 100,
        json: '-',
      }),
    ).warnings;
    expect(all).toEqual([
      expect.stringMatching(/^--max-queue-size \(4\) is below/),
      expect.stringMatching(/^--request-timeout-ms \(5 ms\) is not longer than/),
      expect.stringMatching(/^--target-latency-ms \(30 ms\) is read by/),
    ]);
  });

  it('counts the answers within a target given to the fixed policy, in the text as in --json, and its warning says so', async () => {
    // --json's on_time_rps counted within the target under fixed (the oracle of docs/policies.md
    // reads it), while the text left the line out and the warning called the target unread.
    const overrides = { targetLatencyMs: 30, latency: '5+2n', rate: 200, requests: 2000 };
    const text = await run(overrides);
    const json = JSON.parse(await run({ ...overrides, json: '-' }));
    expect(json.config.batch_policy).toBe('fixed');
    const onTime = /^ {12}on time \(within 30 ms\) ([\d.]+) req\/s$/m.exec(text);
    expect(onTime?.[1]).toBe(json.on_time_rps.toFixed(1));
    // Read: a target the answers miss counts fewer of them on time.
    const tight = JSON.parse(await run({ ...overrides, targetLatencyMs: 10, json: '-' }));
    expect(tight.on_time_rps).toBeLessThan(json.on_time_rps);
    expect(json.warnings).toEqual([
      expect.stringMatching(
        /^--target-latency-ms \(30 ms\) is read by --batch-policy adaptive and aimd only, .*; simulate counts the answers within it all the same \(on time, on_time_rps\)$/,
      ),
    ]);
    // No target given, no target to count against: the line stays out under fixed.
    expect(await run({ latency: '5+2n', rate: 200, requests: 2000 })).not.toMatch(/on time/);
  });

  it('prints no latency for a run that answered nothing, where it printed 0.000 ms', async () => {
    const text = await run({ requestTimeoutMs: 5, batchWindowMs: 10, requests: 200 });
    expect(text).toMatch(/completed 0 · expired 200/);
    expect(text).toMatch(/^latency ms {6}( +-){7}$/m);
    expect(text).toMatch(/^queue ms {8}( +-){7}$/m);
    const sweep = await run({ requests: 500 }, ['request-timeout-ms=5,100']);
    expect(sweep).toMatch(/^1 +5 +0\.0 +0\.0 +- +- +/m);
    const csv = (await run({ requests: 500, csv: '-' }, ['request-timeout-ms=5,100'])).split('\n')[1];
    expect(csv).toMatch(/^1,5,0,0,[\d.]+,,,,,,,,/);
  });

  it('a sweep where nothing meets the SLO says so and exits 1', async () => {
    await expect(
      run({ rate: 600, latency: '4+1n', requests: 5000, slo: 'p99<1ms' }, ['max-batch-size=8,16']),
    ).rejects.toBeInstanceOf(ExitWithCode);
  });
});

describe('simulate --model-latency-ms, as serve spells it', () => {
  const latencies = (text: string): string =>
    text
      .split('\n')
      .filter((line) => /^(latency|queue) ms|^rates|^capacity/.test(line))
      .join('\n');

  it('is the service time per batch: a number, or A+Bn', async () => {
    expect(latencies(await run({ rate: 300, requests: 3000, modelLatencyMs: '20' }))).toBe(
      latencies(await run({ rate: 300, requests: 3000, latencyMs: 20 })),
    );
    expect(latencies(await run({ rate: 300, requests: 3000, modelLatencyMs: '5+2n' }))).toBe(
      latencies(await run({ rate: 300, requests: 3000, latency: '5+2n' })),
    );
  });

  it('is swept by its own name, as latency-ms is, and a latency-ms sweep beside it is refused', async () => {
    // `--sweep model-latency-ms=…` was refused; `--model-latency-ms 20 --sweep latency-ms=5,40` printed
    // two identical rows: the axis was dropped, every point ran 20 ms.
    const rows = (text: string): string[] => text.split('\n').filter((line) => /^\d+ /.test(line));
    const swept = await run({ rate: 300, requests: 3000 }, ['model-latency-ms=5,40']);
    expect(swept).toMatch(/^# +model-latency-ms /m);
    expect(rows(swept).map((line) => line.split(/\s+/).slice(2))).toEqual(
      rows(await run({ rate: 300, requests: 3000 }, ['latency-ms=5,40'])).map((line) => line.split(/\s+/).slice(2)),
    );
    const [fast, slow] = rows(swept).map((line) => line.split(/\s+/).slice(2));
    expect(fast).not.toEqual(slow);
    await expect(run({ rate: 300, requests: 3000, modelLatencyMs: '20' }, ['latency-ms=5,40'])).rejects.toThrow(
      /^invalid option --sweep: latency-ms cannot be swept with --model-latency-ms, which sets the service time itself; sweep model-latency-ms instead$/,
    );
    await expect(run({ rate: 300, requests: 3000, latencyMs: 20 }, ['model-latency-ms=5,40'])).rejects.toThrow(
      /--sweep: model-latency-ms cannot be swept with --latency-ms or --latency/,
    );
    await expect(run({ rate: 300, requests: 3000 }, ['model-latency-ms=5,x'])).rejects.toThrow(
      /--model-latency-ms: got 'x', expected a number from 0 to 600000/,
    );
  });

  it("is added to a measured profile, as serve adds it to the model's own time", async () => {
    const path = join(dir, 'profile-for-model-latency.json');
    writeFileSync(
      path,
      JSON.stringify({
        format: 'batchline-latency-profile/1',
        model: 'm',
        warmup: 1,
        repetitions: 1,
        points: [
          { batch_size: 1, p50_ms: 1, mean_ms: 1, p90_ms: 1, min_ms: 1, max_ms: 1, cv: 0 },
          { batch_size: 8, p50_ms: 8, mean_ms: 8, p90_ms: 8, min_ms: 8, max_ms: 8, cv: 0 },
        ],
        fit: { a_ms: 0, b_ms: 1, r2: 1 },
      }),
    );
    const text = await run({ rate: 300, requests: 3000, latencyProfile: path, modelLatencyMs: '20' });
    expect(latencies(text)).toBe(latencies(await run({ rate: 300, requests: 3000, latency: '20+1n' })));
    expect(text).toMatch(/service\s+profile .* \+ fixed 20 ms per batch \(--model-latency-ms\)/);
  });

  it('warns when batches can grow past every size the profile measured, and when it measured one size', async () => {
    // A profile of batch 1 alone timed a batch of 8 as one item: no word, and a capacity 8 times too high.
    const profileOf = (name: string, sizes: number[]): string => {
      const path = join(dir, name);
      const point = (n: number) => ({ batch_size: n, p50_ms: n, mean_ms: n, p90_ms: n, min_ms: n, max_ms: n, cv: 0 });
      writeFileSync(
        path,
        JSON.stringify({
          format: 'batchline-latency-profile/1',
          model: 'm',
          warmup: 1,
          repetitions: 1,
          points: sizes.map(point),
          fit: { a_ms: 0, b_ms: sizes.length > 1 ? 1 : 0, r2: 1 },
        }),
      );
      return path;
    };
    const one = await run({ rate: 300, requests: 500, latencyProfile: profileOf('one-size.json', [1]) });
    expect(one).toMatch(
      /^warning {5}the profile measured one batch size \(1\): batches of up to 8 are each timed as one of 1, with no cost per item; profile --batch-sizes up to 8$/m,
    );
    const small = await run({ rate: 300, requests: 500, latencyProfile: profileOf('up-to-4.json', [1, 4]) });
    expect(small).toMatch(
      /^warning {5}the profile measured batches of up to 4: batches of up to 8 are timed by its fit's slope \(1\.0000 ms an item\); profile --batch-sizes up to 8 to measure them$/m,
    );
    const covered = await run({ rate: 300, requests: 500, latencyProfile: profileOf('up-to-8.json', [1, 8]) });
    expect(covered).not.toMatch(/^warning/m);
  });

  it('reads a bare --duration as seconds', async () => {
    expect(await run({ rate: 100, duration: '2' })).toMatch(/arrived (1[89]\d|2[0-3]\d) /);
  });
});

describe('simulate option errors exit 2 and name the option', () => {
  // Replayed times JSON cannot hold (1e400 parses as Infinity), or past --duration's limit.
  writeFileSync(join(dir, 'infinite.json'), '[0, 1e400, 5]');
  writeFileSync(join(dir, 'far.txt'), '0\n1e20\n');
  // A profile of the model's time per batch only, as profile wrote before it measured the serving path.
  writeFileSync(
    join(dir, 'batch-only.json'),
    JSON.stringify({
      format: 'batchline-latency-profile/1',
      model: 'm',
      warmup: 1,
      repetitions: 1,
      points: [{ batch_size: 1, p50_ms: 1, mean_ms: 1, p90_ms: 1, min_ms: 1, max_ms: 1, cv: 0 }],
      fit: { a_ms: 0, b_ms: 1, r2: 1 },
    }),
  );
  const cases: [string[], RegExp][] = [
    // Both were ignored without a serving path: the report then listed CPU contention and the generator as taken as 0.
    [
      ['--cores', '3'],
      /--cores: applies to a --latency-profile that measured the serving path .*this run has no --latency-profile/,
    ],
    [
      ['--generator-cpu-ms', '0.3'],
      /--generator-cpu-ms: applies to a --latency-profile .*this run has no --latency-profile/,
    ],
    [
      ['--latency-profile', join(dir, 'batch-only.json'), '--cores', '1'],
      /--cores: applies to a --latency-profile that measured the serving path .*this profile has no serving_path/,
    ],
    [
      ['--rate', '10000000', '--duration', '1h'],
      /--duration: --rate 10000000 for --duration 3600 s is about 3\.60e\+10 requests; a run simulates at most 100000000/,
    ],
    // It named --duration, which was not given.
    [['--stages', '1h:1000000'], /--stages: --stages 1h:1000000 is about 1\.80e\+9 requests/],
    // A run of no arrivals printed a report of zeros and exited 0.
    [['--stages', '0s:100'], /--stages: the stages last 0 s in all, so nothing would be sent/],
    [
      ['--duration', '1ms', '--rate', '1'],
      /no request arrived in the run \(poisson at 1 req\/s, for 1 ms\): .*--duration/,
    ],
    // As a single run says it: the sweep printed a table of zeros and an empty Pareto frontier, exit 0.
    [
      ['--duration', '1ms', '--rate', '1', '--sweep', 'max-batch-size=1,2'],
      /--duration: no request arrived in the run \(poisson at 1 req\/s, for 1 ms\): .*lengthen --duration/,
    ],
    // Ignored without a word: the run was Poisson.
    [['--burst-factor', '2'], /--burst-factor: applies to --arrival bursty; this run's arrivals are poisson/],
    [
      ['--arrival', 'constant', '--burst-on-ms', '50'],
      /--burst-on-ms: applies to --arrival bursty; this run's arrivals are constant/,
    ],
    // Every event was held in memory first: 3 million requests took 2.9 GB, more ran out of heap.
    [
      ['--requests', '2000000', '--events'],
      /--events: about 2000000 requests are too many to list event by event \(at most 100000\)/,
    ],
    // Refused before the run by the events' limit (each request is one event at least), in the
    // words the run's end uses: 90,000 passed the check of 100,000, ran, and were refused at 5,000 events.
    [
      ['--requests', '90000', '--step'],
      /--step: about 90000 requests make at least as many events, too many to step through \(at most 5000 events\)/,
    ],
    // Every row was held until the run ended: 30 million requests took 4.2 GB resident, 100 million ran out of heap.
    [
      ['--requests', '20000000', '--trace', join(dir, 'big-trace.jsonl')],
      /--trace: about 20000000 requests are too many to trace \(at most 10000000, about 1\.4 GB of lines\)/,
    ],
    [
      ['--arrivals', join(dir, 'infinite.json')],
      /--arrivals: '.*infinite\.json item 1' is Infinity, not a finite number/,
    ],
    [
      ['--arrivals', join(dir, 'far.txt')],
      /--arrivals: '.*far\.txt' has an arrival time of 100000000000000000000 ms, past/,
    ],
    [['--max-batch-size', '0'], /--max-batch-size: got '0', expected an integer from 1 to 4096/],
    [['--arrival', 'weird'], /--arrival: got 'weird', expected one of constant, poisson, bursty/],
    [['--latency', 'fast'], /--latency: got 'fast', expected a \+ b·n/],
    [['--latency-ms', '5', '--latency', '1+1n'], /give one/],
    [['--model-latency-ms', '5', '--latency-ms', '5'], /give one/],
    [['--model-latency-ms', 'slow'], /--model-latency-ms: got 'slow', expected ms per batch such as 20 or 5\+2n/],
    [
      ['--duration', '1m30'],
      /--duration: got '1m30', expected a duration such as 500ms, 10s, 2m or 1m30s \(a bare number is seconds\)/,
    ],
    [['--rate', '5', '--stages', '1s:10'], /--rate, --stages and --arrivals/],
    [['--stages', '10s'], /--stages: stage '10s' is not duration:rate/],
    [['--stages', '10s:0'], /--stages: every stage has rate 0, so nothing would be sent/],
    [['--slo', 'p42<3'], /--slo: got 'p42<3'/],
    [['--sweep', 'colour=red'], /--sweep: got 'colour=red', expected option=v1,v2/],
    [['--sweep', 'max-batch-size=1,0'], /--max-batch-size: got '0'/],
    // The swept values ran and --rate 5 was dropped without a word.
    [
      ['--requests', '1000', '--rate', '5', '--sweep', 'rate=100,200'],
      /--sweep: rate is swept \(100,200\) and also given as --rate 5: .*give one or the other/,
    ],
    [
      ['--max-batch-size', '8', '--sweep', 'max-batch-size=1,4'],
      /--sweep: max-batch-size is swept \(1,4\) and also given as --max-batch-size 8/,
    ],
    [['--arrival', 'bursty', '--burst-factor', '9'], /--burst-factor: got '9', expected a number from 1 to 5/],
    [['--csv', '-'], /--csv: applies to --sweep only/],
    [['--arrivals', '/nonexistent/file'], /--arrivals: '\/nonexistent\/file' cannot be read/],
    // Checked before the run: the write failed after it, named no option, and lost the report.
    [['--json', '/nonexistent/r.json'], /--json: cannot write '\/nonexistent\/r\.json': no directory \/nonexistent/],
    [['--csv', '/nonexistent/r.csv', '--sweep', 'max-batch-size=1,2'], /--csv: cannot write '\/nonexistent\/r\.csv'/],
    // A directory passed, and the write failed after the run (EISDIR).
    [['--html', '/tmp'], /--html: '\/tmp' is a directory; give a file's path in it/],
  ];
  for (const [args, message] of cases) {
    it(args.join(' '), async () => {
      const { code, stderr } = await exitCodeOf(['simulate', ...args]);
      expect(code).toBe(2);
      expect(stderr).toMatch(message);
      if (args[0] === '--rate' || args[0] === '--stages' || args.includes('infinite.json') || args.includes('far.txt'))
        tableRow(
          `#12 simulate ${args.map((arg) => arg.replace(dir, '…')).join(' ')}`,
          'refused at once (exit 2), saying why',
          `exit ${code}: ${stderr.trim().replace(dir, '…').slice(0, 160)}`,
        );
    });
  }

  it('throws a BatchlineError INVALID_OPTION, not a bare error', async () => {
    await expect(run({ latency: 'nope' })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
    } satisfies Partial<BatchlineError>);
  });
});

describe('a sweep on worker threads', () => {
  it('prints exactly what the same sweep prints in one thread (built CLI; npm test builds first)', async () => {
    const args = ['--rate', '600', '--latency', '4+1n', '--requests', '60000', '--slo', 'p99<50ms'];
    const sweep = ['max-batch-size=1,8,16', 'batch-window-ms=0,5'];
    const threaded = succeeded(await runBatchline(['simulate', ...args, '--sweep', ...sweep])).stdout;
    const sequential = await run({ rate: 600, latency: '4+1n', requests: 60_000, slo: 'p99<50ms' }, sweep);
    expect(threaded).toBe(sequential);
  });
});
