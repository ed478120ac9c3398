/**
 * The contract between a model version's instance pool and what starts its instances (threads,
 * shared threads, processes: instance-launchers.ts).
 */
import type { InstanceEvent } from './instance-health.js';
import type { ItemTensors, TensorSpec } from './tensor-spec.js';

/**
 * When an instance can be stopped. `at once`: in the middle of a batch or of its load — a process
 * is killed, a code model's thread (JavaScript) terminated. `after its run`: a thread inside
 * native code (onnxruntime, or a code model that loaded a native addon) does not stop when
 * terminated, and when its call returns into the terminated thread onnxruntime-node throws a
 * C++ exception nobody catches: the whole process aborts. Such an instance is only closed
 * between batches, and its load is waited for.
 */
export type InstanceStops = 'at once' | 'after its run';

/** One running model instance: a thread, a session on a shared thread, a child process, or (inline) a code model's copy on the server's thread. */
export interface InstanceHandle {
  /** Runs one batch; rejects when the instance fails or ends during the run. */
  run(items: readonly ItemTensors[]): Promise<(ItemTensors | Error)[]>;
  /** Ends it now; its runs fail. Only called in the middle of a run when it `stops` `at once`. */
  kill(): void;
  /** Lets it release its session and end; resolves when it has ended, with what a code model's `finalize` threw (its message), if it threw. */
  close(): Promise<string | undefined>;
  /** Read when it is to be stopped: a code model's thread that loads a native addon stops `after its run` from then on. */
  readonly stops: InstanceStops;
  /** The instance's process id, when it is a process. */
  readonly pid: number | undefined;
  /** The native addon a code model's thread loaded, if it did: why it stops `after its run` (for the log). */
  readonly nativeAddon?: string | undefined;
}

export interface LaunchedInstance {
  handle: InstanceHandle;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
  /** A code model whose items are JSON values: their schema. */
  inputSchema?: object;
  /** A code model that exports `itemCost` (a function stays in its instance: the main thread imports its own). */
  itemCost?: true;
}

/**
 * Starts instance `index` of a version (again, after a crash); `onExit` is called once if the
 * instance ends without being asked to. `loadSignal` stops its load where the instance stops
 * `at once`: a version removed, or a server stopped, while its model loads does not wait for a
 * load that may never end (a code model's initialize that never settles).
 */
export type InstanceLauncher = (
  onExit: (reason: string) => void,
  index: number,
  loadSignal?: AbortSignal,
) => Promise<LaunchedInstance>;

/** Limits of one batch, in ms from its start. */
export interface RunLimits {
  /** After this long, the batch's instance is stuck: out of rotation, and replaced when it stops `at once`. */
  stuckAfterMs: number;
}

/**
 * Told what happens to an instance: it goes `down` or is `stuck` (it stops taking batches: the
 * batcher's slot `index` is out), or it is `up` again. The batcher and the log hear the same.
 */
export type InstanceListener = (event: InstanceEvent) => void;
