import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../src/errors.js';
import { SERVE_OPTIONS } from '../src/options/serve.js';
import { parseDurationMs, resolveOptions } from '../src/options/schema.js';
import { buildProgram } from '../src/cli.js';

describe('option resolution', () => {
  it('takes the original Batchline defaults', () => {
    const config = resolveOptions(SERVE_OPTIONS, {}, {});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      maxBatchSize: 8,
      batchWindowMs: 10,
      maxQueueSize: 128,
      requestTimeoutMs: 2000,
      modelLatencyMs: { aMs: 20, bMs: 0 },
      instances: 1,
      model: undefined,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('takes plain decimal numbers, signs and spaces around them included', () => {
    expect(resolveOptions(SERVE_OPTIONS, { batchWindowMs: ' 2.5 ', port: '+8081' }, {})).toMatchObject({
      batchWindowMs: 2.5,
      port: 8081,
    });
    expect(resolveOptions(SERVE_OPTIONS, { batchWindowMs: '.5' }, {}).batchWindowMs).toBe(0.5);
  });

  it('prefers flags over env over defaults', () => {
    expect(resolveOptions(SERVE_OPTIONS, {}, { MAX_BATCH_SIZE: '16' }).maxBatchSize).toBe(16);
    expect(resolveOptions(SERVE_OPTIONS, { maxBatchSize: '4' }, { MAX_BATCH_SIZE: '16' }).maxBatchSize).toBe(4);
  });

  it.each([
    [{ maxBatchSize: '2.5' }, '--max-batch-size', 'an integer from 1 to 4096'],
    [{ batchWindowMs: 'soon' }, '--batch-window-ms', 'a number from 0 to 60000'],
    [{ logRequests: 'maybe' }, '--log-requests', 'true or false (or 1/0, yes/no, on/off)'],
    // Number() would read these as 80, 10, 3 and 16.
    [{ port: '0x50' }, '--port', 'an integer from 0 to 65535'],
    [{ maxBatchSize: '1e1' }, '--max-batch-size', 'an integer from 1 to 4096'],
    [{ maxQueueSize: '0b11' }, '--max-queue-size', 'an integer from'],
    [{ batchWindowMs: '0x10' }, '--batch-window-ms', 'a number from 0 to 60000'],
  ])('rejects %j naming the flag and the allowed values', (raw, flag, allowed) => {
    try {
      resolveOptions(SERVE_OPTIONS, raw, {});
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(BatchlineError);
      expect((error as BatchlineError).code).toBe('INVALID_OPTION');
      expect((error as Error).message).toContain(flag);
      expect((error as Error).message).toContain(allowed);
    }
  });

  it('parses durations: a bare number is seconds (as wrk -d 10), units combine (1m30s)', () => {
    expect(parseDurationMs('250ms')).toBe(250);
    expect(parseDurationMs('10s')).toBe(10_000);
    expect(parseDurationMs('2m')).toBe(120_000);
    expect(parseDurationMs('15')).toBe(15_000);
    expect(parseDurationMs('1.5')).toBe(1500);
    expect(parseDurationMs('1m30s')).toBe(90_000);
    expect(parseDurationMs('1h2m3.5s')).toBe(3_723_500);
    expect(parseDurationMs('2s500ms')).toBe(2500);
    expect(parseDurationMs('15', 'ms')).toBe(15);
    for (const bad of ['ten', '1m30', '', 's', '1x', '-1s', '1s 2']) expect(parseDurationMs(bad), bad).toBeUndefined();
  });

  it('reads bench and simulate durations given as bare numbers as seconds', async () => {
    const { BENCH_OPTIONS } = await import('../src/options/bench.js');
    const { SIMULATE_OPTIONS } = await import('../src/options/simulate.js');
    expect(resolveOptions(BENCH_OPTIONS, { duration: '10', warmup: '1m30s', timeout: '2' }, {})).toMatchObject({
      duration: 10_000,
      warmup: 90_000,
      timeout: 2000,
    });
    expect(resolveOptions(SIMULATE_OPTIONS, { duration: '60' }, {}).duration).toBe(60_000);
  });

  it("reads bench's counts as wrk writes them (-R 2k, -c 1k, -n 1.5M), and only bench's", async () => {
    const { BENCH_OPTIONS } = await import('../src/options/bench.js');
    expect(resolveOptions(BENCH_OPTIONS, { rate: '2.5k', connections: '1K', requests: '1.5M' }, {})).toMatchObject({
      rate: 2500,
      connections: 1000,
      requests: 1_500_000,
    });
    expect(resolveOptions(BENCH_OPTIONS, {}, { BENCH_RATE: '2k' }).rate).toBe(2000);
    expect(() => resolveOptions(BENCH_OPTIONS, { connections: '20k' }, {})).toThrow(
      /--connections: got '20k', expected an integer from 1 to 10000 \(2k = 2000/,
    );
    expect(() => resolveOptions(BENCH_OPTIONS, { connections: '1.2345k' }, {})).toThrow(/--connections/);
    expect(() => resolveOptions(SERVE_OPTIONS, { port: '8k' }, {})).toThrow(/--port: got '8k'/);
  });
});

describe('the README option table', () => {
  it('lists every serve option with its env variable, default and description', async () => {
    const { readFileSync } = await import('node:fs');
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const table = readme.slice(
      readme.indexOf('<!-- serve-options:start -->'),
      readme.indexOf('<!-- serve-options:end -->'),
    );
    const rows = table.split('\n').filter((line) => line.startsWith('| `--'));
    expect(rows).toHaveLength(Object.keys(SERVE_OPTIONS).length);
    for (const spec of Object.values(SERVE_OPTIONS)) {
      const row = rows.find((line) => line.startsWith(`| \`--${spec.flag}\` |`));
      expect(row, `--${spec.flag} is missing from the README`).toBeDefined();
      expect(row).toContain(`\`${spec.env}\``);
      expect(row).toContain(
        spec.default === undefined || spec.default === '' ? '| — |' : `\`${String(spec.default)}\``,
      );
      expect(row).toContain(spec.description);
      if (spec.kind === 'int' || spec.kind === 'number') expect(row).toContain(`${spec.min}–${spec.max}`);
    }
  });
});

describe('--model-latency-ms', () => {
  it('takes a number of ms or a + b·n ms, and refuses anything else naming the flag', () => {
    expect(resolveOptions(SERVE_OPTIONS, { modelLatencyMs: '5+2n' }, {}).modelLatencyMs).toEqual({ aMs: 5, bMs: 2 });
    expect(resolveOptions(SERVE_OPTIONS, {}, { MODEL_LATENCY_MS: '0' }).modelLatencyMs).toEqual({ aMs: 0, bMs: 0 });
    expect(resolveOptions(SERVE_OPTIONS, { modelLatencyMs: '2.5 + 0.5*n ms' }, {}).modelLatencyMs).toEqual({
      aMs: 2.5,
      bMs: 0.5,
    });
    for (const bad of ['5+2m', '-3', '5+2n+1n', '1e9', '5+', '+5', '5++2n']) {
      expect(() => resolveOptions(SERVE_OPTIONS, { modelLatencyMs: bad }, {})).toThrow(
        /--model-latency-ms: got .* growing with the batch size n/,
      );
    }
  });
});

describe('--help of an option on by default', () => {
  it('says that --no-<flag>, the one flag it lists, turns off what the description says the option does', () => {
    // `--no-pipeline  an instance … takes its next full batch while it runs one`: the line under
    // the flag that turns the mailbox off described the mailbox as what it does.
    const program = buildProgram();
    const help = (command: string, flag: string): string =>
      program.commands.find((c) => c.name() === command)!.options.find((o) => o.long === flag)!.description;
    expect(help('simulate', '--no-pipeline')).toMatch(/^turns off what is on by default: an instance on a thread/);
    expect(help('serve', '--no-pipeline')).toMatch(/^turns off what is on by default: /);
    expect(help('serve', '--no-hold-retries')).toMatch(/^turns off what is on by default: a connection that sends/);
    // An option described from its --no- side keeps its text.
    expect(help('bench', '--no-ui')).toMatch(/^a plain progress line instead of the live dashboard/);
  });
});

describe("bench's and watch's way to a server behind a gateway", () => {
  it('is one definition: -H and --insecure read the same in both helps', () => {
    const program = buildProgram();
    const option = (command: string, flag: string) => {
      const found = program.commands.find((c) => c.name() === command)!.options.find((o) => o.long === flag)!;
      return { flags: found.flags, description: found.description, defaultValue: found.defaultValue };
    };
    for (const flag of ['--header', '--insecure']) expect(option('watch', flag)).toEqual(option('bench', flag));
  });
});
