import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import type { AdmissionContext } from './admission.js';
import { admit } from './admit.js';
import { Answer, RouteAnswers } from './answer.js';
import { useOipBody } from './oip-body.js';
import { modelMetadata, OIP_EXTENSIONS, OIP_SERVER_NAME } from './oip-metadata.js';
import { notServedReason, servesRepositoryExtension } from './oip-not-served.js';
import { OIP_ERRORS, oipCodecFor } from './oip-protocol.js';
import { registerSharedMemoryRoutes } from './shared-memory-routes.js';
import type { ServingRuntime } from './serving-runtime.js';
import { type ModelRef, unavailable } from './target.js';
import { tritonModelConfig } from './triton-model-config.js';
import { modelStatistics } from './triton-statistics.js';

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
      const targets = runtime.targets;
      const answerOf = (reply: FastifyReply): Answer => new Answer(reply, OIP_ERRORS, undefined);
      const plain = new RouteAnswers(() => OIP_ERRORS);
      const notFound = (request: FastifyRequest, reply: FastifyReply): void => {
        const reason = notServedReason(request.url.split('?')[0]!, runtime.config);
        const detail = `${request.method} ${request.url}${reason === undefined ? '' : `: ${reason}`}`;
        answerOf(reply).error(new BatchlineError('NOT_FOUND', detail));
      };
      scope.setNotFoundHandler(notFound);
      const refOf = (request: FastifyRequest): ModelRef & { name: string } =>
        request.params as { name: string; version?: string };

      scope.get('/', { config: { answers: plain } }, (_request, reply) =>
        answerOf(reply).json({
          name: OIP_SERVER_NAME,
          version: serverVersion,
          // The repository extension is the admin API's: there only with --admin-token and a repository.
          extensions: [
            ...OIP_EXTENSIONS,
            ...(servesRepositoryExtension(runtime.config) ? ['model_repository'] : []),
            ...(runtime.sharedMemory === undefined ? [] : ['system_shared_memory']),
          ],
        }),
      );
      scope.get('/health/live', { config: { answers: plain } }, (_request, reply) =>
        answerOf(reply).json({ live: true }),
      );
      scope.get('/health/ready', { config: { answers: plain } }, (_request, reply) => {
        const notReady = runtime.notReady();
        if (notReady === undefined) return answerOf(reply).json({ ready: true });
        answerOf(reply).error(notReady);
      });

      const metadataOf = (ref: ModelRef & { name: string }, reply: FastifyReply): void => {
        const found = targets.find(ref);
        if (found instanceof BatchlineError) return void answerOf(reply).error(found);
        if (found.batcher === undefined) return void answerOf(reply).error(unavailable(found));
        answerOf(reply).json(modelMetadata(found, registry));
      };
      const metadata = (request: FastifyRequest, reply: FastifyReply): void => metadataOf(refOf(request), reply);
      const ready = (request: FastifyRequest, reply: FastifyReply): void => {
        const found = targets.find(refOf(request));
        if (found instanceof BatchlineError) return void answerOf(reply).error(found);
        if (!found.acceptsWork) return void answerOf(reply).error(unavailable(found));
        answerOf(reply).json({ name: found.name, ready: true });
      };
      const config = (request: FastifyRequest, reply: FastifyReply): void => {
        const found = targets.find(refOf(request));
        if (found instanceof BatchlineError) return void answerOf(reply).error(found);
        if (found.batcher === undefined) return void answerOf(reply).error(unavailable(found));
        const versions = registry.versionsOf(found.name).map((v) => v.version);
        answerOf(reply).json(tritonModelConfig(found, versions));
      };
      const statisticsOf = (ref: (ModelRef & { name: string }) | undefined, reply: FastifyReply): void => {
        const found = modelStatistics(runtime, ref);
        if (found instanceof BatchlineError) return void answerOf(reply).error(found);
        answerOf(reply).json(found);
      };
      // Triton's statistics of every model (its statistics extension), unless a model is named
      // "stats": its metadata keeps this path, as before the extension was served (its statistics
      // are at /v2/models/stats/stats).
      scope.get('/models/stats', { config: { answers: plain } }, (_request, reply) => {
        if (registry.versionsOf('stats').length > 0) return metadataOf({ name: 'stats' }, reply);
        statisticsOf(undefined, reply);
      });
      for (const path of ['/models/:name', '/models/:name/versions/:version']) {
        scope.get(path, { config: { answers: plain } }, metadata);
        scope.get(`${path}/ready`, { config: { answers: plain } }, ready);
        scope.get(`${path}/config`, { config: { answers: plain } }, config);
        scope.get(`${path}/stats`, { config: { answers: plain } }, (request, reply) =>
          statisticsOf(refOf(request), reply),
        );
      }

      const answers = new RouteAnswers(
        () => OIP_ERRORS,
        (request) => targets.resolve(refOf(request)).counters,
      );
      const infer = (request: FastifyRequest, reply: FastifyReply): void => {
        const target = targets.resolve(refOf(request));
        const answer = new Answer(reply, OIP_ERRORS, target.counters);
        if (target.refusal !== undefined) return void answer.error(target.refusal);
        admit(request, answer, target.version, oipCodecFor(target.version, runtime.sharedMemory), context);
      };
      if (runtime.sharedMemory !== undefined) registerSharedMemoryRoutes(scope, runtime.sharedMemory, answerOf, plain);
      const inferRoute = { config: { answers }, bodyLimit: runtime.config.oipBodyLimitBytes };
      scope.post('/models/:name/infer', inferRoute, infer);
      scope.post('/models/:name/versions/:version/infer', inferRoute, infer);
    },
    { prefix: '/v2' },
  );
}
