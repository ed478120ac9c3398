import { request } from 'undici';
import { MAX_STATS_BYTES, readBoundedText } from '../stats-contract/stats-poller.js';

/** The input the embedded toy model (toy-logistic-v1) takes: three features. */
export const TOY_MODEL_BODY = '{"inputs":[0.2,1.5,-0.3]}';
const TOY_MODEL_VERSION = 'toy-logistic-v1';

export type TargetKind =
  | { kind: 'toy-model' }
  /** A model whose inputs all have fixed shapes: a body of that shape, made up (`about` says for what). */
  | { kind: 'generated'; body: string; about: string }
  /** `model` names the model the URL reaches (`linear version 2`), or says why none; `routes` lists the server's inference routes. */
  | { kind: 'batchline-other-model'; model: string; routes: string[]; version?: { name: string; version: string } }
  | { kind: 'unknown' };

/** What the probe reads of batchline's `/v1/stats` (older servers have no `models`). */
interface StatsSketch {
  model?: { version?: unknown; inputs?: unknown };
  defaultModel?: unknown;
  models?: { name?: unknown; version?: unknown; state?: unknown; model?: { version?: unknown } }[];
}

/**
 * Asks the target's origin for batchline's `GET /v1/stats` once, to learn whether it is a
 * batchline server and which model the URL reaches: `/v1/infer` the default model,
 * `/models/{name}/predict[?version=V]` that model. Anything but batchline's shape is `unknown`,
 * and so is an answer that does not come whole within `timeoutMs` (undici's body timeout is
 * per chunk: a byte every half second held bench for minutes) or is larger than `watch` reads
 * (an endless body grew bench by 0.5-0.8 GB a second).
 */
export async function probeTarget(url: string, timeoutMs = 2000): Promise<TargetKind> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const stats = (await getJson(new URL('/v1/stats', url), timeoutMs, signal)) as StatsSketch | null | undefined;
    if (stats === undefined) return { kind: 'unknown' };
    const model = stats?.model;
    if (model === undefined || model === null || typeof model !== 'object' || !('inputs' in model))
      return { kind: 'unknown' };
    const target = targetOf(new URL(url), stats!);
    if (target.kind !== 'batchline-other-model' || target.version === undefined) return target;
    return (await generatedBody(url, target, target.version, timeoutMs, signal)) ?? target;
  } catch {
    return { kind: 'unknown' };
  }
}

/** A GET's JSON answer, read to at most MAX_STATS_BYTES before `signal` aborts; undefined when it is not 200. */
async function getJson(url: URL, timeoutMs: number, signal: AbortSignal): Promise<unknown> {
  const response = await request(url, { method: 'GET', headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal });
  const text = await readBoundedText(response.body, MAX_STATS_BYTES);
  return response.statusCode === 200 ? JSON.parse(text) : undefined;
}

/** Most values a made-up body holds: a model taking more (an image) needs the user's input. */
const MAX_GENERATED_VALUES = 65_536;

interface InputSketch {
  name: string;
  type: string;
  itemShape: (number | string)[];
}

/**
 * A body for a model version whose inputs all have fixed item shapes, read from its metadata
 * (`GET /v1/models/{name}/versions/{v}`): every input filled with small values that any
 * numeric type holds. Undefined when a dimension is free (an image's width) or it is too big;
 * `target` saying why when the inputs are strings (a code model's JSON items: `{"inputs": 0}`
 * fits no schema but a number's, and the run was one of 400s).
 */
