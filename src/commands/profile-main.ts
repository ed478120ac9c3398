import { type FileHandle, open, writeFile } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';
import { invalidOptionValue } from '../options/invalid-option-value.js';
import { checkOutputPath } from './output-path.js';
import { checkModelFile } from '../serve/startup.js';
import type { ProfileOptions } from '../options/profile.js';
import type { Output } from './simulate-main.js';
import type { LatencyProfile, ServingPath } from '../profile/latency-profile.js';
import { fitAffine } from '../profile/fit.js';
import { measureServeCpu } from '../profile/serve-cpu.js';
import {
  checkBodyServes,
  generatedJsonBody,
  measureMainThread,
  servingPathOf,
  type PathModel,
} from '../profile/serving-path.js';
import {
  measureBatches,
  resolveItemShapes,
  type ItemShapes,
  type ProfiledModel,
  type Stopwatch,
} from '../profile/measure.js';
import { formatProfile } from '../profile/profile-text.js';
import { JSON_TENSOR } from '../model/json-items.js';
import { isCodeModelPath } from '../model/code-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import type { LoadedTimers } from '../profile/loaded-timers.js';
import { measureServeTimers } from './profile-timers.js';
import { summarizeProfile } from '../profile/summarize.js';

/** The closed loop that measures a real serve's CPU per request (bench -c): recorded in the profile, where simulate calibrates on it. */
const SERVE_CONNECTIONS = 16;

/** Parses `--batch-sizes 1,2,4,8`: distinct positive integers, kept in ascending order. */
export function parseBatchSizes(text: string): number[] {
  const sizes = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
  if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 4096)) {
    invalidOptionValue('--batch-sizes', text, 'integers from 1 to 4096 separated by commas, e.g. 1,2,4,8,16');
  }
  return [...new Set(sizes)].sort((a, b) => a - b);
}

/** A loaded model; with serve's decode, reply and outputs, profile also measures the rest of the serving path. */
type LoadedForProfile = ProfiledModel & { version: string; close(): Promise<void> } & Partial<
    Pick<PathModel, 'decode' | 'replyBody' | 'outputs'>
  >;

export interface ProfileRequest {
  options: ProfileOptions;
  stdout: Output;
  /** Loads the model (as serve would, or inline on this thread); the CLI loads ONNX lazily, tests pass a stand-in. */
  loadModel?: (path: string | undefined, intraOpThreads: number, execution?: 'inline') => Promise<LoadedForProfile>;
  /** The clock runs are timed with (default `performance.now`). */
  now?: Stopwatch;
  /** How late serve's timers fire and how long its answers take (default: measured on a loaded serve, about 13 s). */
  measureTimers?: () => Promise<LoadedTimers>;
}

/** The body of `batchline profile`: measure, fit, print, and write the profile file. */
export async function profileMain(request: ProfileRequest): Promise<LatencyProfile> {
  const { options, stdout } = request;
  const sizes = parseBatchSizes(options.batchSizes);
  // Checked before the measuring, which takes seconds and was lost to a mistyped directory.
  await checkOutputPath(options.out, '--out');
  await checkOutputPath(options.json, '--json');
  // Exit 2 naming --model, as serve says it (it was exit 1, 'could not load model: …: ENOENT').
  // (A loader given in place of the real one, as tests give, takes names of no file.)
  if (options.model !== undefined && request.loadModel === undefined) await checkModelFile(options.model);
  const load: NonNullable<ProfileRequest['loadModel']> =
    request.loadModel ??
    (async (path, threads, execution) =>
      (await import('../model/load-model.js')).loadModel(path, { instances: 1, intraOpThreads: threads, execution }));
  const model = await load(options.model, options.intraOpThreads);
  const now = request.now ?? (() => performance.now());
  let profile: LatencyProfile;
  let itemShapes: ItemShapes;
  try {
    const given = await givenItem(model, options);
    if (options.body !== undefined && isPathModel(model)) checkBodyServes(model, await readBody(options.body));
    itemShapes =
      given === undefined || isJsonItem(model)
        ? resolveItemShapes(options.itemShape, model.inputs, Math.max(...sizes))
        : shapesOfGiven(given, model, options);
    const timings = await measureBatches(
      model,
      sizes,
      options.warmup,
      options.repetitions,
      options.seed,
      now,
      itemShapes.shapes,
      given,
      isCodeModelPath(options.model)
        ? "a code model that refuses made-up values is timed on one real request's item: --body '{\"inputs\": …}' or --body @request.json"
        : undefined,
    );
    const recorded = itemShapes.shapes.size === 0 ? undefined : Object.fromEntries(itemShapes.shapes);
    profile = summarizeProfile(model.version, timings, options.warmup, options.repetitions, recorded);
    const timers = await (request.measureTimers ?? measureServeTimers)();
    profile.timer_lateness = timers.lateness;
    profile.answer_turnaround = timers.answers;
    if (isPathModel(model)) {
      profile.serving_path = await measurePath(model, timings, {
        options,
        sizes,
        shapes: itemShapes.shapes,
        given,
        now,
        load,
        measureServe: request.loadModel === undefined,
      });
    }
  } finally {
    await model.close();
  }
  const json = `${JSON.stringify(profile, null, 2)}\n`;
  if (options.out !== undefined) await write(options.out, json, '--out');
  if (options.json === '-') stdout.write(json);
  else {
    if (options.json !== undefined) await write(options.json, json, '--json');
    stdout.write(formatProfile(profile, options.out, itemShapes.defaulted, itemShapes.from));
  }
  return profile;
}

