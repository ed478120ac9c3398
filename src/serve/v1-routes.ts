import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { readJson } from '../protocol/json-reader.js';
import type { AdmissionContext } from './admission.js';
import { admit } from './admit.js';
import { Answer, RouteAnswers } from './answer.js';
import { collectBody } from './oip-body.js';
import type { ModelRef, Targets } from './target.js';
import { V1_ERRORS, V1_PREDICT } from './v1-protocol.js';

/**
 * A path segment that ends `:verb`: Fastify's `::` is a literal colon, and the name's pattern
 * keeps the colon out of the parameter (without it, `:name::predict` became one parameter named
 * `name::predict` that took `m:classify` too). Model names have no colon (MODEL_NAME_PATTERN).
 */
const NAME = ':name(^[^:/]+)';
const VERSION = ':version(^[^:/]+)';

/** TF Serving's other verbs on a model, which batchline does not serve: 404 saying so, in the protocol's shape. */
const NOT_SERVED: Readonly<Record<string, string>> = {
  classify: "TF Serving's classify API is not served (its models take tf.Example protos); use :predict",
  regress: "TF Serving's regress API is not served (its models take tf.Example protos); use :predict",
  explain: "KServe's explain API is not served; use :predict",
};

/**
 * TensorFlow Serving's REST predict, which is KServe's V1 protocol: `POST
 * /v1/models/{name}[/versions/{v}]:predict` (v1-protocol.ts). Bodies are read as JSON whatever
 * their Content-Type, as TF Serving and KServe read them (their docs' `curl -d` sends a form's),
 * up to --body-limit-bytes; errors are `{"error": "<message>"}` (with the table's `code`), and the
 * answers are counted against the model as every HTTP inference answer is.
 */
export function registerV1PredictRoutes(app: FastifyInstance, targets: Targets, context: AdmissionContext): void {
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (request, payload, done) =>
      collectBody(request, payload, (error, body) => {
        if (error !== null) return done(error, undefined);
        if (body!.length === 0) return done(null, undefined);
        try {
          done(null, readJson(Buffer.concat(body!.chunks, body!.length)));
        } catch (refused) {
          done(refused as Error, undefined);
        }
      }),
    );
    const refOf = (request: FastifyRequest): ModelRef => request.params as { name: string; version?: string };
    const answers = new RouteAnswers(
      () => V1_ERRORS,
      (request) => targets.resolve(refOf(request)).counters,
    );
    const predict = (request: FastifyRequest, reply: FastifyReply): void => {
      const target = targets.resolve(refOf(request));
      const answer = new Answer(reply, V1_ERRORS, target.counters);
      if (target.refusal !== undefined) return void answer.error(target.refusal);
      admit(request, answer, target.version, V1_PREDICT, context);
    };
    const plain = new RouteAnswers(() => V1_ERRORS);
    for (const path of [`/v1/models/${NAME}`, `/v1/models/:name/versions/${VERSION}`]) {
      scope.post(`${path}::predict`, { config: { answers } }, predict);
      for (const [verb, reason] of Object.entries(NOT_SERVED))
        scope.post(`${path}::${verb}`, { config: { answers: plain } }, (request, reply) => {
          new Answer(reply, V1_ERRORS, undefined).error(
            new BatchlineError('NOT_FOUND', `${request.method} ${request.url.split('?')[0]!}: ${reason}`),
          );
        });
    }
  });
}