async function generatedBody(
  url: string,
  target: Extract<TargetKind, { kind: 'batchline-other-model' }>,
  version: { name: string; version: string },
  timeoutMs: number,
  signal: AbortSignal,
): Promise<TargetKind | undefined> {
  const path = `/v1/models/${encodeURIComponent(version.name)}/versions/${encodeURIComponent(version.version)}`;
  const metadata = (await getJson(new URL(path, url), timeoutMs, signal)) as { inputs?: unknown } | null | undefined;
  const inputs = metadata?.inputs;
  if (!Array.isArray(inputs) || inputs.length === 0) return undefined;
  const sketches = inputs as InputSketch[];
  if (sketches.some((input) => input?.type === 'string')) {
    // How a code model of JSON items shows its one input in its metadata (model/json-items.ts).
    const json = sketches.length === 1 && sketches[0]?.name === 'json';
    return {
      ...target,
      model: `its model ${version.name} version ${version.version} takes ${json ? 'JSON items (its inputSchema)' : 'strings'}, which only you can give`,
    };
  }
  if (
    !sketches.every(
      (input) =>
        typeof input?.name === 'string' &&
        Array.isArray(input.itemShape) &&
        input.itemShape.every((dim) => Number.isInteger(dim) && (dim as number) > 0),
    )
  )
    return undefined;
  const sizes = sketches.map((input) => (input.itemShape as number[]).reduce((product, dim) => product * dim, 1));
  if (sizes.reduce((a, b) => a + b, 0) > MAX_GENERATED_VALUES) return undefined;
  const fill = (input: InputSketch): unknown => {
    let i = 0;
    // 0 and 1 alternate: valid for floats, every integer type and bool.
    const build = (depth: number): unknown =>
      depth === input.itemShape.length
        ? i++ % 2
        : Array.from({ length: input.itemShape[depth] as number }, () => build(depth + 1));
    return build(0);
  };
  const body = JSON.stringify({
    inputs:
      sketches.length === 1
        ? fill(sketches[0]!)
        : Object.fromEntries(sketches.map((input) => [input.name, fill(input)])),
  });
  const shapes = sketches.map((input) => `${input.name} [${input.itemShape.join(', ')}] ${input.type}`).join(', ');
  return { kind: 'generated', body, about: `${version.name} version ${version.version} (${shapes})` };
}

/** The model `url` reaches on a batchline server whose stats are `stats`. */
export function targetOf(url: URL, stats: StatsSketch): TargetKind {
  const versions = Array.isArray(stats.models) ? stats.models : undefined;
  const names = versions === undefined ? [] : [...new Set(versions.map((v) => String(v.name)))];
  const defaultModel = typeof stats.defaultModel === 'string' ? stats.defaultModel : undefined;
  const routes =
    versions === undefined
      ? ['POST /v1/infer']
      : [
          ...(defaultModel === undefined ? [] : [`POST /v1/infer (${defaultModel})`]),
          ...names.map((name) => `POST /models/${name}/predict`),
        ];
  const other = (model: string): TargetKind => ({ kind: 'batchline-other-model', model, routes });
  const predict = /^\/models\/([^/]+)\/predict\/?$/.exec(url.pathname);
  // An older server, or a route that is not per model: its one model is the stats' own.
  if (versions === undefined || (predict === null && url.pathname.replace(/\/+$/, '') !== '/v1/infer')) {
    return stats.model?.version === TOY_MODEL_VERSION
      ? { kind: 'toy-model' }
      : other(`its model ${String(stats.model?.version)}`);
  }
  const name = predict === null ? defaultModel : decodeURIComponent(predict[1]!);
  if (name === undefined) return other(`it has several models and no default for /v1/infer (${names.join(', ')})`);
  const wanted = predict === null ? undefined : url.searchParams.get('version');
  const ofModel = versions.filter((v) => v.name === name);
  const chosen =
    wanted === undefined || wanted === null
      ? (ofModel.find((v) => v.state === 'ready') ?? ofModel[0])
      : ofModel.find((v) => String(v.version) === wanted);
  if (chosen === undefined) return other(`it has no model ${name}${wanted ? ` version ${wanted}` : ''}`);
  if (chosen.model?.version === TOY_MODEL_VERSION) return { kind: 'toy-model' };
  return {
    ...(other(
      `its model ${name} version ${String(chosen.version)} has inputs of free size, which only you can give (GET /v1/models/${name} lists them)`,
    ) as { kind: 'batchline-other-model'; model: string; routes: string[] }),
    version: { name, version: String(chosen.version) },
  };
}