function isPathModel(model: LoadedForProfile): model is LoadedForProfile & PathModel {
  return model.decode !== undefined && model.replyBody !== undefined && model.outputs !== undefined;
}

/**
 * The rest of the serving path, as serve runs it (`--execution auto`: a model file on a worker
 * thread, the embedded model inline): the main thread's steps per request, and for a worker,
 * the run alone on this thread, so the round trip splits into run and hand-over.
 */
async function measurePath(
  model: LoadedForProfile & PathModel,
  roundTrips: Awaited<ReturnType<typeof measureBatches>>,
  c: {
    options: ProfileOptions;
    sizes: number[];
    shapes: ReadonlyMap<string, readonly number[]>;
    given: ItemTensors | undefined;
    now: Stopwatch;
    load: NonNullable<ProfileRequest['loadModel']>;
    measureServe?: boolean;
  },
): Promise<ServingPath> {
  const { options } = c;
  const body =
    options.body === undefined ? generatedJsonBody(model, c.shapes, options.seed) : await readBody(options.body);
  const main = await measureMainThread(model, {
    body,
    warmup: options.warmup,
    repetitions: options.repetitions,
    now: c.now,
  });
  // As serve runs it by default (--execution auto).
  const { resolveExecution } = await import('../model/load-model.js');
  const execution = resolveExecution(options.model, 'auto') === 'inline' ? 'inline' : 'worker';
  let runs = roundTrips;
  if (execution !== 'inline') {
    const inline = await c.load(options.model, options.intraOpThreads, 'inline');
    try {
      runs = await measureBatches(
        inline,
        c.sizes,
        options.warmup,
        options.repetitions,
        options.seed,
        c.now,
        c.shapes,
        c.given,
      );
    } finally {
      await inline.close();
    }
  }
  const path = servingPathOf(execution, body, main, roundTrips, runs, (points) => fitAffine(points));
  if (execution !== 'inline' && options.model !== undefined && options.serveDuration > 0 && c.measureServe !== false) {
    const cpu = await measureServeCpu({
      modelPath: options.model,
      intraOpThreads: options.intraOpThreads,
      maxBatchSize: Math.max(...c.sizes),
      body,
      durationMs: options.serveDuration,
      connections: SERVE_CONNECTIONS,
    });
    if (cpu !== undefined) {
      const r = (ms: number): number => Math.round(ms * 1e6) / 1e6;
      const pausesOf = (pauses: typeof cpu.gcPauses) =>
        pauses.map((p) => ({ kind: p.kind, per_request: r(p.perRequest), mean_ms: r(p.meanMs) }));
      const open = cpu.openLoop;
      path.serve_cpu = {
        requests: cpu.requests,
        main_ms: r(cpu.mainMs),
        worker_ms: r(cpu.workerMs),
        helpers_ms: r(cpu.helpersMs),
        client_ms: r(cpu.clientMs),
        mean_batch: r(cpu.meanBatch),
        exec_ms: r(cpu.execMs),
        rate_rps: r(cpu.rateRps),
        connections: SERVE_CONNECTIONS,
        pipeline: true,
        gc_pauses: pausesOf(cpu.gcPauses),
        ...(open === undefined
          ? {}
          : {
              open_loop: {
                requests: open.requests,
                rate_rps: r(open.rateRps),
                main_ms: r(open.mainMs),
                worker_ms: r(open.workerMs),
                helpers_ms: r(open.helpersMs),
                client_ms: r(open.clientMs),
                mean_batch: r(open.meanBatch),
                gc_pauses: pausesOf(open.gcPauses),
              },
            }),
      };
    }
  }
  return path;
}

