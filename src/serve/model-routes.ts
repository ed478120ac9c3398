import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { snakeCase } from './model-config.js';
import type { ModelVersion } from './model-version.js';
import type { Registry } from './registry.js';
import { answer, answerError, type AnsweringServer } from './answer.js';
import { BATCHLINE_JSON } from './json-protocol.js';

/** A version in the models list: its number and state (with the reason when it cannot serve). */
export function versionSummary(version: ModelVersion): Record<string, unknown> {
  return { version: version.version, ...version.status };
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

/** A version's metadata: inputs and outputs (names, types, per-item shapes) and its effective options. */
export function versionMetadata(version: ModelVersion): Record<string, unknown> {
  const config = Object.fromEntries(Object.entries(version.config).map(([key, value]) => [snakeCase(key), value]));
  const model = version.batcher === undefined ? undefined : version.model; // attached once loaded
  return {
    name: version.name,
    ...versionSummary(version),
    ...(model === undefined ? {} : { model_version: model.version, inputs: model.inputs, outputs: model.outputs }),
    config,
  };
}

/**
 * The read-only model routes: `GET /v1/models`, `GET /v1/models/{name}[/versions/{v}]`
 * (metadata of the latest, or that version) and `…/ready` (200 when it takes work, else 503),
 * and `GET /v1/model`, the default model's metadata as before the registry.
 */
export function registerModelRoutes(app: FastifyInstance, registry: Registry, server: AnsweringServer): void {
  const json = (reply: FastifyReply, body: unknown): void =>
    answer(reply, 200, JSON.stringify(body), BATCHLINE_JSON, undefined, server);
  const refuse = (reply: FastifyReply, error: BatchlineError): void =>
    void answerError(reply, error, 'refused', BATCHLINE_JSON, undefined, server);

  /** The version a metadata route names, or the 404 refusing it. */
  const lookUp = (request: FastifyRequest): ModelVersion | BatchlineError => {
    const { name, version } = request.params as { name: string; version?: string };
    const number = version === undefined ? undefined : /^[1-9]\d{0,8}$/.test(version) ? Number(version) : NaN;
    const found = Number.isNaN(number) ? undefined : registry.resolve(name, number);
    if (found !== undefined) return found;
    return new BatchlineError('MODEL_NOT_FOUND', version === undefined ? `'${name}'` : `'${name}' version ${version}`);
  };
  const metadata = (request: FastifyRequest, reply: FastifyReply): void => {
    const found = lookUp(request);
    if (found instanceof BatchlineError) return refuse(reply, found);
    json(reply, versionMetadata(found));
  };
  const ready = (request: FastifyRequest, reply: FastifyReply): void => {
    const found = lookUp(request);
    if (found instanceof BatchlineError) return refuse(reply, found);
    if (found.ready) return json(reply, { name: found.name, version: found.version, state: 'ready' });
    const { state, reason } = found.status;
    refuse(
      reply,
      new BatchlineError(
        'MODEL_UNAVAILABLE',
        `'${found.name}' version ${found.version} is ${state === 'ready' ? 'unavailable' : state}${reason === undefined ? '' : ` (${reason})`}`,
      ),
    );
  };

  app.get('/v1/models', (_request, reply) => json(reply, modelsList(registry)));
  app.get('/v1/models/:name', metadata);
  app.get('/v1/models/:name/versions/:version', metadata);
  app.get('/v1/models/:name/ready', ready);
  app.get('/v1/models/:name/versions/:version/ready', ready);
  app.get('/v1/model', (_request, reply) => {
    const name = registry.defaultModel;
    const model = (name === undefined ? undefined : registry.resolve(name))?.model;
    if (model === undefined) return refuse(reply, new BatchlineError('NOT_READY', 'the model is loading'));
    json(reply, { model_version: model.version, inputs: model.inputs, outputs: model.outputs });
  });
}
