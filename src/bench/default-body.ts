import { getSideJson, PLAIN_SIDE_READS, type SideReads } from './side-reads.js';
import { percentDecoded } from './percent-decoded.js';
import { BatchlineError } from '../errors.js';
import { parseVersion } from '../stats-contract/version-ref.js';

/** The input the embedded toy model (toy-logistic-v1) takes: three features. */
export const TOY_MODEL_BODY = '{"inputs":[0.2,1.5,-0.3]}';
/** The same input as KServe V1's (TF Serving's) predict request: one instance. */
export const TOY_MODEL_INSTANCES_BODY = '{"instances":[[0.2,1.5,-0.3]]}';
/** The same input as the Open Inference Protocol's request (`POST /v2/models/toy-logistic-v1/infer`). */
export const TOY_MODEL_OIP_BODY =
  '{"inputs":[{"name":"features","shape":[1,3],"datatype":"FP32","data":[0.2,1.5,-0.3]}]}';
const TOY_MODEL_VERSION = 'toy-logistic-v1';

/**
 * An inference route of a batchline server: `/v1/infer` and `/models/{name}/predict` take its
 * own JSON (`{"inputs": …}`), `/v1/models/{name}[/versions/{v}]:predict` KServe V1's (TF
 * Serving's) `{"instances": […]}`, `/v2/models/{name}[/versions/{v}]/infer` the Open Inference
 * Protocol's request. `version` null when the URL names none.
 */
export interface InferRoute {
  protocol: 'v1' | 'kserve-v1' | 'oip';
  model?: string;
  version: string | null;
}

export function inferRouteOf(url: URL): InferRoute | undefined {
  const path = url.pathname.replace(/\/+$/, '');
  if (path === '/v1/infer') return { protocol: 'v1', version: null };
  const predict = /^\/models\/([^/]+)\/predict$/.exec(path);
  if (predict !== null)
    return { protocol: 'v1', model: percentDecoded(predict[1]!), version: url.searchParams.get('version') };
  // The colon may come percent-encoded (`%3A`), which the server decodes before it routes.
  const kserve = /^\/v1\/models\/([^/:]+?)(?:\/versions\/([^/:]+?))?(?::|%3A)predict$/i.exec(path);
  if (kserve !== null)
    return {
      protocol: 'kserve-v1',
      model: percentDecoded(kserve[1]!),
      version: kserve[2] === undefined ? null : percentDecoded(kserve[2]),
    };
  const oip = /^\/v2\/models\/([^/]+)(?:\/versions\/([^/]+))?\/infer$/.exec(path);
  if (oip !== null)
    return {
      protocol: 'oip',
      model: percentDecoded(oip[1]!),
      version: oip[2] === undefined ? null : percentDecoded(oip[2]),
    };
  return undefined;
}

export type TargetKind =
  /** `body` in the protocol of the route: /v1's JSON or the Open Inference Protocol's. */
  | { kind: 'toy-model'; body: string }
  /** A model whose inputs all have fixed shapes: a body of that shape, made up (`about` says for what). */
  | { kind: 'generated'; body: string; about: string }
  /** `model` names the model the URL reaches (`linear version 2`), or says why none; `routes` lists the server's inference routes. */
  | {
      kind: 'batchline-other-model';
      model: string;
      routes: string[];
      version?: { name: string; version: string };
      protocol?: InferRoute['protocol'];
    }
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
 * `/models/{name}/predict[?version=V]`, `/v1/models/{name}[/versions/V]:predict` and
 * `/v2/models/{name}[/versions/V]/infer` that model; any
 * other route is loaded as any server's. Anything but batchline's shape is `unknown`,
 * and so is an answer that does not come whole within `timeoutMs` (undici's body timeout is
 * per chunk: a byte every half second held bench for minutes) or is larger than `watch` reads
 * (an endless body grew bench by 0.5-0.8 GB a second).
 */
export async function probeTarget(
  url: string,
  timeoutMs = 2000,
  reads: SideReads = PLAIN_SIDE_READS,
): Promise<TargetKind> {
  const signal = AbortSignal.timeout(timeoutMs);
  const get = (target: URL): Promise<unknown> => getSideJson(target, reads, timeoutMs, signal);
  try {
    const stats = (await get(new URL('/v1/stats', url))) as StatsSketch | null | undefined;
    if (stats === undefined) return { kind: 'unknown' };
    const model = stats?.model;
    if (model === undefined || model === null || typeof model !== 'object' || !('inputs' in model))
      return { kind: 'unknown' };
    const target = targetOf(new URL(url), stats!);
    if (target.kind !== 'batchline-other-model' || target.version === undefined) return target;
    return (await generatedBody(url, target, target.version, get)) ?? target;
  } catch {
    return { kind: 'unknown' };
  }
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
  get: (url: URL) => Promise<unknown>,
): Promise<TargetKind | undefined> {
  const oip = target.protocol === 'oip';
  const name = encodeURIComponent(version.name);
  const number = encodeURIComponent(version.version);
  // /v1's metadata gives each input's item shape; the protocol's its datatype and whole shape,
  // the batch first (-1), which a request of one item gives as 1.
  const path = oip ? `/v2/models/${name}/versions/${number}` : `/v1/models/${name}/versions/${number}`;
  const metadata = (await get(new URL(path, url))) as { inputs?: unknown } | null | undefined;
  const inputs = metadata?.inputs;
  if (!Array.isArray(inputs) || inputs.length === 0) return undefined;
  const sketches: InputSketch[] = oip ? inputs.map(oipSketch) : (inputs as InputSketch[]);
  const made = madeUpBody(sketches, target.protocol ?? 'v1', version);
  if (made === undefined || made.kind === 'generated') return made;
  return { ...target, model: made.why };
}

