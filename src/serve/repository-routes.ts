import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { readJson } from '../protocol/json-reader.js';
import { Answer, RouteAnswers } from './answer.js';
import { OIP_ERRORS } from './oip-protocol.js';
import { loadRepositoryModel, repositoryIndex, unloadRepositoryModel } from './repository-extension.js';
import type { ServingRuntime } from './serving-runtime.js';

/**
 * Triton's model repository extension on HTTP (repository-extension.ts), inside the admin API's
 * scope (so behind its bearer token): `POST /v2/repository/index` lists the repository's models and versions with their
 * state, `POST /v2/repository/models/{m}/load` serves a model's versions as its config.json's
 * version policy selects them from disk (loading those not served, unloading those no longer
 * selected), `…/unload` drains and removes every version of it. Bodies are read as JSON whatever
 * their Content-Type (tritonclient sends none). Answers: 200 with `{}` (index: the list), errors
 * `{"error": message}` as every /v2 route's.
 */
export function registerRepositoryRoutes(scope: FastifyInstance, runtime: ServingRuntime): void {
  const json = (reply: FastifyReply, status: number, body: unknown): void =>
    new Answer(reply, OIP_ERRORS, undefined).json(body, status);
  // A failure that is no refusal is a bug: Fastify's error handler logs it and keeps its text from the client.
  const refuse = (reply: FastifyReply, error: unknown): void => {
    if (!(error instanceof BatchlineError)) throw error;
    new Answer(reply, OIP_ERRORS, undefined).error(error);
  };
  // A body that is not JSON is refused by the parser, before a handler: in the protocol's format too.
  const route = { config: { answers: new RouteAnswers(() => OIP_ERRORS) } };
  scope.register(async (repository) => {
    repository.removeAllContentTypeParsers();
    // readJson, the /v2 inference and shared memory bodies' reader: the same answers to a
    // __proto__ key (bad_json), a body nested too deep (bad_input) and invalid JSON. A bare
    // JSON.parse took both of the first, and its messages were V8's.
    repository.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => {
      try {
        const bytes = body as Buffer;
        done(null, bytes.toString('latin1').trim() === '' ? {} : readJson(bytes));
      } catch (error) {
        done(error as Error, undefined);
      }
    });

    repository.post('/v2/repository/index', route, async (request, reply) => {
      try {
        const { ready = false } = bodyOf(request);
        // Triton's field is a bool: "yes" listed every model, as if not asked.
        if (typeof ready !== 'boolean')
          throw new BatchlineError('BAD_REQUEST', `"ready" must be true or false, got ${JSON.stringify(ready)}`);
        json(reply, 200, await repositoryIndex(runtime, ready));
      } catch (error) {
        refuse(reply, error);
      }
    });

    repository.post('/v2/repository/models/:name/load', route, async (request, reply) => {
      const { name } = request.params as { name: string };
      try {
        const { parameters = {} } = bodyOf(request);
        if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters))
          throw new BatchlineError('BAD_REQUEST', `"parameters" must be a JSON object`);
        await loadRepositoryModel(runtime, name, Object.keys(parameters));
        json(reply, 200, {});
      } catch (error) {
        refuse(reply, error);
      }
    });

    repository.post('/v2/repository/models/:name/unload', route, async (request, reply) => {
      const { name } = request.params as { name: string };
      try {
        bodyOf(request);
        await unloadRepositoryModel(runtime, name);
        json(reply, 200, {});
      } catch (error) {
        refuse(reply, error);
      }
    });
  });
}

/** The request's JSON object (an empty body is `{}`). */
function bodyOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body ?? {};
  // Plain objects only: readJson reads an array of numbers as a JsonNumbers, no Array.
  if (typeof body !== 'object' || body === null || Object.getPrototypeOf(body) !== Object.prototype)
    throw new BatchlineError('BAD_REQUEST', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}
