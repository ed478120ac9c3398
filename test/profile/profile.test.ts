import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../../src/options/schema.js';
import { PROFILE_OPTIONS } from '../../src/options/profile.js';
import { fitAffine } from '../../src/profile/fit.js';
import { readLatencyProfile } from '../../src/profile/latency-profile.js';
import { LATENESS_QUANTILES } from '../../src/profile/timer-lateness.js';
import type { LoadedTimers } from '../../src/profile/loaded-timers.js';
import { parseBatchSizes, profileMain } from '../../src/commands/profile-main.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { simulateMain } from '../../src/commands/simulate-main.js';
import { simulateOptions } from '../simulate/helpers.js';
import { tempDir } from '../temp-dir.js';
import { tableRow } from '../reliability/table.js';
import { buildProgram } from '../../src/cli.js';
import { BatchlineError } from '../../src/errors.js';

const dir = tempDir('batchline-profile-');

/** Timers on time, answers free: what the tests that do not measure serve give profile instead of 13 s of measuring. */
const onTime = async (): Promise<LoadedTimers> => {
  const exact = { samples: 1, mean_ms: 0, quantiles_ms: LATENESS_QUANTILES.map(() => 0) };
  return { lateness: { window: { ...exact, delay_ms: 10 }, completion: { ...exact, delay_ms: 20 } }, answers: exact };
};

function sink() {
  return {
    text: '',
    write(chunk: string) {
      this.text += chunk;
    },
  };
}

/** A model whose batches take exactly 3 + 0.5·n ms on a fake stopwatch. */
function fakeModel(msOf: (n: number) => number = (n) => 3 + 0.5 * n) {
  let nowMs = 0;
  const calls: number[] = [];
  return {
    now: () => nowMs,
    calls,
    load: async () => ({
      version: 'fake-v1',
      inputs: [{ name: 'x', type: 'float32' as const, itemShape: [4] }],
      runBatch: async (items: readonly ItemTensors[]) => {
        calls.push(items.length);
        expect(items[0]!.x!.data).toHaveLength(4);
        nowMs += msOf(items.length);
        return [...items];
      },
      close: async () => {},
    }),
  };
}

