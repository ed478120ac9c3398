import { availableCores } from '../model/cpu-cores.js';
import { SeededRandom } from '../core/rng.js';
import { BatchlineError } from '../errors.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import { readJson } from '../protocol/json-reader.js';
import type { ServingPath } from './latency-profile.js';
import { randomItem, type BatchTimings, type Stopwatch } from './measure.js';
import { medianOf, roundMs } from './summarize.js';

/** What the serving-path measurement needs of a model: serve's own decode, run and reply. */
export type PathModel = Pick<ServedModel, 'inputs' | 'outputs' | 'decode' | 'runBatch' | 'replyBody'>;

export interface PathMeasurement {
  /** The request body decoding was timed on (`--body @file`, or one generated item). */
  body: Uint8Array;
  /** Untimed and timed repetitions of each per-request step. */
  warmup: number;
  repetitions: number;
  now: Stopwatch;
}

/**
 * Refuses, before anything is measured, a --body that serve would answer 400: it said only
 * "invalid inputs: the body needs an "inputs" field", after 13 s of measuring, naming no option.
 * Its item, read as serve reads it, is what a code model is timed on.
 */
export function checkBodyServes(model: Pick<PathModel, 'decode'>, body: Uint8Array): ItemTensors {
  try {
    const parsed = readJson(body) as { inputs?: unknown } | null;
    return model.decode(parsed?.inputs);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `--body: serve would refuse this request: ${(error as Error).message}`);
  }
}

/**
 * Times the main thread's share of a request in serve, step by step, with serve's own code:
 * reading the JSON body (`readJson`, as the inference routes' content-type parser does),
 * checking it against the model's inputs (`model.decode`), and encoding one item's answer
 * (`model.replyBody`). Medians, in ms per request or item.
 */
export async function measureMainThread(
  model: PathModel,
  m: PathMeasurement,
): Promise<{ decodeMs: number; checkMs: number; encodeMs: number; itemBytes: number }> {
  const decode: number[] = [];
  const check: number[] = [];
  let item: ItemTensors | undefined;
  for (let i = 0; i < m.warmup + m.repetitions; i++) {
    const t0 = m.now();
    const parsed = readJson(m.body) as { inputs?: unknown } | null;
    const t1 = m.now();
    item = model.decode(parsed?.inputs);
    const t2 = m.now();
    if (i >= m.warmup) {
      decode.push(t1 - t0);
      check.push(t2 - t1);
    }
  }
  const itemBytes = Object.values(item as ItemTensors).reduce(
    (sum, tensor) => sum + ((tensor.data as { byteLength?: number }).byteLength ?? 0),
    0,
  );
  // One real answer to encode: the model's outputs for the decoded item.
  const [outputs] = await model.runBatch([item as ItemTensors], 0);
  if (outputs instanceof Error)
    throw new BatchlineError('MODEL_FAILURE', `the item of the body profile times serve with: ${outputs.message}`);
  const encode: number[] = [];
  for (let i = 0; i < m.warmup + m.repetitions; i++) {
    const t0 = m.now();
    model.replyBody('00000000-0000-4000-8000-000000000000', outputs as ItemTensors, model.outputs);
    if (i >= m.warmup) encode.push(m.now() - t0);
  }
  return { decodeMs: medianOf(decode), checkMs: medianOf(check), encodeMs: medianOf(encode), itemBytes };
}

/**
 * A request body for one random item of the model, as a client would send it in JSON: values
 * with three decimals (an image normalised to [-1, 1] prints so). Real requests may print
 * more digits, and reading them costs more: measure with `--body @file` when you have one.
 */
export function generatedJsonBody(
  model: Pick<ServedModel, 'inputs'>,
  itemShapes: ReadonlyMap<string, readonly number[]>,
  seed: number,
): Uint8Array {
  const item = randomItem(model.inputs, new SeededRandom(seed), itemShapes);
  const nestedOf = (name: string): unknown => {
    const tensor = item[name]!;
    const values = Array.from(tensor.data as ArrayLike<number | bigint>, (v) =>
      typeof v === 'bigint' ? Number(v) : Math.round(v * 1000) / 1000,
    );
    const build = (depth: number, offset: number): unknown => {
      if (depth === tensor.shape.length) return values[offset];
      const stride = tensor.shape.slice(depth + 1).reduce((product, dim) => product * dim, 1);
      return Array.from({ length: tensor.shape[depth]! }, (_, i) => build(depth + 1, offset + i * stride));
    };
    return build(0, 0);
  };
  const inputs =
    model.inputs.length === 1
      ? nestedOf(model.inputs[0]!.name)
      : Object.fromEntries(model.inputs.map((spec) => [spec.name, nestedOf(spec.name)]));
  return Buffer.from(JSON.stringify({ inputs }));
}

/**
 * The serving path as the profile file records it: the main thread's steps, the model's run
 * alone and the hand-over to its worker thread and back (the worker's round trip less the run),
 * and the cores the host lets this process use.
 */
export function servingPathOf(
  execution: 'inline' | 'worker' | 'process',
  body: Uint8Array,
  main: { decodeMs: number; checkMs: number; encodeMs: number; itemBytes: number },
  roundTrips: readonly BatchTimings[],
  runs: readonly BatchTimings[],
  fit: (points: { n: number; ms: number }[]) => { aMs: number; bMs: number },
): ServingPath {
  const runPoints = runs.map((t) => ({ batch_size: t.batchSize, p50_ms: roundMs(medianOf(t.samplesMs)) }));
  const handover = roundTrips.map((t, i) => ({
    n: t.batchSize,
    ms: Math.max(0, medianOf(t.samplesMs) - medianOf((runs[i] as BatchTimings).samplesMs)),
  }));
  const runFit = fit(runPoints.map((p) => ({ n: p.batch_size, ms: p.p50_ms })));
  const handoverFit = execution === 'inline' ? { aMs: 0, bMs: 0 } : fit(handover);
  return {
    execution,
    wire: 'json',
    body_bytes: body.byteLength,
    item_bytes: main.itemBytes,
    decode_ms: roundMs(main.decodeMs),
    check_ms: roundMs(main.checkMs),
    encode_ms: roundMs(main.encodeMs),
    run_points: runPoints,
    run_fit: { a_ms: roundMs(runFit.aMs), b_ms: roundMs(runFit.bMs) },
    handover_fit: { a_ms: roundMs(handoverFit.aMs), b_ms: roundMs(handoverFit.bMs) },
    cores: availableCores(),
  };
}