/**
 * The Open Inference Protocol's request for a model whose metadata lists `inputs` (each `name`,
 * `datatype`, `shape` with the batch first as -1), made up as `probeTarget` makes one: for bench
 * over gRPC, whose ModelMetadata answers the same. Undefined when no body can be made up; `why`
 * when only the user can give one.
 */
export function madeUpOipBody(
  inputs: readonly { name?: unknown; datatype?: unknown; shape?: unknown }[],
  version: { name: string; version: string },
): { kind: 'generated'; body: string; about: string } | { kind: 'only-yours'; why: string } | undefined {
  if (inputs.length === 0) return undefined;
  return madeUpBody(inputs.map(oipSketch), 'oip', version);
}

function madeUpBody(
  sketches: InputSketch[],
  protocol: InferRoute['protocol'],
  version: { name: string; version: string },
): { kind: 'generated'; body: string; about: string } | { kind: 'only-yours'; why: string } | undefined {
  if (sketches.some((input) => input?.type === 'string' || input?.type === 'BYTES')) {
    // How a code model of JSON items shows its one input in its metadata (model/json-items.ts).
    const json = sketches.length === 1 && sketches[0]?.name === 'json';
    return {
      kind: 'only-yours',
      why: `its model ${version.name} version ${version.version} takes ${json ? 'JSON items (its inputSchema)' : 'strings'}, which only you can give`,
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
  // One item: /v1's inputs and a V1 instance are the same value (an object by name for several inputs).
  const item = () =>
    sketches.length === 1 ? fill(sketches[0]!) : Object.fromEntries(sketches.map((input) => [input.name, fill(input)]));
  const body = JSON.stringify(
    protocol === 'oip'
      ? {
          inputs: sketches.map((input) => ({
            name: input.name,
            shape: [1, ...input.itemShape],
            datatype: input.type,
            data: [fill(input)].flat(Number.POSITIVE_INFINITY),
          })),
        }
      : protocol === 'kserve-v1'
        ? { instances: [item()] }
        : { inputs: item() },
  );
  const shapes = sketches.map((input) => `${input.name} [${input.itemShape.join(', ')}] ${input.type}`).join(', ');
  return { kind: 'generated', body, about: `${version.name} version ${version.version} (${shapes})` };
}

/** An input of the protocol's metadata as /v1's sketch: the shape after the batch, or a free one when the batch is not first. */
function oipSketch(input: { name?: unknown; datatype?: unknown; shape?: unknown }): InputSketch {
  const shape = Array.isArray(input?.shape) ? (input.shape as (number | string)[]) : [];
  return {
    name: input?.name as string,
    type: String(input?.datatype),
    itemShape: shape[0] === -1 ? shape.slice(1) : [-1],
  };
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
          ...names.flatMap((name) => [`POST /models/${name}/predict`, `POST /v1/models/${name}:predict`]),
        ];
  const other = (model: string): TargetKind => ({ kind: 'batchline-other-model', model, routes });
  const route = inferRouteOf(url);
  // Not an inference route (/metrics, a model's metadata): loaded as any server's route is.
  if (route === undefined) return { kind: 'unknown' };
  const toy: TargetKind = {
    kind: 'toy-model',
    body:
      route.protocol === 'oip'
        ? TOY_MODEL_OIP_BODY
        : route.protocol === 'kserve-v1'
          ? TOY_MODEL_INSTANCES_BODY
          : TOY_MODEL_BODY,
  };
  // A server from before the registry: its one model is the stats' own.
  if (versions === undefined)
    return stats.model?.version === TOY_MODEL_VERSION ? toy : other(`its model ${String(stats.model?.version)}`);
  const name = route.model ?? defaultModel;
  if (name === undefined) return other(`it has several models and no default for /v1/infer (${names.join(', ')})`);
  // Read as the server reads it (`2`, `v2`, `V2`; '' the latest): matched by its text, `versions/v1` was "no model … version v1".
  const wanted = parseVersion(route.version ?? undefined);
  if (wanted instanceof BatchlineError) return other(`its URL's version: ${wanted.detail}`);
  const ofModel = versions.filter((v) => v.name === name);
  const chosen =
    wanted === undefined
      ? (ofModel.find((v) => v.state === 'ready') ?? ofModel[0])
      : ofModel.find((v) => Number(v.version) === wanted);
  if (chosen === undefined) return other(`it has no model ${name}${wanted === undefined ? '' : ` version ${wanted}`}`);
  if (chosen.model?.version === TOY_MODEL_VERSION) return toy;
  return {
    ...(other(
      `its model ${name} version ${String(chosen.version)} has inputs of free size, which only you can give (GET /v1/models/${name} lists them)`,
    ) as Extract<TargetKind, { kind: 'batchline-other-model' }>),
    version: { name, version: String(chosen.version) },
    protocol: route.protocol,
  };
}
