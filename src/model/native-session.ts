import { createRequire } from 'node:module';
import type ort from 'onnxruntime-node';

/**
 * onnxruntime-node's native session, called directly and synchronously: for the embedded toy
 * model only, where it pays. Measured against the public API in one process, alternating rounds
 * (exclusive lock, 2026-12-02): the toy model 1.33× the items/s in a loop (1.18-1.56) and
 * `npm run bench:serve` 1.10× against 0.81× a bare Fastify route (6 pairs each); PaddleOCR's
 * classifier 0.94× at batch 8 (0.93-0.96) and 1.04× at batch 1, PP-OCRv4's recognizer 0.89× at
 * batch 8: a real model gains nothing, so model files use the public API, inline too.
 *
 * The public `InferenceSession.run` defers every run by a `setImmediate` and wraps it in
 * Promises and argument checks. That costs a turn of the event loop per batch, and it prevents
 * running several ready batches back to back while onnxruntime's code is hot in the CPU cache.
 * For a model that takes microseconds, this is most of onnxruntime's cost in `serve`
 * (docs/architecture.md, "Inline execution").
 *
 * `dist/binding.js` is not public API. onnxruntime-node is pinned to 1.30.x in package.json,
 * and `openNativeSession` returns undefined when the binding is not where 1.30 keeps it or does
 * not look as expected; callers then use the public API.
 */
export interface NativeSession {
  readonly inputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  /** Runs synchronously on the calling thread; throws onnxruntime's error. */
  run(feeds: Record<string, ort.Tensor>): Record<string, ort.Tensor>;
  release(): void;
}

export interface NativeSessionOptions {
  graphOptimizationLevel: 'all';
  executionMode: 'sequential';
  intraOpNumThreads?: number;
  interOpNumThreads: number;
  logSeverityLevel: 0 | 1 | 2 | 3 | 4;
  executionProviders?: string[];
}

interface RawValueMetadata {
  name: string;
  isTensor: boolean;
  type: number;
  shape: number[];
  symbolicDimensions: string[];
}

interface RawSession {
  loadModel(path: string, options: NativeSessionOptions): void;
  loadModel(buffer: ArrayBufferLike, byteOffset: number, byteLength: number, options: NativeSessionOptions): void;
  readonly inputMetadata: RawValueMetadata[];
  readonly outputMetadata: RawValueMetadata[];
  run(feeds: Record<string, ort.Tensor>, fetches: Record<string, null>, options: object): Record<string, ort.Tensor>;
  dispose(): void;
}

interface RawBinding {
  binding: { InferenceSession: new () => RawSession };
  initOrt(): void;
}

/** ONNX TensorProto element types (onnx.proto), as onnxruntime reports them. */
const ONNX_ELEMENT_TYPES: Record<number, ort.Tensor.Type> = {
  1: 'float32',
  2: 'uint8',
  3: 'int8',
  4: 'uint16',
  5: 'int16',
  6: 'int32',
  7: 'int64',
  8: 'string',
  9: 'bool',
  10: 'float16',
  11: 'float64',
  12: 'uint32',
  13: 'uint64',
};

function loadBinding(): RawBinding | undefined {
  try {
    const binding = createRequire(import.meta.url)('onnxruntime-node/dist/binding.js') as Partial<RawBinding>;
    if (typeof binding.initOrt !== 'function' || typeof binding.binding?.InferenceSession !== 'function')
      return undefined;
    return binding as RawBinding;
  } catch {
    return undefined;
  }
}

let binding: RawBinding | undefined | null = null;

/**
 * Opens a native session on a model file or the bytes of an ONNX ModelProto, or returns
 * undefined when the binding is unavailable. Load errors (a bad model) are thrown.
 */
export function openNativeSession(
  source: string | Uint8Array,
  options: NativeSessionOptions,
): NativeSession | undefined {
  if (binding === null) binding = loadBinding();
  if (binding === undefined) return undefined;
  binding.initOrt();
  const raw = new binding.binding.InferenceSession();
  if (typeof source === 'string') raw.loadModel(source, options);
  else raw.loadModel(source.buffer, source.byteOffset, source.byteLength, options);
  const outputs = raw.outputMetadata.map(publicMetadata);
  // Every output, computed by onnxruntime (null = not preallocated).
  const fetches: Record<string, null> = Object.fromEntries(outputs.map((meta) => [meta.name, null]));
  return {
    inputMetadata: raw.inputMetadata.map(publicMetadata),
    outputMetadata: outputs,
    run: (feeds) => raw.run(feeds, fetches, {}),
    release: () => raw.dispose(),
  };
}

/** The binding's metadata in the public API's form: symbolic dimensions by name. */
function publicMetadata(raw: RawValueMetadata): ort.InferenceSession.ValueMetadata {
  if (!raw.isTensor) return { name: raw.name, isTensor: false };
  const type = ONNX_ELEMENT_TYPES[raw.type] ?? (`onnx type ${raw.type}` as ort.Tensor.Type);
  const shape = raw.shape.map((dim, i) => (dim >= 0 ? dim : (raw.symbolicDimensions[i] ?? `d${i}`)));
  return { name: raw.name, isTensor: true, type, shape };
}