/**
 * The item of --body, for a model whose inputs profile cannot make up (a code model's JSON items,
 * string tensors), checked as serve checks a request's; undefined for the others, which are
 * measured on random values.
 */
async function givenItem(model: LoadedForProfile, options: ProfileOptions): Promise<ItemTensors | undefined> {
  // A code model may check its items as a client's are checked, and refuse random ones: --body's item is its own.
  const ownItem = options.body !== undefined && isCodeModelPath(options.model);
  if (!ownItem && !model.inputs.some((spec) => spec.type === 'string')) return undefined;
  const json = isJsonItem(model);
  const what = `${options.model ?? 'the model'} takes ${json ? 'JSON items (its inputSchema)' : 'string inputs'}`;
  if (options.body === undefined || model.decode === undefined)
    throw new BatchlineError(
      'INVALID_OPTION',
      `--body: ${what}, which profile cannot make up: give one request's body, such as --body '{"inputs": …}' or --body @request.json`,
    );
  return checkBodyServes({ decode: model.decode.bind(model) }, await readBody(options.body));
}

function isJsonItem(model: LoadedForProfile): boolean {
  return model.inputs.length === 1 && model.inputs[0]?.name === JSON_TENSOR;
}

/** The item shapes of --body's item, which a tensor code model is measured on: --item-shape would contradict them. */
function shapesOfGiven(given: ItemTensors, model: LoadedForProfile, options: ProfileOptions): ItemShapes {
  if (options.itemShape !== undefined)
    throw new BatchlineError(
      'INVALID_OPTION',
      `--item-shape: ${options.model} is measured on the item of --body, whose shapes are its own; give one or the other`,
    );
  const shapes = new Map<string, number[]>();
  for (const spec of model.inputs)
    if (spec.itemShape.some((dim) => typeof dim === 'string')) shapes.set(spec.name, [...given[spec.name]!.shape]);
  return { shapes, defaulted: [], from: '--body' };
}

/** The most of a --body file read: a body larger than any batchline route takes (64 MiB) is refused. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** --body inline, or @file read to at most MAX_BODY_BYTES (`@/dev/zero` grew profile past 8 GB). */
async function readBody(text: string): Promise<Uint8Array> {
  if (!text.startsWith('@')) return Buffer.from(text);
  let file: FileHandle | undefined;
  try {
    file = await open(text.slice(1), 'r');
    const chunks: Buffer[] = [];
    let length = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(1024 * 1024);
      const { bytesRead } = await file.read(chunk, 0, chunk.length);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      length += bytesRead;
      if (length > MAX_BODY_BYTES)
        throw new BatchlineError(
          'INVALID_OPTION',
          `--body: ${text} is larger than ${MAX_BODY_BYTES} bytes (64 MiB, the most a batchline route takes)`,
        );
    }
    return Buffer.concat(chunks, length);
  } catch (error) {
    if (error instanceof BatchlineError) throw error;
    throw new BatchlineError('INVALID_OPTION', `--body: cannot read ${text}: ${(error as Error).message}`);
  } finally {
    await file?.close();
  }
}

async function write(path: string, text: string, flag: string): Promise<void> {
  try {
    await writeFile(path, text);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `${flag}: cannot write '${path}': ${(error as Error).message}`);
  }
}
