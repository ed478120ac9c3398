import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import type { ServedModel } from '../model/load-model.js';
import { plainAnswer } from './answer.js';
import { configJsonOf } from './model-config.js';
import type { ModelVersion } from './model-version.js';
import type { Registry } from './registry.js';
import { type Targets, unavailable } from './target.js';

/** A version in the models list: its number and state (with the reason when it cannot serve). */
export function versionSummary(version: ModelVersion): Record<string, unknown> {
  return {
    version: version.version,
    ...version.status,
    ...(version.warmupMs === undefined ? {} : { warmup_ms: Math.round(version.warmupMs * 10) / 10 }),
  };
}

/** Every model, its versions and their states: `GET /v1/models` (and, with more, `GET /admin/models`). */
export function modelsList(
  registry: Registry,
  more: (version: ModelVersion) => Record<string, unknown> = () => ({}),
): unknown {
  return {
    default_model: registry.defaultModel ?? null,
    models: registry.names().map((name) => ({
      name,
      versions: registry.versionsOf(name).map((version) => ({ ...versionSummary(version), ...more(version) })),
    })),
  };
}

/**
 * A version's metadata: inputs and outputs (names, types, per-item shapes) and its configuration
 * as config.json writes it: its effective options, its `label_filename` and its `parameters`
 * (so that a registration takes the whole of it back).
 */
export function versionMetadata(version: ModelVersion, repository?: string): Record<string, unknown> {
  const labels = version.labelFilename;
  const functionName = version.functionName;
  const config = {
    ...configJsonOf(version.config, repository),
    ...(labels === undefined ? {} : { label_filename: labels }),
    // Shown, so that a registration taken back from this config runs the same export.
    ...(functionName === undefined ? {} : { function: functionName }),
    parameters: version.parameters,
  };
  const model = version.batcher === undefined ? undefined : version.model; // attached once loaded
  return {
    name: version.name,
    ...versionSummary(version),
    ...(model === undefined ? {} : modelShape(model)),
    config,
  };
}

/**
 * What a loaded model takes and gives: its version, inputs and outputs, and for a code model whose
 * items are JSON values the JSON Schema they are checked against (its one input, `json`, says only
 * "a string"), so that a client can find out what to send.
 */
function modelShape(model: ServedModel): Record<string, unknown> {
  return {
    model_version: model.version,
    inputs: model.inputs,
    outputs: model.outputs,
    ...(model.inputSchema === undefined ? {} : { input_schema: model.inputSchema }),
  };
}

/**
 * The read-only model routes: `GET /v1/models`, `GET /v1/models/{name}[/versions/{v}]`
 * (metadata of the latest, or that version) and `…/ready` (200 when it takes work, else 503),
 * and `GET /v1/model`, the default model's metadata (for clients that know one model).
 */
export function registerModelRoutes(
  app: FastifyInstance,
  registry: Registry,
  targets: Targets,
  /** Where paths in a version's options are shown from (--model-repository). */
  repository?: string,
): void {
  /** The version a metadata route names, or the error refusing it. */
  const lookUp = (request: FastifyRequest): ModelVersion | BatchlineError =>
    targets.find(request.params as { name: string; version?: string });
  const metadata = (request: FastifyRequest, reply: FastifyReply): void => {
    const found = lookUp(request);
    if (found instanceof BatchlineError) return void plainAnswer(reply).error(found);
    // What KServe V1's model health (`ready`) and TF Serving's model status read, beside batchline's own.
    const named = (request.params as { version?: string }).version !== undefined;
    plainAnswer(reply).json({
      ...versionMetadata(found, repository),
      ready: found.acceptsWork,
      model_version_status: (named ? [found] : registry.versionsOf(found.name)).map(tfServingStatus),
    });
  };
  const ready = (request: FastifyRequest, reply: FastifyReply): void => {
    const found = lookUp(request);
    if (found instanceof BatchlineError) return void plainAnswer(reply).error(found);
    if (!found.acceptsWork) return void plainAnswer(reply).error(unavailable(found));
    plainAnswer(reply).json({ name: found.name, version: found.version, state: 'ready' });
  };

  app.get('/v1/models', (_request, reply) => plainAnswer(reply).json(modelsList(registry)));
  app.get('/v1/models/:name', metadata);
  app.get('/v1/models/:name/versions/:version', metadata);
  app.get('/v1/models/:name/ready', ready);
  app.get('/v1/models/:name/versions/:version/ready', ready);
  app.get('/v1/model', (_request, reply) => {
    const name = registry.defaultModel;
    const found = name === undefined ? undefined : registry.resolve(name);
    const model = found?.batcher === undefined ? undefined : found.model; // attached once loaded
    if (model !== undefined) return void plainAnswer(reply).json(modelShape(model));
    // Refused as /v1/infer is: no default among several models, none served, or loading. It said
    // "the model is loading" (503) for all three, and a client polling it waited for good.
    const { refusal } = targets.resolve({ name: undefined });
    plainAnswer(reply).error(refusal ?? new BatchlineError('NOT_READY', 'the model is loading'));
  });
}

/** TF Serving's states of a version (its `ModelVersionStatus.State`) for batchline's. */
const TF_SERVING_STATES: Readonly<Record<ModelVersion['state'], string>> = {
  loading: 'LOADING',
  ready: 'AVAILABLE',
  draining: 'UNLOADING',
  // TF Serving has no state for a version loaded but with no instance up (or whose load failed): its status says why.
  unavailable: 'UNKNOWN',
};

/** A version as TF Serving's model status API lists it (`GetModelStatusResponse.model_version_status`). */
function tfServingStatus(version: ModelVersion): Record<string, unknown> {
  const { state, reason } = version.status;
  return {
    version: String(version.version),
    state: TF_SERVING_STATES[state],
    status:
      state === 'unavailable'
        ? { error_code: TF_UNAVAILABLE, error_message: reason ?? 'no instance is up' }
        : { error_code: TF_OK, error_message: '' },
  };
}

/** TF Serving's status codes (google.rpc.Code's names), not rows of batchline's error table. */
const TF_OK = 'OK';
const TF_UNAVAILABLE = 'UNAVAILABLE';
