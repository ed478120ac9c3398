import { basename } from 'node:path';
import type { ExecutionProvider } from '../options/serve.js';
import { readClassLabels } from './class-labels.js';
import { CodeModel, isCodeModelPath } from './code-model.js';
import { rowCost, type RowCost } from './item-costs.js';
import { decodeInputs } from './decode-inputs.js';
import { checkExecutionProvider } from './execution-provider.js';
import { jsonTextOf } from './json-items.js';
import { jsonSchemaItems } from './json-schema-items.js';
import { inlineCodeLauncher, processLauncher, sharedThreadLauncher, threadLauncher } from './instance-launchers.js';
import type { ModelHealth } from './instance-health.js';
import type { InstanceListener, RunLimits } from './instance-handle.js';
import { InstancePool, type InstanceWarmup } from './instance-pool.js';
import { launchesFromLoadedFile } from './loaded-file-launcher.js';
import { fromFloat16Bits } from './float16.js';
import type { ElementType, ItemTensor, ItemTensors, TensorSpec } from './tensor-spec.js';
import { buildToyModelOnnx, TOY_MODEL_VERSION, TOY_OUTPUT_NAME, toyPrediction } from './toy-model.js';

/** A model ready to serve: validation of one item's JSON, batched execution, and the reply. */
export interface ServedModel {
  readonly version: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** Class labels by index, from the labels file beside the model file (class-labels.ts), for Triton's classification extension. */
  readonly labels?: readonly string[];
  /**
   * A code model whose items are JSON values: their JSON Schema. Its one input and output is a
   * string tensor holding the value's JSON text (json-items.ts); tensor protocols (/v2) refuse it.
   */
  readonly inputSchema?: object;
  /**
   * A code model that exports `itemCost`: a decoded row's cost (the batcher's limit counts costs
   * then); throws BAD_INPUT naming itemCost. Runs on the main thread, before the queue.
   */
  readonly itemCost?: RowCost;
  /** Its instances, and whether readiness and liveness hold (a snapshot, for probes and stats). */
  health(): ModelHealth;
  /** `health().ready`, cheap enough for every request: some instance can take a batch. */
  readonly ready: boolean;
  /** Validates and converts a request's `inputs`; throws BAD_INPUT. */
  decode(inputs: unknown): ItemTensors;
  /**
   * Runs a batch on model instance `instance` (its own thread or process), which the caller
   * knows to be up and idle (`watchInstances`). The items' buffers may be transferred to a
   * thread: callers must not reuse them. `limits` say when the batch is stuck.
   */
  runBatch(items: readonly ItemTensors[], instance: number, limits?: RunLimits): Promise<(ItemTensors | Error)[]>;
  /**
   * Tells `listener` why each instance that takes no batches now is out, then every instance that
   * goes down (crashed, could not restart), is stuck or comes back: the batcher's slots and the
   * log follow the same events. Absent when the model's one instance is always up (an inline
   * onnxruntime session).
   */
  watchInstances?(listener: InstanceListener): void;
  /**
   * Starts instances up to `count` after those there are (each on a thread or in a process, as
   * the others), each told `up` to `watchInstances` once loaded and `warm` has run on it; resolves with the messages of
   * those that could not start (they stay out of the rotation until retired). Absent when the
   * model's one instance is a session on the main thread.
   */
  growInstances?(count: number, warm?: InstanceWarmup): Promise<string[]>;
  /**
   * Has each instance restarted from now on (after a crash, or killed stuck) run `warm` before it
   * is told `up` again. Absent when the model's one instance is a session on the main thread.
   */
  warmRestarts?(warm: InstanceWarmup): void;
  /** Stops instance `index`, the last there is, once its batcher slot has been retired (it runs nothing). */
  retireInstance?(index: number): Promise<void>;
  /**
   * An inline onnxruntime session: `runBatch` may be called while a run is pending, and each run
   * waits for an immediate of its own, so runs started in one turn of the event loop run back to
   * back in its check phase (serve's --inline-mailbox).
   */
  readonly runsInImmediates?: true;
  /**
   * A code model's instances on the server's own thread: a run starts at once, so a batch handed
   * to a busy instance's mailbox (`--pipeline`) would run beside the one it waits for.
   */
  readonly runsOnMainThread?: true;
  /** The JSON reply for one item's outputs (`specs`: the model's outputs). */
  replyBody(requestId: string, outputs: ItemTensors, specs: readonly TensorSpec[]): string;
  close(): Promise<void>;
}

/**
 * Where batches run: `process` gives each instance a session in its own child process (a long
 * batch never blocks HTTP; instances run in parallel; a stuck or crashed instance is killed and
 * restarted, and a drain's deadline holds); `worker` on its own thread (inputs are moved, not
 * copied, but a thread inside onnxruntime cannot be stopped); `inline` runs one session on the
 * main thread, which saves two hand-offs per batch for models that take microseconds. `auto` is
 * inline for the embedded toy model and worker for a model file: processes cost the PaddleOCR
 * classifier a third of its throughput with one instance (bench:execution, docs/reliability.md).
 * A code model inline is a pool of instances on the main thread, each with its own copy of the
 * module (instance-launchers.ts). `shared` puts each instance's session on one of the process's
 * shared model threads (one a core, model-threads.ts) instead of a thread of its own: about 9 MB
 * less a model, for repositories of many models; a code model keeps a thread of its own there (its
 * module's state would be shared with the other instances of its file).
 */
