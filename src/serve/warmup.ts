import { SeededRandom } from '../core/rng.js';
import { BatchlineError } from '../errors.js';
import { messageOf } from '../message-text.js';
import type { ServedModel } from '../model/load-model.js';
import { optionGivenAs } from '../options/given.js';
import { MODEL_VERSION_OPTIONS, type ModelVersionConfig } from '../options/serve.js';
import { REGISTRATION_BODY, type OptionSources } from './version-log.js';
import { allocate, type ElementArray, type ItemTensors, type TensorSpec } from '../model/tensor-spec.js';

/** What a version runs before it is ready (Triton's `model_warmup`). */
export interface WarmupPlan {
  /** One batch of each size, on every instance. */
  readonly batchSizes: readonly number[];
  /** Each size's batch runs this many times in a row (Triton's `count`; 1 when not given). */
  readonly count?: number | undefined;
  /** Zeros, or random values from a fixed seed (the same batches every start). */
  readonly data: 'zero' | 'random';
  /** The item shape of each input named (its free dimensions filled); an input not named has them as 1. */
  readonly dims?: WarmupDims | undefined;
  readonly instances: number;
  readonly maxBatchSize: number;
  /** A warmup batch running longer is stuck: the warmup fails (undefined: no limit). */
  readonly stuck?: WarmupStuckLimit | undefined;
}

/** The stuck limit of a warmup batch, and how it is made, for the message that says it ran past it. */
export interface WarmupStuckLimit {
  readonly afterMs: number;
  readonly why: string;
}

/**
 * The limit a serving batch has, for a warmup batch: --stuck-batch-factor times its longest
 * request's deadline, here the version's --request-timeout-ms (a warmup batch has no request).
 * Without it an instance whose warmup batch never returns held its version (or a PATCH, or a
 * restart) in `loading` for ever. Each factor is named as it was given (`sources`: the version's
 * config.json or registration), so the message points at the value to change.
 */
export function warmupStuckLimit(
  config: Pick<ModelVersionConfig, 'stuckBatchFactor' | 'requestTimeoutMs'>,
  sources?: OptionSources,
): WarmupStuckLimit {
  return {
    afterMs: config.stuckBatchFactor * config.requestTimeoutMs,
    why: `${namedValue(config, sources, 'stuckBatchFactor')} × ${namedValue(config, sources, 'requestTimeoutMs')}`,
  };
}

/**
 * An option with its value, named where it was written: `request_timeout_ms 250 in
 * …/config.json` (or the registration's body), else as the server's options were given
 * (`REQUEST_TIMEOUT_MS (--request-timeout-ms) 250`, serve()'s name), else its flag.
 */
function namedValue(
  config: Pick<ModelVersionConfig, 'stuckBatchFactor' | 'requestTimeoutMs'>,
  sources: OptionSources | undefined,
  key: 'stuckBatchFactor' | 'requestTimeoutMs',
): string {
  const written = sources?.[key];
  if (written !== undefined) return `${written.name} ${config[key]} in ${written.source}`;
  return `${optionGivenAs(config, key)?.name ?? `--${MODEL_VERSION_OPTIONS[key].flag}`} ${config[key]}`;
}

/** Item shapes by input name (`--warmup-dims`, config.json's `warmup_dims`). */
export type WarmupDims = Readonly<Record<string, readonly number[]>>;

/**
 * Why `dims` cannot shape warmup items of `inputs`, naming the input and the shape it allows
 * (`[3, -1, -1]`, -1 free), or undefined when each names an input, has its rank, and repeats its
 * fixed sizes: a warmup of another shape than requests bring warms the wrong plan, or fails.
 */
export function warmupDimsProblem(inputs: readonly TensorSpec[], dims: WarmupDims): string | undefined {
  for (const [name, shape] of Object.entries(dims)) {
    const spec = inputs.find((input) => input.name === name);
    if (spec === undefined)
      return `no input is named ${JSON.stringify(name)}; the model's inputs: ${inputs.map(shown).join(', ')}`;
    const fits =
      shape.length === spec.itemShape.length &&
      spec.itemShape.every((dim, k) => typeof dim !== 'number' || dim === shape[k]);
    if (!fits)
      return `${name}: got [${shape.join(', ')}], expected its item shape ${allowedShape(spec)} (-1: a size of your choice from 1)`;
  }
  return undefined;
}

