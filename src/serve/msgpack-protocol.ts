import type { FastifyRequest } from 'fastify';
import { errorBody } from '../errors.js';
import { acceptsMsgpack, MSGPACK_CONTENT_TYPE, writeMsgpack } from '../protocol/msgpack.js';
import type { InferenceCodec } from './protocol.js';

/**
 * A batchline protocol that answers in MessagePack: it decodes as `json` does (the body parser
 * has already turned JSON or MessagePack into the same values) and encodes the same answer
 * object, `{"request_id", …}` or `{"error": {"code", "message"}}`, as MessagePack.
 */
function answeringInMsgpack<D>(json: InferenceCodec<D>): InferenceCodec<D> {
  return {
    name: `${json.name}, answered in MessagePack`,
    contentType: MSGPACK_CONTENT_TYPE,
    decode: (request, model) => json.decode(request, model),
    rowsOf: (decoded) => json.rowsOf(decoded),
    // The model's reply is written as JSON text; small next to the model's run, and the same object for both.
    encodeRows: (requestId, outputs, model, decoded) =>
      writeMsgpack(JSON.parse(json.encodeRows(requestId, outputs, model, decoded) as string)),
    encodeError: (error) => writeMsgpack(errorBody(error.code, error.message)),
  };
}

/** `json`, or its MessagePack-answering twin when the request's Accept prefers MessagePack. */
export function byAccept<D>(json: InferenceCodec<D>): (request: FastifyRequest) => InferenceCodec<D> {
  const msgpack = answeringInMsgpack(json);
  return (request) => (acceptsMsgpack(request.headers.accept) ? msgpack : json);
}