export type Execution = 'auto' | 'inline' | 'worker' | 'shared' | 'process';

/** The health of an onnxruntime model that runs inline: one instance, up as long as the server is. */
const INLINE_HEALTH: ModelHealth = Object.freeze({
  instances: [
    Object.freeze({
      index: 0,
      state: 'up' as const,
      restarts: 0,
      consecutiveFailures: 0,
      lastError: undefined,
      busyForMs: undefined,
      pid: undefined,
    }),
  ],
  healthy: 1,
  ready: true,
  live: true,
  reason: undefined,
});

/** No limit: a batch is never stuck. */
const NO_LIMITS: RunLimits = { stuckAfterMs: Number.POSITIVE_INFINITY };

export interface LoadOptions {
  /** Model instances (default 1); with `worker` or `process` execution, each is a session on its own thread or process. */
  instances?: number;
  execution?: Execution;
  /** onnxruntime threads per run (0 = one per core; default 1). */
  intraOpThreads?: number;
  /** onnxruntime's execution provider (default the CPU's); refused before loading when it cannot run here. */
  executionProvider?: ExecutionProvider;
  /** The model's name in replies (`"model"`): a model file's replies carry it when given. */
  name?: string;
  /** The version label in replies (`"model_version"`); default the file name without .onnx. */
  version?: string;
  /** A code model's export that runs a batch (default `execute`). */
  functionName?: string;
  /** Its class labels file, which must be there (a config.json's `label_filename`); default `model.labels.txt` beside it, if there. */
  labelsPath?: string;
  /** The version's effective options, for a code model's `initialize`. */
  config?: Record<string, unknown>;
  /** Stops a load where it can be stopped (a process, a code model's thread or inline instance): a removal does not wait for it. */
  loadSignal?: AbortSignal;
}

/** Where `execution` runs a model's batches (`auto`: inline for the embedded model, a worker thread for a file). */
export function resolveExecution(
  path: string | undefined,
  execution: Execution | undefined,
): Exclude<Execution, 'auto'> {
  if (execution === undefined || execution === 'auto') return path === undefined ? 'inline' : 'worker';
  return execution === 'shared' && isCodeModelPath(path) ? 'worker' : execution;
}

/** Loads the ONNX model at `path`, or the embedded toy-logistic-v1 when there is none. */
export async function loadModel(path?: string, options: LoadOptions = {}): Promise<ServedModel> {
  const version =
    path === undefined ? TOY_MODEL_VERSION : (options.version ?? basename(path).replace(/\.(onnx|m?js)$/i, ''));
  const named = options.name === undefined ? {} : { model: options.name };
  const intraOpThreads = options.intraOpThreads ?? 1;
  const executionProvider = options.executionProvider ?? 'cpu';
  await checkExecutionProvider(executionProvider);
  const execution = resolveExecution(path, options.execution);
  // An ONNX model (the embedded one too) needs onnxruntime-node: imported here first, so that its
  // absence is runtime_not_installed at once, not every instance's load failing (on a thread, in a
  // process). Not with this module: a server of code models alone runs without it (--omit=optional).
  if (!isCodeModelPath(path)) await import('./onnx-model.js');
  const labelsFile = path === undefined ? undefined : await readClassLabels(path, options.labelsPath);
  const labels = labelsFile === undefined ? {} : { labels: labelsFile };
  const replyBody =
    path === undefined
      ? toyReplyBody
      : (requestId: string, outputs: ItemTensors, specs: readonly TensorSpec[]) =>
          JSON.stringify({
            request_id: requestId,
            outputs: nestedOutputs(outputs, specs),
            ...named,
            model_version: version,
          });
  const code = isCodeModelPath(path)
    ? {
        ...(options.functionName === undefined ? {} : { functionName: options.functionName }),
        ...(options.config === undefined ? {} : { config: options.config }),
      }
    : undefined;
  if (execution === 'inline' && code === undefined) {
    const { OnnxModel } = await import('./onnx-model.js');
    const onnx = await OnnxModel.load(path ?? buildToyModelOnnx(), version, { intraOpThreads, executionProvider });
    return {
      version,
      ...labels,
      health: () => INLINE_HEALTH,
      ready: true,
      inputs: onnx.inputs,
      outputs: onnx.outputs,
      decode: (inputs) => decodeInputs(inputs, onnx.inputs),
      runBatch: (items) => onnx.runBatch(items),
      runsInImmediates: true,
      replyBody,
      close: () => onnx.close(),
    };
  }
  const setup = { path, version, intraOpThreads, executionProvider, ...code };
  const pool = await InstancePool.start(
    launchesFromLoadedFile(
      code !== undefined && execution === 'inline'
        ? inlineCodeLauncher(setup)
        : execution === 'worker'
          ? threadLauncher(setup)
          : execution === 'shared'
            ? sharedThreadLauncher(setup)
            : processLauncher(setup),
      path,
    ),
    options.instances ?? 1,
    options.loadSignal === undefined ? {} : { loadSignal: options.loadSignal },
  );
  let decode: ServedModel['decode'];
  let itemCost: RowCost | undefined;
  try {
    decode = itemsOf(pool.inputSchema, pool.inputs, path as string);
    // The instances found an itemCost; a function cannot cross to this thread, so it imports its own.
    if (pool.itemCost) itemCost = rowCost(await CodeModel.itemCostOf(path as string), pool.inputSchema !== undefined);
  } catch (error) {
    await pool.close();
    throw error;
  }
  return {
    version,
    ...labels,
    health: () => pool.health(),
    get ready() {
      return pool.ready;
    },
    inputs: pool.inputs,
    outputs: pool.outputs,
    ...(pool.inputSchema === undefined ? {} : { inputSchema: pool.inputSchema }),
    ...(itemCost === undefined ? {} : { itemCost }),
    decode,
    runBatch: (items, instance, limits = NO_LIMITS) => pool.run(instance, items, limits),
    ...(code !== undefined && execution === 'inline' ? { runsOnMainThread: true as const } : {}),
    watchInstances: (listener) => pool.watch(listener),
    growInstances: (count, warm) => pool.grow(count, warm),
    warmRestarts: (warm) => pool.warmRestarts(warm),
    retireInstance: (index) => pool.retire(index),
    replyBody: pool.inputSchema === undefined ? replyBody : jsonReplyBody(named, version),
    close: () => pool.close(),
  };
}