/**
 * The refusal of a loaded version's warmup dims that do not fit its inputs, named where they
 * were written: a config.json's field or a registration's (INVALID_MODEL_CONFIG), else as the
 * server's options were given (INVALID_OPTION: the flag, `WARMUP_DIMS`). Only the load knows
 * the inputs, so it comes after the load, before any warmup batch runs.
 */
export function warmupDimsRefusal(
  inputs: readonly TensorSpec[],
  config: Pick<ModelVersionConfig, 'warmupDims'>,
  sources: OptionSources | undefined,
): BatchlineError | undefined {
  const problem = config.warmupDims === undefined ? undefined : warmupDimsProblem(inputs, config.warmupDims);
  if (problem === undefined) return undefined;
  const written = sources?.warmupDims;
  if (written === undefined)
    return new BatchlineError(
      'INVALID_OPTION',
      `${optionGivenAs(config, 'warmupDims')?.name ?? '--warmup-dims'}: ${problem}`,
    );
  const where = written.source === REGISTRATION_BODY ? 'request body' : written.source;
  return new BatchlineError('INVALID_MODEL_CONFIG', `${where}: ${written.name}: ${problem}`);
}

/** An input as a message shows it: `x [3, -1, -1]`. */
function shown(spec: TensorSpec): string {
  return `${spec.name} ${allowedShape(spec)}`;
}

function allowedShape(spec: TensorSpec): string {
  return `[${spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : -1)).join(', ')}]`;
}

/**
 * Runs the warmup batches on every instance of `model`, one after the other, and resolves with
 * the time it took (ms): onnxruntime's first runs of a size allocate and plan (tens of ms for an
 * image model), which the first requests would otherwise wait for. A symbolic dimension of an
 * input is 1 unless `plan.dims` gives the input's shape. Throws MODEL_LOAD_FAILED when a warmup batch fails: a model that cannot run zeros
 * or random values of its own shapes is not ready.
 */
export async function warmUp(model: ServedModel, plan: WarmupPlan, nowMs: () => number): Promise<number> {
  const startMs = nowMs();
  const too = plan.batchSizes.find((size) => size > plan.maxBatchSize);
  if (too !== undefined)
    throw new BatchlineError(
      'MODEL_LOAD_FAILED',
      `warmup batch size ${too} is larger than max_batch_size ${plan.maxBatchSize}`,
    );
  // Zeros or random values are items of tensors; a JSON model's items are values of its schema.
  if (model.inputSchema !== undefined)
    throw new BatchlineError(
      'MODEL_LOAD_FAILED',
      'warmup: this code model takes JSON values (an inputSchema), not tensors; warm it up in its initialize',
    );
  const random = new SeededRandom(1);
  for (let instance = 0; instance < plan.instances; instance++)
    await warmUpInstance(model.inputs, plan, instance, (items) => model.runBatch(items, instance), random);
  return nowMs() - startMs;
}

/**
 * Runs one batch of each of `plan.batchSizes` (each `plan.count` times) on instance `instance`
 * through `run`, one after the other: at start-up for each instance, and for an instance a PATCH adds before it takes batches.
 * Throws MODEL_LOAD_FAILED when a batch fails or its inputs cannot be made.
 */
