import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { admissionTarget } from './registry.js';
import { admit, type AdmissionContext } from './admit.js';
import { answerError } from './answer.js';
import { BATCHLINE_JSON, jsonProtocol } from './json-protocol.js';
import { byAccept } from './msgpack-protocol.js';
import type { AnswerRoute } from './routes.js';
import type { ServingRuntime } from './serving-runtime.js';

/** `/models/{name}/predict` takes the middleware's `{"data": …}` besides `{"inputs": …}`. */
const PREDICT_JSON = jsonProtocol({ acceptData: true });

/**
 * The inference routes of batchline's JSON: `POST /v1/infer` (the default model) and
 * `POST /models/{name}/predict[?version=V]` (the middleware's route). Bodies are JSON or
 * MessagePack (tensor-body-parsers.ts); the answer is MessagePack when Accept asks for it. Each
 * request is admitted into its model version's batcher and answered when its outcome arrives;
 * the handlers are synchronous and return nothing (see `admit`).
 */
export function registerInferRoutes(app: FastifyInstance, runtime: ServingRuntime, context: AdmissionContext): void {
  const registry = runtime.registry;
  const inferProtocolOf = byAccept(BATCHLINE_JSON);
  const predictProtocolOf = byAccept(PREDICT_JSON);

  const inferConfig: AnswerRoute = {
    protocol: BATCHLINE_JSON,
    protocolOf: inferProtocolOf,
    countersOf: () => {
      const name = registry.defaultModel;
      return (name === undefined ? undefined : registry.resolve(name)) ?? runtime.unattributed;
    },
  };
  app.post('/v1/infer', {
    config: inferConfig,
    handler: (request: FastifyRequest, reply: FastifyReply) => {
      const protocol = inferProtocolOf(request);
      const name = registry.defaultModel;
      const version = name === undefined ? undefined : registry.resolve(name);
      if (version?.acceptsWork) return void admit(request, reply, version, protocol, context);
      const refusal =
        runtime.state === 'starting'
          ? new BatchlineError('NOT_READY', 'the model is loading')
          : runtime.state !== 'ready'
            ? new BatchlineError('SHUTTING_DOWN')
            : name === undefined
              ? new BatchlineError(
                  'MODEL_NOT_FOUND',
                  `no default model among ${registry.names().join(', ')}; start with --default-model NAME or POST /models/{name}/predict`,
                )
              : admissionTarget(registry, name);
      // Counted on the default model's version even while it drains (its versions are listed still).
      const counted = version ?? (name === undefined ? undefined : registry.versionsOf(name)[0]);
      answerError(reply, refusal, 'refused', protocol, counted ?? runtime.unattributed, context.server);
    },
  });

  const predictConfig: AnswerRoute = {
    protocol: PREDICT_JSON,
    protocolOf: predictProtocolOf,
    countersOf: (request) => {
      const { name } = request.params as { name: string };
      const version = versionParam(request);
      return (
        (typeof version === 'number' || version === undefined ? registry.resolve(name, version) : undefined) ??
        runtime.unattributed
      );
    },
  };
  app.post('/models/:name/predict', {
    config: predictConfig,
    handler: (request: FastifyRequest, reply: FastifyReply) => {
      const protocol = predictProtocolOf(request);
      const { name } = request.params as { name: string };
      const version = versionParam(request);
      const target =
        version instanceof BatchlineError
          ? version
          : runtime.state !== 'ready' && runtime.state !== 'starting'
            ? new BatchlineError('SHUTTING_DOWN')
            : admissionTarget(registry, name, version);
      if (target instanceof BatchlineError) {
        const counters =
          target.code === 'MODEL_UNAVAILABLE' ? registry.resolve(name, version as number | undefined) : undefined;
        return void answerError(reply, target, 'refused', protocol, counters ?? runtime.unattributed, context.server);
      }
      admit(request, reply, target, protocol, context);
    },
  });
}

/** `?version=V`: a version number, nothing (the latest), or the error refusing what was given. */
export function versionParam(request: FastifyRequest): number | undefined | BatchlineError {
  const given = (request.query as { version?: unknown } | undefined)?.version;
  if (given === undefined || given === '') return undefined;
  if (typeof given === 'string' && /^[1-9]\d{0,8}$/.test(given)) return Number(given);
  return new BatchlineError('BAD_REQUEST', `version must be a positive integer, got '${String(given)}'`);
}
