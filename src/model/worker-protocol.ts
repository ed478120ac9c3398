import type { ItemTensors, TensorSpec } from './tensor-spec.js';

/** What a model worker needs to load its session. */
export interface WorkerSetup {
  /** ONNX file, or undefined for the embedded toy model. */
  path: string | undefined;
  version: string;
  intraOpThreads: number;
}

export type WorkerRequest = { kind: 'run'; id: number; items: ItemTensors[] } | { kind: 'close' };

export type WorkerReply =
  | { kind: 'loaded'; inputs: TensorSpec[]; outputs: TensorSpec[] }
  | { kind: 'load_failed'; message: string }
  /** One entry per item: its outputs, or why that item alone failed. */
  | { kind: 'result'; id: number; outputs: (ItemTensors | { failed: string })[] }
  | { kind: 'failed'; id: number; message: string };

/** The buffers of a batch's tensors, moved rather than copied between threads. */
export function transferablesOf(items: readonly (ItemTensors | { failed: string })[]): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const item of items) {
    if ('failed' in item && typeof item.failed === 'string') continue;
    for (const tensor of Object.values(item as ItemTensors)) {
      if (Array.isArray(tensor.data)) continue; // strings are cloned
      const buffer = tensor.data.buffer;
      // A typed array that views part of a larger buffer cannot be moved whole; it is copied.
      if (buffer instanceof ArrayBuffer && tensor.data.byteOffset === 0 && tensor.data.byteLength === buffer.byteLength) buffers.add(buffer);
    }
  }
  return [...buffers];
}
