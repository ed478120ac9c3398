import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { bytesOf, type BodyChunks } from '../protocol/body-chunks.js';
import { readJson } from '../protocol/json-reader.js';
import type { Answer, RouteAnswers } from './answer.js';
import type { SystemSharedMemory } from './system-shared-memory.js';

/** A register request's body is a few fields; Triton's HTTP limit for them is its body limit, this is plenty. */
const REGISTER_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Triton's system shared memory extension on `/v2` (with `--allow-client-shm`):
 * `GET /v2/systemsharedmemory[/region/{r}]/status` lists the regions (`[{"name", "key",
 * "offset", "byte_size"}]`), `POST …/region/{r}/register` registers one from
 * `{"key", "offset", "byte_size"}`, `POST /v2/systemsharedmemory[/region/{r}]/unregister`
 * unregisters one or all (a name not registered is no error, as in Triton). Register and
 * unregister answer `{}`; a refusal is 400 in Triton's words.
 */
export function registerSharedMemoryRoutes(
  scope: FastifyInstance,
  sharedMemory: SystemSharedMemory,
  answerOf: (reply: FastifyReply) => Answer,
  plain: RouteAnswers,
): void {
  const route = { config: { answers: plain } };
  const regionOf = (request: FastifyRequest): string | undefined => (request.params as { region?: string }).region;
  const attempt = (reply: FastifyReply, action: () => unknown): void => {
    let result: unknown;
    try {
      result = action();
    } catch (error) {
      if (error instanceof BatchlineError) return void answerOf(reply).error(error);
      throw error;
    }
    answerOf(reply).json(result ?? {});
  };
  for (const prefix of ['/systemsharedmemory', '/systemsharedmemory/region/:region']) {
    scope.get(`${prefix}/status`, route, (request, reply) =>
      attempt(reply, () => sharedMemory.status(regionOf(request))),
    );
    scope.post(`${prefix}/unregister`, route, (request, reply) =>
      attempt(reply, () => sharedMemory.unregister(regionOf(request))),
    );
    scope.post(`${prefix}/register`, { ...route, bodyLimit: REGISTER_BODY_LIMIT_BYTES }, (request, reply) =>
      attempt(reply, () =>
        sharedMemory.register(regionOf(request), registerBody(request.body as BodyChunks | undefined)),
      ),
    );
  }
}

/** The register request's JSON (an empty body is an empty request, as Triton reads it). */
function registerBody(body: BodyChunks | undefined): unknown {
  if (body === undefined || body.length === 0) return {};
  return readJson(bytesOf(body, 0, body.length), 'the body');
}
