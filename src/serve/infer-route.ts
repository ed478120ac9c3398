import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { admit, type AdmissionContext } from './admit.js';
import { answerError } from './answer.js';
import { BATCHLINE_JSON } from './json-protocol.js';
import { byAccept } from './msgpack-protocol.js';
import type { AnswerRoute } from './routes.js';
import type { ServingRuntime } from './serving-runtime.js';

/**
 * POST /v1/infer: one item in batchline's JSON, admitted into the model's batcher and answered
 * when its outcome arrives. The handler is synchronous and returns nothing (see `admit`).
 */
export function registerInferRoute(app: FastifyInstance, runtime: ServingRuntime, context: AdmissionContext): void {
  // JSON or MessagePack bodies (tensor-body-parsers.ts); the answer in MessagePack when Accept asks.
  const protocolOf = byAccept(BATCHLINE_JSON);
  const config: AnswerRoute = { protocol: BATCHLINE_JSON, protocolOf, countersOf: () => runtime };
  app.post('/v1/infer', {
    config,
    handler: (request: FastifyRequest, reply: FastifyReply) => {
      const protocol = protocolOf(request);
      const loaded = runtime.runtime;
      if (runtime.state !== 'ready' || loaded === undefined) {
        const refusal = runtime.state === 'starting' ? new BatchlineError('NOT_READY', 'the model is loading') : new BatchlineError('SHUTTING_DOWN');
        answerError(reply, refusal, 'refused', protocol, runtime, context.server);
        return;
      }
      admit(request, reply, loaded, protocol, context);
    },
  });
}
