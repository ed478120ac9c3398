import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import type { TensorSpec } from '../model/tensor-spec.js';
import { oipDatatypeOf } from '../protocol/datatypes.js';
import type { ModelVersion } from './model-version.js';
import { admissionTarget } from './registry.js';
import { admitRows, type AdmissionContext } from './admit.js';
import { answer, answerError } from './answer.js';
import { useOipBody } from './oip-body.js';
import { OIP_ERRORS, oipProtocolFor } from './oip-protocol.js';
import type { AnswerRoute } from './routes.js';
import type { ServingRuntime } from './serving-runtime.js';

/** The server metadata's name and the extensions it supports. */
const SERVER_NAME = 'batchline';
const EXTENSIONS = ['binary_tensor_data', 'schedule_policy'];
/** Triton's platform name for models run by onnxruntime (the protocol's list says onnx_onnxv1). */
const PLATFORM = 'onnxruntime_onnx';

/**
 * The REST side of the Open Inference Protocol (KServe v2), under `/v2`, in a scope of its own:
 * server metadata, liveness and readiness, model metadata and readiness, and inference, each
 * for the latest version of a model or `…/versions/{v}` of it, resolved through the registry.
 * Bodies are read whatever their Content-Type (oip-body.ts); answers and errors are the
 * protocol's (`{"error": "<message>"}`), with batchline's status codes, request id, deadline,
 * Retry-After and counters from the one HTTP layer.
 */
export function registerOipRoutes(
  app: FastifyInstance,
  runtime: ServingRuntime,
  context: AdmissionContext,
  serverVersion: string,
): void {
  app.register(
    async (scope) => {
      useOipBody(scope);
      const registry = runtime.registry;
      const errors: AnswerRoute = { protocol: OIP_ERRORS, countersOf: () => undefined };
      const json = (reply: FastifyReply, body: unknown): void =>
        answer(reply, 200, JSON.stringify(body), OIP_ERRORS, undefined, context.server);
      const refuse = (reply: FastifyReply, error: BatchlineError): void =>
        void answerError(reply, error, 'refused', OIP_ERRORS, undefined, context.server);
      scope.setNotFoundHandler((request, reply) =>
        refuse(reply, new BatchlineError('NOT_FOUND', `${request.method} ${request.url}`)),
      );

      /** The version a route names (the latest that takes work when none is named), or the error refusing it. */
      const versionOf = (request: FastifyRequest): ModelVersion | BatchlineError => {
        const { name, version } = request.params as { name: string; version?: string };
        const number = version === undefined ? undefined : /^[1-9]\d{0,8}$/.test(version) ? Number(version) : NaN;
        if (Number.isNaN(number)) return new BatchlineError('MODEL_NOT_FOUND', `'${name}' has no version '${version}'`);
        const found = registry.resolve(name, number);
        if (found !== undefined) return found;
        const known = registry.versionsOf(name);
        return new BatchlineError(
          'MODEL_NOT_FOUND',
          known.length === 0
            ? `'${name}'`
            : `'${name}' has no version ${version}; it has ${known.map((v) => v.version).join(', ')}`,
        );
      };

      scope.get('/', { config: errors }, (_request, reply) =>
        json(reply, { name: SERVER_NAME, version: serverVersion, extensions: EXTENSIONS }),
      );
      scope.get('/health/live', { config: errors }, (_request, reply) => json(reply, { live: true }));
      scope.get('/health/ready', { config: errors }, (_request, reply) => {
        if (runtime.ready) return json(reply, { ready: true });
        refuse(
          reply,
          runtime.leaving
            ? new BatchlineError('SHUTTING_DOWN')
            : new BatchlineError('NOT_READY', 'a model is not ready'),
        );
      });

      const metadata = (request: FastifyRequest, reply: FastifyReply): void => {
        const found = versionOf(request);
        if (found instanceof BatchlineError) return refuse(reply, found);
        if (found.batcher === undefined)
          return refuse(
            reply,
            new BatchlineError(
              'MODEL_UNAVAILABLE',
              `'${found.name}' version ${found.version} is ${found.status.state}`,
            ),
          );
        json(reply, {
          name: found.name,
          versions: registry.versionsOf(found.name).map((v) => String(v.version)),
          platform: PLATFORM,
          inputs: found.model.inputs.map(tensorMetadata),
          outputs: found.model.outputs.map(tensorMetadata),
        });
      };
      const ready = (request: FastifyRequest, reply: FastifyReply): void => {
        const found = versionOf(request);
        if (found instanceof BatchlineError) return refuse(reply, found);
        if (found.ready) return json(reply, { name: found.name, ready: true });
        const { state, reason } = found.status;
        refuse(
          reply,
          new BatchlineError(
            'MODEL_UNAVAILABLE',
            `'${found.name}' version ${found.version} is ${state === 'ready' ? 'unavailable' : state}${reason === undefined ? '' : ` (${reason})`}`,
          ),
        );
      };
      for (const path of ['/models/:name', '/models/:name/versions/:version']) {
        scope.get(path, { config: errors }, metadata);
        scope.get(`${path}/ready`, { config: errors }, ready);
      }

      const inferConfig: AnswerRoute = {
        protocol: OIP_ERRORS,
        countersOf: (request) => {
          const found = versionOf(request);
          return found instanceof BatchlineError ? runtime.unattributed : found;
        },
      };
      const infer = (request: FastifyRequest, reply: FastifyReply): void => {
        const { name, version } = request.params as { name: string; version?: string };
        const named = versionOf(request);
        const target =
          named instanceof BatchlineError
            ? named
            : runtime.state !== 'ready' && runtime.state !== 'starting'
              ? new BatchlineError('SHUTTING_DOWN')
              : admissionTarget(registry, name, version === undefined ? undefined : named.version);
        if (target instanceof BatchlineError) {
          const counters = named instanceof BatchlineError ? runtime.unattributed : named;
          return void answerError(reply, target, 'refused', OIP_ERRORS, counters, context.server);
        }
        admitRows(request, reply, target, oipProtocolFor(target), context);
      };
      const inferRoute = { config: inferConfig, bodyLimit: runtime.config.oipBodyLimitBytes };
      scope.post('/models/:name/infer', inferRoute, infer);
      scope.post('/models/:name/versions/:version/infer', inferRoute, infer);
    },
    { prefix: '/v2' },
  );
}

/** `$metadata_tensor`: the batch first and every free dimension as -1. */
function tensorMetadata(spec: TensorSpec): { name: string; datatype: string; shape: number[] } {
  return {
    name: spec.name,
    datatype: oipDatatypeOf(spec.type),
    shape: [-1, ...spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : -1))],
  };
}
