import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AdmissionContext } from './admission.js';
import { admit } from './admit.js';
import { Answer, RouteAnswers } from './answer.js';
import { BATCHLINE_JSON, jsonProtocol } from './json-protocol.js';
import { byAccept } from './msgpack-protocol.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import type { InferenceCodec } from './protocol.js';
import type { ModelRef, Targets } from './target.js';

/** `/models/{name}/predict` takes `{"data": …}`, as its clients send it, besides `{"inputs": …}`. */
const PREDICT_JSON = jsonProtocol({ acceptData: true });

/**
 * The inference routes of batchline's JSON: `POST /v1/infer` (the default model) and
 * `POST /models/{name}/predict[?version=V]` (a model by name). Bodies are JSON or
 * MessagePack (tensor-body-parsers.ts); the answer is MessagePack when Accept asks for it. Each
 * request's target is resolved once (target.ts), then it is admitted into its model version's
 * batcher and answered when its outcome arrives; the handlers are synchronous and return
 * nothing (see `admit`).
 */
export function registerInferRoutes(app: FastifyInstance, targets: Targets, context: AdmissionContext): void {
  const route = (
    path: string,
    codecOf: (request: FastifyRequest) => InferenceCodec<ItemTensors>,
    refOf: (request: FastifyRequest) => ModelRef,
  ) => {
    const answers = new RouteAnswers(codecOf, (request) => targets.resolve(refOf(request)).counters);
    app.post(path, {
      config: { answers },
      handler: (request: FastifyRequest, reply: FastifyReply) => {
        const target = targets.resolve(refOf(request));
        const codec = codecOf(request);
        const answer = new Answer(reply, codec, target.counters);
        if (target.refusal !== undefined) return void answer.error(target.refusal);
        admit(request, answer, target.version, codec, context);
      },
    });
  };
  route('/v1/infer', byAccept(BATCHLINE_JSON), () => DEFAULT_MODEL);
  route('/models/:name/predict', byAccept(PREDICT_JSON), (request) => ({
    name: (request.params as { name: string }).name,
    version: (request.query as { version?: unknown } | undefined)?.version,
  }));
}

/** `/v1/infer` names no model: the default one, its latest version. */
const DEFAULT_MODEL: ModelRef = { name: undefined };
