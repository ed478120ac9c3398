import type { ExecutionProvider } from '../options/serve.js';
import type { ItemClientCode } from './item-failure.js';
import type { ItemTensors, TensorSpec } from './tensor-spec.js';

/** What a model worker needs to load its session, or its code model. */
export interface WorkerSetup {
  /** ONNX file or JavaScript module (a code model), or undefined for the embedded toy model. */
  path: string | undefined;
  version: string;
  intraOpThreads: number;
  /** onnxruntime's execution provider (checked by the server before any instance starts). */
  executionProvider: ExecutionProvider;
  /** Which instance of its version this is, from 0 (a code model's `initialize` is told). */
  instance?: number;
  /** A code model's export that runs a batch (default `execute`). */
  functionName?: string;
  /** The version's effective options, for a code model's `initialize`. */
  config?: Record<string, unknown>;
}

export type WorkerRequest = { kind: 'run'; id: number; items: ItemTensors[] } | { kind: 'close' };

export type WorkerReply =
  /**
   * `inputSchema`: a code model whose items are JSON values, checked on the main thread.
   * `itemCost`: a code model that exports one, which the main thread imports to cost its items.
   */
  | { kind: 'loaded'; inputs: TensorSpec[]; outputs: TensorSpec[]; inputSchema?: object; itemCost?: true }
  | { kind: 'load_failed'; message: string }
  /** A code model's `finalize` threw (or rejected) as the instance closed: for the server's log. */
  | { kind: 'finalize_failed'; message: string }
  /**
   * A code model's thread loaded a native addon (onnxruntime-node, …): from now on it may be
   * inside native code, where terminating it can abort the process (instance-handle.ts).
   */
  | { kind: 'native'; addon: string }
  /**
   * One entry per item: its outputs, or why that item alone failed (and `code`, the client-error
   * code the model's Error carried: item-failure.ts). `inputs`: the batch's input
   * buffers, which the instance no longer needs, back to the server's pool (input-buffers.ts).
   */
  | {
      kind: 'result';
      id: number;
      outputs: (ItemTensors | { failed: string; code?: ItemClientCode })[];
      inputs?: ArrayBuffer[];
    }
  /**
   * The batch failed: its inputs come back, so the batcher can run parts of it again (isolation).
   * `notOnePerItem`: the model returned no result per item (NotOnePerItemFailure), which no part would mend.
   */
  | { kind: 'failed'; id: number; message: string; items: ItemTensors[]; notOnePerItem?: true };

/** Buffers that belong to the one item whose tensors view them (a request body read for it alone). */
const itemBuffers = new WeakSet<ArrayBufferLike>();

/**
 * Marks a request body's buffer as the property of the one item whose tensors will view parts
 * of it (a MessagePack body's `bin`s): it then moves with that item to a model thread, instead
 * of each tensor being copied out of it. Only for a buffer nothing else uses.
 */
export function giveBufferToItem(buffer: ArrayBufferLike): void {
  itemBuffers.add(buffer);
}

export function bufferBelongsToItem(buffer: ArrayBufferLike): boolean {
  return itemBuffers.has(buffer);
}

/**
 * The buffers of a batch's inputs that are worth giving back to the server's pool once the batch
 * has run: every distinct one that is large enough and that no output views.
 */
export function returnableInputs(
  items: readonly ItemTensors[],
  minBytes: number,
  outputs: readonly (ItemTensors | Error)[],
): ArrayBuffer[] {
  const keep = new Set<ArrayBufferLike>();
  for (const output of outputs) {
    if (output instanceof Error) continue;
    for (const name in output) {
      const data = output[name]!.data;
      if (!Array.isArray(data)) keep.add(data.buffer);
    }
  }
  const buffers = new Set<ArrayBuffer>();
  for (const item of items) {
    for (const name in item) {
      const data = item[name]!.data;
      if (Array.isArray(data)) continue;
      const buffer = data.buffer;
      if (buffer instanceof ArrayBuffer && buffer.byteLength >= minBytes && !keep.has(buffer)) buffers.add(buffer);
    }
  }
  return [...buffers];
}

/** The buffers of a batch's tensors, moved rather than copied between threads. */
export function transferablesOf(items: readonly (ItemTensors | { failed: string })[]): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const item of items) {
    if ('failed' in item && typeof item.failed === 'string') continue;
    for (const tensor of Object.values(item as ItemTensors)) {
      if (Array.isArray(tensor.data)) continue; // strings are cloned
      const buffer = tensor.data.buffer;
      // A typed array that views part of a larger buffer is copied, unless that buffer is its item's alone.
      const whole = tensor.data.byteOffset === 0 && tensor.data.byteLength === buffer.byteLength;
      if (buffer instanceof ArrayBuffer && (whole || itemBuffers.has(buffer))) buffers.add(buffer);
    }
  }
  return [...buffers];
}

/** To a shared model thread (model-host.ts): open a session, or pass one of its requests on. */
export type HostRequest =
  | { kind: 'open'; session: number; setup: WorkerSetup }
  | { kind: 'request'; session: number; request: WorkerRequest };

/** From a shared model thread: a session's reply, or word that it has released its model and ended. */
export interface HostReply {
  session: number;
  reply: WorkerReply | { kind: 'ended' };
}
