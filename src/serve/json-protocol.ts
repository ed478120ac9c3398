import type { FastifyRequest } from 'fastify';
import { BatchlineError, errorBody } from '../errors.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import { decodeMsgpackItem, isMsgpackType } from '../protocol/msgpack.js';
import type { InferenceCodec } from './protocol.js';
import { contentCodingOf, unsupportedEncoding } from './content-coding.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * batchline's own JSON: `{"inputs": …}` in (one item, nested arrays, or an object of them by
 * input name), the model's reply body out, `{"error": {"code", "message"}}` for errors.
 * `/models/{name}/predict` also takes `{"data": …}`, which clients of that route send.
 */
export function jsonProtocol(options: { acceptData: boolean }): InferenceCodec<ItemTensors> {
  const wants = options.acceptData ? 'an "inputs" (or "data") field' : 'an "inputs" field';
  return {
    name: options.acceptData ? 'batchline-json (inputs or data)' : 'batchline-json',
    contentType: JSON_CONTENT_TYPE,
    decode(request: FastifyRequest, model: ServedModel): ItemTensors {
      // A body that parsed as JSON despite a Content-Encoding header is refused all the same.
      const encoding = contentCodingOf(request);
      if (encoding !== undefined && encoding !== 'identity') throw unsupportedEncoding(encoding);
      const body = request.body as { inputs?: unknown; data?: unknown } | undefined;
      // No body at all (and no content type, so Fastify parsed nothing): as for an empty JSON body.
      if (body === undefined)
        throw new BatchlineError('BAD_JSON', `the body is empty; send a JSON object with ${wants}`);
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new BatchlineError('BAD_INPUT', `the body must be a JSON object with ${wants}`);
      const given = options.acceptData && body.inputs === undefined ? body.data : body.inputs;
      if (isMsgpackType(request.headers['content-type']))
        return decodeMsgpackItem(body, given, model.inputSchema !== undefined, model);
      return model.decode(given);
    },
    rowsOf: (item) => [item],
    encodeRows: (requestId, outputs, model) => model.replyBody(requestId, outputs[0]!, model.outputs),
    encodeError: (error) => JSON.stringify(errorBody(error.code, error.message)),
  };
}

/** POST /v1/infer's wire format. */
export const BATCHLINE_JSON = jsonProtocol({ acceptData: false });