/** How a request's `inputs` become an item: by the model's tensor specs, or its JSON Schema. */
function itemsOf(
  inputSchema: object | undefined,
  inputs: readonly TensorSpec[],
  path: string,
): (given: unknown) => ItemTensors {
  if (inputSchema === undefined) return (given) => decodeInputs(given, inputs);
  return jsonSchemaItems(inputSchema, path);
}

/** A JSON model's reply: its answer, a JSON value, as `outputs` (spliced in as the text it already is). */
function jsonReplyBody(
  named: { model?: string },
  version: string,
): (requestId: string, outputs: ItemTensors) => string {
  const tail = JSON.stringify({ ...named, model_version: version }).slice(1);
  return (requestId, outputs) => `{"request_id":${jsonString(requestId)},"outputs":${jsonTextOf(outputs)},${tail}`;
}

/**
 * The embedded model's reply, `{"request_id", "prediction": {"label", "score",
 * "model_version"}}` (a label a person reads, beside the score; `toyPrediction`: score to 6
 * decimals, label by threshold). Written as a template because it is the hot path of the
 * embedded model.
 */
function toyReplyBody(requestId: string, outputs: ItemTensors): string {
  const { label, score } = toyPrediction(Number((outputs[TOY_OUTPUT_NAME] as ItemTensor).data[0]));
  // A logit that overflows float32 saturates the sigmoid; NaN would take an Infinity minus an
  // Infinity, which one fused sum of finite products cannot make. Should it come, it is not JSON.
  if (!Number.isFinite(score)) throw new Error(`the model produced a score of ${score}`);
  return `{"request_id":${jsonString(requestId)},"prediction":{"label":"${label}","score":${score},"model_version":"${TOY_MODEL_VERSION}"}}`;
}

const NEEDS_ESCAPE = /["\\\x00-\x1f]/;

/**
 * `JSON.stringify` of a string, without its fixed cost (about 0.3 µs a call) when nothing needs
 * escaping: the case for every generated request id, and for ids clients send that are plain.
 */
function jsonString(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** Outputs as nested arrays by name, shaped as the model returned them (int64 as numbers, float16 as numbers). */
function nestedOutputs(outputs: ItemTensors, specs: readonly TensorSpec[]): Record<string, unknown> {
  const nested: Record<string, unknown> = {};
  for (const [name, tensor] of Object.entries(outputs))
    nested[name] = toNested(tensor, specs.find((spec) => spec.name === name)?.type);
  return nested;
}

/** One output tensor as nested arrays, shaped as the model returned it (int64 and float16 as numbers). */
export function toNested(tensor: ItemTensor, type: ElementType | undefined): unknown {
  const values: unknown[] = Array.isArray(tensor.data)
    ? tensor.data
    : type === 'float16'
      ? Array.from(tensor.data as Uint16Array, fromFloat16Bits)
      : Array.from(tensor.data as ArrayLike<number | bigint>, (v) => Number(v));
  const build = (depth: number, offset: number): unknown => {
    if (depth === tensor.shape.length) return values[offset];
    const stride = tensor.shape.slice(depth + 1).reduce((product, dim) => product * dim, 1);
    return Array.from({ length: tensor.shape[depth] as number }, (_, i) => build(depth + 1, offset + i * stride));
  };
  return build(0, 0);
}
