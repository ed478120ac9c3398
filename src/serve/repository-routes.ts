import { join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { effectiveConfig, snakeCase } from './model-config.js';
import { MODEL_NAME_PATTERN, scanModel, scanRepository } from './repository.js';
import { Answer, RouteAnswers } from './answer.js';
import { OIP_ERRORS } from './oip-protocol.js';
import type { ServingRuntime } from './serving-runtime.js';
import { optionSourcesOf } from './version-log.js';

/** Triton's names of a version's states in the repository index. */
const INDEX_STATES: Readonly<Record<string, string>> = {
  loading: 'LOADING',
  ready: 'READY',
  draining: 'UNLOADING',
  unavailable: 'UNAVAILABLE',
};

/**
 * Triton's model repository extension, inside the admin API's scope (so behind its bearer
 * token): `POST /v2/repository/index` lists the repository's models and versions with their
 * state, `POST /v2/repository/models/{m}/load` serves a model's versions as its config.json's
 * version policy selects them from disk (loading those not served, unloading those no longer
 * selected), `…/unload` drains and removes every version of it. Bodies are read as JSON whatever
 * their Content-Type (tritonclient sends none). Answers: 200 with `{}` (index: the list), errors
 * `{"error": message}` as every /v2 route's.
 */
export function registerRepositoryRoutes(scope: FastifyInstance, runtime: ServingRuntime): void {
  const json = (reply: FastifyReply, status: number, body: unknown): void =>
    new Answer(reply, OIP_ERRORS, undefined).json(body, status);
  const refuse = (reply: FastifyReply, error: unknown): void =>
    void new Answer(reply, OIP_ERRORS, undefined).error(error);
  // A body that is not JSON is refused by the parser, before a handler: in the protocol's format too.
  const route = { config: { answers: new RouteAnswers(() => OIP_ERRORS) } };
  scope.register(async (repository) => {
    repository.removeAllContentTypeParsers();
    repository.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
      try {
        done(null, (body as string).trim() === '' ? {} : JSON.parse(body as string));
      } catch (error) {
        done(new BatchlineError('BAD_JSON', (error as Error).message), undefined);
      }
    });

    repository.post('/v2/repository/index', route, async (request, reply) => {
      try {
        const { ready } = bodyOf(request);
        const dir = directory(runtime);
        const onDisk = await scanRepository(dir).catch(() => []);
        const rows: { name: string; version?: string; state?: string; reason?: string }[] = [];
        for (const model of onDisk) {
          const served = runtime.registry.versionsOf(model.name);
          if (served.length === 0 && ready !== true)
            rows.push({ name: model.name, state: 'UNAVAILABLE', reason: 'unloaded' });
          for (const version of served) {
            const { state, reason } = version.status;
            if (ready === true && !version.acceptsWork) continue;
            rows.push({
              name: model.name,
              version: String(version.version),
              state: INDEX_STATES[state] ?? 'UNAVAILABLE',
              ...(reason === undefined ? {} : { reason }),
            });
          }
        }
        json(reply, 200, rows);
      } catch (error) {
        refuse(reply, error);
      }
    });

    repository.post('/v2/repository/models/:name/load', route, async (request, reply) => {
      const { name } = request.params as { name: string };
      try {
        const body = bodyOf(request);
        if (body.parameters !== undefined && Object.keys(body.parameters as object).length > 0)
          throw new BatchlineError(
            'INVALID_MODEL_CONFIG',
            'load parameters (a config or files sent with the request) are not served: put them in the repository',
          );
        if (!MODEL_NAME_PATTERN.test(name)) throw new BatchlineError('MODEL_NOT_FOUND', `'${name}'`);
        const dir = directory(runtime);
        const model = await scanModel(dir, name).catch((error: unknown) => {
          throw new BatchlineError('MODEL_NOT_FOUND', `'${name}' in the repository: ${(error as Error).message}`);
        });
        const config = effectiveConfig(runtime.config, model.config.options);
        const optionSources = optionSourcesOf(model.config.options, join(dir, name, 'config.json'), snakeCase);
        const wanted = new Set(model.versions.map((v) => v.version));
        const served = runtime.registry.versionsOf(name);
        for (const { version, path, labelsPath } of model.versions) {
          if (served.some((v) => v.version === version)) continue;
          const labels = labelsPath === undefined ? {} : { labelsPath };
          await runtime.register(
            { name, version, path, config, optionSources, parameters: model.config.parameters, ...labels },
            true,
          );
        }
        for (const version of served) if (!wanted.has(version.version)) await runtime.deregister(version);
        json(reply, 200, {});
      } catch (error) {
        refuse(reply, error);
      }
    });

    repository.post('/v2/repository/models/:name/unload', route, async (request, reply) => {
      const { name } = request.params as { name: string };
      try {
        bodyOf(request);
        const served = runtime.registry.versionsOf(name);
        if (served.length === 0) throw new BatchlineError('MODEL_NOT_FOUND', `'${name}' is not loaded`);
        await Promise.all(served.map((version) => runtime.deregister(version)));
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
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new BatchlineError('BAD_REQUEST', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

function directory(runtime: ServingRuntime): string {
  const dir = runtime.config.modelRepository;
  if (dir === undefined)
    throw new BatchlineError(
      'BAD_MODEL_PATH',
      'this server was started without --model-repository; the repository extension loads models only from one',
    );
  return dir;
}