export async function warmUpInstance(
  inputs: readonly TensorSpec[],
  plan: Pick<WarmupPlan, 'batchSizes' | 'count' | 'data' | 'dims' | 'stuck'>,
  instance: number,
  run: (items: ItemTensors[]) => Promise<(ItemTensors | Error)[]>,
  random: SeededRandom = new SeededRandom(1),
): Promise<void> {
  for (const size of plan.batchSizes.flatMap((size) => Array<number>(plan.count ?? 1).fill(size))) {
    // Fresh arrays each run: a run may move them to the instance's thread.
    let items: ItemTensors[];
    try {
      items = Array.from({ length: size }, () => itemOf(inputs, plan, random));
    } catch (error) {
      // Inputs of [65536, 65536, 65536]: a RangeError, which start-up called an unexpected error (exit 1, a stack) and the admin API 500 internal.
      throw new BatchlineError(
        'MODEL_LOAD_FAILED',
        `warmup batch of ${size}: its inputs (${inputs.map((spec) => `${spec.name} [${(plan.dims?.[spec.name] ?? spec.itemShape).join(', ')}]`).join(', ')}) cannot be made: ${messageOf(error)}`,
      );
    }
    let results: (ItemTensors | Error)[];
    try {
      results = await withinStuckLimit(run(items), plan.stuck, size, instance);
    } catch (error) {
      if (error instanceof WarmupStuck) throw error.refusal;
      throw warmupFailed(size, instance, error);
    }
    const failed = results.find((result) => result instanceof Error);
    if (failed !== undefined) throw warmupFailed(size, instance, failed);
  }
}

function itemOf(
  specs: readonly TensorSpec[],
  { data, dims }: Pick<WarmupPlan, 'data' | 'dims'>,
  random: SeededRandom,
): ItemTensors {
  const item: ItemTensors = {};
  for (const spec of specs) {
    const shape = dims?.[spec.name]?.slice() ?? spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : 1));
    const values = allocate(
      spec.type,
      shape.reduce((a, b) => a * b, 1),
    );
    if (data === 'random') fillRandom(values, random);
    item[spec.name] = { data: values, shape };
  }
  return item;
}

function fillRandom(values: ElementArray, random: SeededRandom): void {
  if (Array.isArray(values)) {
    for (let i = 0; i < values.length; i++) values[i] = random.next().toString(36).slice(2, 8);
    return;
  }
  const floats = values instanceof Float32Array || values instanceof Float64Array;
  for (let i = 0; i < values.length; i++) {
    const u = random.next();
    if (values instanceof BigInt64Array || values instanceof BigUint64Array) values[i] = BigInt(Math.floor(u * 100));
    else
      (values as Float32Array)[i] = floats ? u : values instanceof Uint8Array ? Math.floor(u * 2) : Math.floor(u * 100);
  }
}

/** A warmup batch past its stuck limit: its refusal as it is (not wrapped as a failed batch). */
class WarmupStuck extends Error {
  constructor(readonly refusal: BatchlineError) {
    super(refusal.message);
  }
}

/** The longest delay setTimeout takes (2^31 - 1 ms, 24.8 days); a longer one fires after 1 ms. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** `running`, or WarmupStuck once it has run `stuck.afterMs` without settling (its later end is ignored). */
function withinStuckLimit<T>(
  running: Promise<T>,
  stuck: WarmupStuckLimit | undefined,
  size: number,
  instance: number,
): Promise<T> {
  if (stuck === undefined || !Number.isFinite(stuck.afterMs)) return running;
  return new Promise<T>((resolve, reject) => {
    const stuckAtMs = performance.now() + stuck.afterMs;
    const expire = (): void => {
      // A limit past Node's longest timer (--stuck-batch-factor 3 × --request-timeout-ms 1e9) is
      // waited for in steps: one timer of it fired after 1 ms and called a warm model stuck.
      const leftMs = stuckAtMs - performance.now();
      if (leftMs > 0) {
        timer = setTimeout(expire, Math.min(leftMs, LONGEST_TIMER_MS));
        return;
      }
      running.catch(() => {}); // the instance is killed (or closed): its run's failure is no news
      reject(
        new WarmupStuck(
          new BatchlineError(
            'MODEL_LOAD_FAILED',
            `warmup batch of ${size} on instance ${instance} ran past ${Math.round(stuck.afterMs)} ms, the stuck limit a serving batch has (${stuck.why}): stuck`,
          ),
        ),
      );
    };
    let timer = setTimeout(expire, Math.min(stuck.afterMs, LONGEST_TIMER_MS));
    running.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

function warmupFailed(size: number, instance: number, error: unknown): BatchlineError {
  return new BatchlineError(
    'MODEL_LOAD_FAILED',
    `warmup batch of ${size} failed on instance ${instance}: ${messageOf(error)}`,
  );
}
