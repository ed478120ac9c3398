import { writeFile } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';
import type { ProfileOptions } from '../options/profile.js';
import type { Output } from '../simulate/simulate-main.js';
import type { LatencyProfile } from '../simulate/latency-profile.js';
import { measureBatches, resolveItemShapes, type ItemShapes, type ProfiledModel, type Stopwatch } from './measure.js';
import { formatProfile } from './profile-text.js';
import { summarizeProfile } from './summarize.js';

/** Parses `--batch-sizes 1,2,4,8`: distinct positive integers, kept in ascending order. */
export function parseBatchSizes(text: string): number[] {
  const sizes = text.split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 4096)) {
    throw new BatchlineError('INVALID_OPTION', `--batch-sizes: got '${text}', expected integers from 1 to 4096 separated by commas, e.g. 1,2,4,8,16`);
  }
  return [...new Set(sizes)].sort((a, b) => a - b);
}

export interface ProfileRequest {
  options: ProfileOptions;
  stdout: Output;
  /** Loads the model; the CLI loads ONNX lazily, tests pass a stand-in. */
  loadModel?: (path: string | undefined, intraOpThreads: number) => Promise<ProfiledModel & { version: string; close(): Promise<void> }>;
  /** The clock runs are timed with (default `performance.now`). */
  now?: Stopwatch;
}

/** The body of `batchline profile`: measure, fit, print, and write the profile file. */
export async function profileMain(request: ProfileRequest): Promise<LatencyProfile> {
  const { options, stdout } = request;
  const sizes = parseBatchSizes(options.batchSizes);
  const load = request.loadModel ?? (async (path, threads) => (await import('../model/load-model.js')).loadModel(path, { instances: 1, intraOpThreads: threads }));
  const model = await load(options.model, options.intraOpThreads);
  let profile: LatencyProfile;
  let itemShapes: ItemShapes;
  try {
    itemShapes = resolveItemShapes(options.itemShape, model.inputs);
    const timings = await measureBatches(model, sizes, options.warmup, options.repetitions, options.seed, request.now, itemShapes.shapes);
    const recorded = itemShapes.shapes.size === 0 ? undefined : Object.fromEntries(itemShapes.shapes);
    profile = summarizeProfile(model.version, timings, options.warmup, options.repetitions, recorded);
  } finally {
    await model.close();
  }
  const json = `${JSON.stringify(profile, null, 2)}\n`;
  if (options.out !== undefined) await write(options.out, json, '--out');
  if (options.json === '-') stdout.write(json);
  else {
    if (options.json !== undefined) await write(options.json, json, '--json');
    stdout.write(formatProfile(profile, options.out, itemShapes.defaulted));
  }
  return profile;
}

async function write(path: string, text: string, flag: string): Promise<void> {
  try {
    await writeFile(path, text);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `${flag}: cannot write '${path}': ${(error as Error).message}`);
  }
}