describe('batchline profile', () => {
  it('fits a + b·n exactly to affine timings', () => {
    expect(fitAffine([1, 2, 4, 8].map((n) => ({ n, ms: 2 + 0.25 * n })))).toEqual({ aMs: 2, bMs: 0.25, r2: 1 });
  });

  it('prints a falling fit with a minus sign', async () => {
    // A model faster per batch at larger sizes printed 'fit (medians): 5.0000 + -0.5000·n ms'.
    const fake = fakeModel((n) => 5 - 0.5 * n);
    const options = resolveOptions(PROFILE_OPTIONS, { batchSizes: '1,2,4', warmup: '0', repetitions: '1' }, {});
    const stdout = sink();
    await profileMain({ options, stdout, loadModel: fake.load, now: fake.now, measureTimers: onTime });
    expect(stdout.text).toContain('fit (medians): 5.0000 − 0.5000·n ms');
  });

  it('says a fit of one batch size has no cost per item, where it printed r² 1.000', async () => {
    const fake = fakeModel((n) => 2 + n);
    const options = resolveOptions(PROFILE_OPTIONS, { batchSizes: '4', warmup: '0', repetitions: '1' }, {});
    const stdout = sink();
    await profileMain({ options, stdout, loadModel: fake.load, now: fake.now, measureTimers: onTime });
    expect(stdout.text).toMatch(
      /^fit: one batch size measured, so no cost per item: simulate would time every larger batch as this one; give several, such as --batch-sizes 1,2,4,8,16,32$/m,
    );
    expect(stdout.text).not.toContain('r²');
  });

  it('warms up, interleaves sizes, and writes a profile that simulate reads', async () => {
    const fake = fakeModel();
    const out = join(dir, 'profile.json');
    const options = resolveOptions(PROFILE_OPTIONS, { batchSizes: '8,1,2,4', warmup: '2', repetitions: '5', out }, {});
    const stdout = sink();
    const profile = await profileMain({ options, stdout, loadModel: fake.load, now: fake.now, measureTimers: onTime });
    expect(fake.calls).toEqual(Array.from({ length: 7 }, () => [1, 2, 4, 8]).flat());
    expect(profile.points.map((p) => [p.batch_size, p.p50_ms, p.mean_ms, p.cv])).toEqual([
      [1, 3.5, 3.5, 0],
      [2, 4, 4, 0],
      [4, 5, 5, 0],
      [8, 7, 7, 0],
    ]);
    expect(profile.fit).toEqual({ a_ms: 3, b_ms: 0.5, r2: 1 });
    expect(stdout.text).toContain('fit (medians): 3.0000 + 0.5000·n ms');
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual(profile);

    // profile → simulate --latency-profile: saturation throughput follows the profile (16 → 3 + 0.5·16 = 11 ms).
    const report = sink();
    await simulateMain({
      options: simulateOptions({
        latencyProfile: out,
        maxBatchSize: 16,
        rate: 5000,
        requests: 50_000,
        maxQueueSize: 1_000_000,
        requestTimeoutMs: 1e8,
        json: '-',
      }),
      given: new Set(['latencyProfile', 'rate', 'requests']),
      sweep: undefined,
      stdout: report,
    });
    const parsed = JSON.parse(report.text);
    expect(parsed.config.service_time).toContain('profile');
    expect(parsed.throughput_rps / ((16 * 1000) / 11)).toBeCloseTo(1, 2);
  });

  it('rejects bad batch sizes with the flag named', () => {
    expect(parseBatchSizes('16, 1,2,2')).toEqual([1, 2, 16]);
    expect(() => parseBatchSizes('1,0')).toThrow(/--batch-sizes: got '1,0'/);
    expect(() => parseBatchSizes('a')).toThrow(/--batch-sizes/);
  });

  it('profiles the embedded ONNX model', async () => {
    const options = resolveOptions(
      PROFILE_OPTIONS,
      { batchSizes: '1,4', warmup: '1', repetitions: '3', json: '-' },
      {},
    );
    const stdout = sink();
    const profile = await profileMain({ options, stdout });
    expect(profile.model).toBe('toy-logistic-v1');
    expect(profile.points.map((p) => p.batch_size)).toEqual([1, 4]);
    for (const p of profile.points) expect(p.p50_ms).toBeGreaterThan(0);
    // serve's timers and answers, measured on a real serve under HTTP load (#15): late or on
    // time, never early; a batch's answers take time before the next batch starts. How many
    // samples there are is how many batches fell in the recorded part of fixed wall-clock phases,
    // which a stopped host shrinks without limit; what the code decides is that each kind was
    // measured (an empty kind reads as 0 samples and zero quantiles, which the rest would pass).
    const measured = [profile.timer_lateness!.window, profile.timer_lateness!.completion, profile.answer_turnaround!];
    for (const stats of measured) {
      expect(stats.samples).toBeGreaterThan(0);
      expect(stats.quantiles_ms[0]).toBeGreaterThanOrEqual(0);
      expect(stats.quantiles_ms).toEqual([...stats.quantiles_ms].sort((a, b) => a - b));
    }
    expect(profile.answer_turnaround!.mean_ms).toBeGreaterThan(0);
    expect(JSON.parse(stdout.text)).toEqual(profile);
  });

  it('measures free item dimensions at the sizes --item-shape gives, and says so', async () => {
    const shapes: number[][] = [];
    const load = async () => ({
      version: 'image-v1',
      inputs: [
        { name: 'image', type: 'float32' as const, itemShape: [3, 'h', 'w'] },
        { name: 'scale', type: 'float32' as const, itemShape: [1] },
      ],
      runBatch: async (items: readonly ItemTensors[]) => {
        shapes.push(items[0]!.image!.shape);
        expect(items[0]!.image!.data).toHaveLength(items[0]!.image!.shape.reduce((a, b) => a * b, 1));
        return [...items];
      },
      close: async () => {},
    });
    const run = (itemShape?: string) => {
      const options = resolveOptions(
        PROFILE_OPTIONS,
        { batchSizes: '1', warmup: '0', repetitions: '1', ...(itemShape === undefined ? {} : { itemShape }) },
        {},
      );
      const stdout = sink();
      return profileMain({ options, stdout, loadModel: load, measureTimers: onTime }).then((profile) => ({
        profile,
        text: stdout.text,
      }));
    };
    const given = await run('image=3x48x192');
    expect(shapes.at(-1)).toEqual([3, 48, 192]);
    expect(given.profile.item_shapes).toEqual({ image: [3, 48, 192] });
    expect(given.text).toContain('item shapes: image [3, 48, 192] (--item-shape)');
    const defaulted = await run();
    expect(shapes.at(-1)).toEqual([3, 1, 1]);
    expect(defaulted.profile.item_shapes).toEqual({ image: [3, 1, 1] });
    expect(defaulted.text).toContain('item shapes: image [3, 1, 1]: free dimensions of image measured at size 1');

    const cases: [string, string][] = [
      ['photo=3x4x4', "no input 'photo'"],
      ['image=48x192', 'takes 3 item dimensions, got 2'],
      ['image=1x48x192', 'dimension 0 is fixed at 3, got 1'],
      ['image=3x0x5', 'dimension 1 must be at least 1'],
      ['image=3x4.5x4', 'is not name=AxBxC'],
      // Held at once as random values: these grew profile past 8 GB, or died in a RangeError.
      ['image=3x10000x10000', 'an item of 300000001 values is more than 16777216 (64 MiB of float32'],
      ['image=3x100000x100000', 'an item of 30000000001 values is more than 16777216'],
    ];
    for (const [text, why] of cases) {
      await expect(run(text)).rejects.toThrow(
        new RegExp(
          `^invalid option --item-shape: .*${why.replace(/[.()]/g, '\\$&')}.*; inputs: image\\[3, h, w\\], scale\\[1\\]`,
        ),
      );
    }
  });

  it('profiles a model of JSON items on the item of --body, and without one says to give it', async () => {
    // The quickstart's kind of model: profile used to die in 'unexpected error: Error: the item holds no JSON value'.
    const file = join(dir, 'words.mjs');
    writeFileSync(
      file,
      `export const inputSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
export function execute(items) { return items.map(({ text }) => ({ words: text.split(' ').length, batch: items.length })); }
`,
    );
    const run = (body?: string) =>
      profileMain({
        options: resolveOptions(
          PROFILE_OPTIONS,
          {
            model: file,
            batchSizes: '1,4',
            warmup: '0',
            repetitions: '2',
            serveDuration: '0',
            ...(body === undefined ? {} : { body }),
          },
          {},
        ),
        stdout: sink(),
        measureTimers: onTime,
      });
    await expect(run()).rejects.toThrow(
      /^invalid option --body: .*words\.mjs takes JSON items \(its inputSchema\), which profile cannot make up: give one request's body/,
    );
    await expect(run('{"inputs": {"text": 5}}')).rejects.toThrow(
      /^invalid option --body: .*inputs\.text must be string/,
    );
    const profile = await run('{"inputs": {"text": "two words"}}');
    expect(profile.points.map((point) => point.batch_size)).toEqual([1, 4]);
    expect(profile.serving_path?.decode_ms).toBeGreaterThan(0);
    // Read as serve reads it, and said as for an ONNX model's --body: it was JSON.parse's own words.
    await expect(run('{bad')).rejects.toThrow(
      /^invalid option --body: serve would refuse this request: request body is not valid JSON/,
    );
    await expect(run('{"inputs": {"text": "a", "__proto__": {}}}')).rejects.toThrow(
      /^invalid option --body: serve would refuse this request: .*__proto__/,
    );
  });

  // It ended on 'batchline: request body is not valid JSON …' with exit 1, naming no option.
  it('names --body (exit 2) when the body it times serve on is not JSON or does not fit the model', async () => {
    const run = (body: string) =>
      profileMain({
        options: resolveOptions(
          PROFILE_OPTIONS,
          { batchSizes: '1', warmup: '0', repetitions: '1', serveDuration: '0', body },
          {},
        ),
        stdout: sink(),
        measureTimers: onTime,
      });
    for (const [body, why] of [
      ['{bad', /^invalid option --body: serve would refuse this request: request body is not valid JSON/],
      ['{"inputs": [1, 2]}', /^invalid option --body: .*features/],
    ] as const) {
      const thrown = await run(body).catch((error: unknown) => error);
      expect(thrown, body).toBeInstanceOf(BatchlineError);
      expect((thrown as BatchlineError).message, body).toMatch(why);
      expect((thrown as BatchlineError).exitCode, body).toBe(2);
    }
  });

  // It ended on 'could not load model: …: ENOENT' with exit 1, naming no option, where serve exits 2.
  it('names --model (exit 2) when it is no file, as serve does', async () => {
    for (const [model, why] of [
      ['/nonexistent/model.onnx', /^invalid option --model: cannot read \/nonexistent\/model\.onnx \(ENOENT\)/],
      [dir, /^invalid option --model: .* is not a file/],
    ] as const) {
      const thrown = await profileMain({
        options: resolveOptions(PROFILE_OPTIONS, { model, batchSizes: '1', serveDuration: '0' }, {}),
        stdout: sink(),
        measureTimers: onTime,
      }).catch((error: unknown) => error);
      expect(thrown, model).toBeInstanceOf(BatchlineError);
      expect((thrown as BatchlineError).message, model).toMatch(why);
      expect((thrown as BatchlineError).exitCode, model).toBe(2);
    }
  });

  it("says which item of which batch the model refused and why, and times a code model on --body's item", async () => {
    // A model that checks its inputs refuses some of profile's random values (from -1 to 1):
    // profile used to end in 'unexpected error: ItemFailure: negative x' and a stack trace.
    const file = join(dir, 'positive.mjs');
    writeFileSync(
      file,
      `export const inputs = [{ name: 'x', datatype: 'FP32', shape: [-1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [-1] }];
export function execute(items) {
  if (items.some(({ x }) => x[1] === 13)) throw new Error('thirteen');
  return items.map(({ x }) => (x[0] < 0 ? new Error('negative x') : { y: x }));
}
`,
    );
    const stdout = sink();
    const run = (flags: Record<string, string> = {}) =>
      profileMain({
        options: resolveOptions(
          PROFILE_OPTIONS,
          { model: file, batchSizes: '1,4', warmup: '0', repetitions: '2', serveDuration: '0', ...flags },
          {},
        ),
        stdout,
        measureTimers: onTime,
      });
    const refused = await run().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BatchlineError);
    expect((refused as BatchlineError).code).toBe('MODEL_FAILURE');
    expect((refused as Error).message).toMatch(
      /^model execution failed: item \d of a batch of \d of random values \(--seed 1\): negative x; .*--body/,
    );
    const thrown = await run({ body: '{"inputs": {"x": [1, 13]}}' }).catch((error: unknown) => error);
    expect((thrown as BatchlineError).code).toBe('MODEL_FAILURE');
    expect((thrown as Error).message).toMatch(/^model execution failed: a batch of 1 of --body's item: thirteen/);
    await expect(run({ body: '{"inputs": {"x": [1, 2]}}', itemShape: 'x=2' })).rejects.toThrow(
      /^invalid option --item-shape: .*--body/,
    );
    const profile = await run({ body: '{"inputs": {"x": [0.5, 2, 3]}}' });
    expect(profile.points.map((point) => point.batch_size)).toEqual([1, 4]);
    expect(profile.item_shapes).toEqual({ x: [3] });
    expect(stdout.text).toContain('item shapes: x [3] (--body)');
  });

  it('gives a named free dimension one size in every input that shares it', async () => {
    const seen: number[][][] = [];
    const load = async () => ({
      version: 'text-v1',
      inputs: [
        { name: 'ids', type: 'int32' as const, itemShape: ['seq'] },
        { name: 'mask', type: 'int32' as const, itemShape: ['seq'] },
        { name: 'extra', type: 'float32' as const, itemShape: ['n'] },
      ],
      runBatch: async (items: readonly ItemTensors[]) => {
        seen.push([items[0]!.ids!.shape, items[0]!.mask!.shape, items[0]!.extra!.shape]);
        return [...items];
      },
      close: async () => {},
    });
    const options = resolveOptions(
      PROFILE_OPTIONS,
      { batchSizes: '1', warmup: '0', repetitions: '1', itemShape: 'ids=64' },
      {},
    );
    const stdout = sink();
    const profile = await profileMain({ options, stdout, loadModel: load, measureTimers: onTime });
    expect(seen.at(-1)).toEqual([[64], [64], [1]]);
    expect(profile.item_shapes).toEqual({ ids: [64], mask: [64], extra: [1] });
    // Only `extra` fell back to 1, and the table says so rather than crediting --item-shape.
    expect(stdout.text).toContain('free dimensions of extra measured at size 1');
    const conflicting = resolveOptions(
      PROFILE_OPTIONS,
      { batchSizes: '1', warmup: '0', repetitions: '1', itemShape: 'ids=64,mask=32' },
      {},
    );
    await expect(
      profileMain({ options: conflicting, stdout: sink(), loadModel: load, measureTimers: onTime }),
    ).rejects.toThrow(/--item-shape: free dimension 'seq' is 64 in 'ids' and 32 in 'mask'/);
  });

  it('measures the whole serving path: reading, checking, hand-over, run, encoding, and the cores', async () => {
    let nowMs = 0;
    const base = {
      version: 'path-v1',
      inputs: [{ name: 'x', type: 'float32' as const, itemShape: [2] }],
      outputs: [{ name: 'y', type: 'float32' as const, itemShape: [1] }],
      decode: (inputs: unknown) => {
        nowMs += 0.2;
        expect(inputs).toBeDefined();
        return { x: { data: new Float32Array([1, 2]), shape: [2] } };
      },
      replyBody: () => {
        nowMs += 0.01;
        return '{}';
      },
      close: async () => {},
    };
    // On its worker a batch of n takes 3 + 0.5·n ms; on this thread, its run alone 2.9 + 0.5·n.
    const load = async (_path: string | undefined, _threads: number, execution?: 'inline') => ({
      ...base,
      runBatch: async (items: readonly ItemTensors[]) => {
        nowMs += (execution === 'inline' ? 2.9 : 3) + 0.5 * items.length;
        return items.map(() => ({ y: { data: new Float32Array([0.5]), shape: [1] } }));
      },
    });
    const options = resolveOptions(
      PROFILE_OPTIONS,
      { model: 'path.onnx', batchSizes: '1,2,4', warmup: '1', repetitions: '5', body: '{"inputs":[0.5,1.5]}' },
      {},
    );
    const stdout = sink();
    const profile = await profileMain({ options, stdout, loadModel: load, now: () => nowMs, measureTimers: onTime });
    expect(profile.serving_path).toMatchObject({
      execution: 'worker',
      wire: 'json',
      body_bytes: 20,
      decode_ms: 0,
      check_ms: 0.2,
      encode_ms: 0.01,
      run_fit: { a_ms: 2.9, b_ms: 0.5 },
      handover_fit: { a_ms: 0.1, b_ms: 0 },
      cores: availableParallelism(),
    });
    expect(stdout.text).toContain(
      'main thread, per request: read JSON 0.0000 ms (20 bytes) · check 0.2000 ms · encode the answer 0.0100 ms',
    );
    expect(stdout.text).toContain(
      'worker thread, per batch: run 2.9000 + 0.5000·n ms · hand-over and back 0.1000 + 0.0000·n ms',
    );
  });

  it('refuses --out and --json into a directory that is not there before loading and measuring', async () => {
    let loaded = 0;
    const run = (flags: Record<string, string>) =>
      profileMain({
        options: resolveOptions(PROFILE_OPTIONS, { warmup: '0', repetitions: '1', serveDuration: '0', ...flags }, {}),
        stdout: sink(),
        loadModel: async () => {
          loaded++;
          throw new Error('the model was loaded');
        },
        measureTimers: onTime,
      });
    await expect(run({ out: '/nonexistent/p.json' })).rejects.toThrow(
      "--out: cannot write '/nonexistent/p.json': no directory /nonexistent",
    );
    await expect(run({ json: '/nonexistent/p.json' })).rejects.toThrow("--json: cannot write '/nonexistent/p.json'");
    expect(loaded).toBe(0);
  });

  it('refuses a batch too large to hold and a --body file larger than any route takes (#12)', async () => {
    const load = async () => ({
      version: 'image-v1',
      inputs: [{ name: 'image', type: 'float32' as const, itemShape: [3, 'h', 'w'] }],
      outputs: [{ name: 'y', type: 'float32' as const, itemShape: [1] }],
      decode: () => ({ image: { data: new Float32Array(3), shape: [3, 1, 1] } }),
      replyBody: () => '{}',
      runBatch: async (items: readonly ItemTensors[]) => [...items],
      close: async () => {},
    });
    const run = (flags: Record<string, string>) =>
      profileMain({
        options: resolveOptions(PROFILE_OPTIONS, { warmup: '0', repetitions: '1', serveDuration: '0', ...flags }, {}),
        stdout: sink(),
        loadModel: load,
        measureTimers: onTime,
      });
    await expect(run({ batchSizes: '1,32', itemShape: 'image=3x2048x2048' })).rejects.toThrow(
      /^invalid option --item-shape: a batch of 32 items of 12582912 values is more than 268435456 \(1 GiB of float32\): lower --batch-sizes or the shape/,
    );
    await expect(run({ model: 'm.onnx', batchSizes: '1', body: '@/dev/zero' })).rejects.toThrow(
      /^invalid option --body: @\/dev\/zero is larger than 67108864 bytes/,
    );
    tableRow(
      '#12 profile --item-shape x=3x10000x10000 / 3x100000x100000, a batch of 32 × 3x2048x2048, --body @/dev/zero',
      'refused at once (exit 2), saying why',
      'items over 2^24 values, batches over 2^28, bodies over 64 MiB refused before anything is allocated',
    );
  });

  it('reads a profile only from a regular file: a FIFO is refused at once, not waited on (#9)', async () => {
    const fifo = join(dir, 'profile.fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(readLatencyProfile(fifo)).rejects.toThrow(
      `invalid option --latency-profile: cannot read '${fifo}' (not a regular file)`,
    );
    await expect(readLatencyProfile(dir)).rejects.toThrow('(not a regular file)');
  });

  it('refuses a hand-edited profile naming the field, where it crashed, hung or printed Infinity', async () => {
    // A real profile (a model file's, over its serving path), then one field changed at a time.
    const record = JSON.parse(readFileSync('docs/lab/fidelity/2026-12-03T19-43Z-cls-b16.json', 'utf8'));
    const base = JSON.stringify(record.profile);
    const tried = async (edit: (p: any) => void, text?: (json: string) => string) => {
      const profile = JSON.parse(base);
      edit(profile);
      const file = join(dir, 'edited.json');
      writeFileSync(file, (text ?? ((json) => json))(JSON.stringify(profile)));
      return readLatencyProfile(file).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
    };
    expect(await tried(() => {})).toBe('accepted');
    const refusals = [
      // JSON's 1e999 is Infinity: reports said "over Infinity min simulated", "utilization NaN%".
      [
        await tried(
          () => {},
          (j) => j.replace(/"p50_ms":[0-9.]+/, '"p50_ms":1e999'),
        ),
        /point .*p50_ms .*from 0 to 600000/,
      ],
      [await tried((p) => (p.points[0].p50_ms = 1e12)), /p50_ms .*from 0 to 600000/],
      [await tried((p) => p.points.push({ ...p.points[1] })), /two points of batch_size 2/],
      [await tried((p) => (p.fit.b_ms = 1e300)), /fit .*b_ms/],
      [
        await tried(
          () => {},
          (j) => j.replace(/"decode_ms":[0-9.]+/, '"decode_ms":1e999'),
        ),
        /serving_path .*decode_ms/,
      ],
      // The next three were a TypeError's stack trace, or a hang at 100 % CPU.
      [await tried((p) => delete p.serving_path.run_fit), /serving_path\.run_fit/],
      [await tried((p) => delete p.serving_path.serve_cpu.worker_ms), /serving_path\.serve_cpu without .*worker_ms/],
      [await tried((p) => (p.serving_path.serve_cpu.mean_batch = 'x')), /serving_path\.serve_cpu without .*mean_batch/],
      [await tried((p) => (p.serving_path.serve_cpu.main_ms = -1)), /serving_path\.serve_cpu without .*main_ms/],
      [await tried((p) => (p.serving_path.run_points = [{ batch_size: 1 }])), /serving_path\.run_points/],
    ] as const;
    for (const [message, expected] of refusals) {
      expect(message).toMatch(/^invalid option --latency-profile: '.*edited.json' /);
      expect(message).toMatch(expected);
      expect(message).toMatch(/expected a file written by batchline profile --out$/);
    }
  });

  it('names --body when serve would refuse its request, before measuring, where it said only "invalid inputs"', async () => {
    const program = buildProgram();
    program.exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
    const args = ['--serve-duration', '0', '--repetitions', '1', '--warmup', '0', '--batch-sizes', '1'];
    await expect(program.parseAsync(['node', 'batchline', 'profile', ...args, '--body', '{"foo":1}'])).rejects.toThrow(
      /^invalid option --body: serve would refuse this request: .*"inputs"/,
    );
  });

  it('refuses --serve-duration without --model, which it would have ignored', async () => {
    const program = buildProgram();
    program.exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
    await expect(program.parseAsync(['node', 'batchline', 'profile', '--serve-duration', '20s'])).rejects.toThrow(
      /^invalid option --serve-duration: applies with --model \(a model file, which a real serve answers over HTTP to measure\)/,
    );
  });

  it('simulate refuses a file that is not a profile, naming the flag', async () => {
    const bad = join(dir, 'not-a-profile.json');
    await import('node:fs/promises').then((fs) => fs.writeFile(bad, '{"points":[]}'));
    await expect(
      simulateMain({
        options: simulateOptions({ latencyProfile: bad }),
        given: new Set(['latencyProfile']),
        sweep: undefined,
        stdout: sink(),
      }),
    ).rejects.toThrow(/--latency-profile: '.*not-a-profile.json' has format/);
  });
});
