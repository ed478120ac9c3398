import type { FastifyRequest } from 'fastify';
import type { BatchlineError } from '../errors.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import type { ScheduleParameters } from '../protocol/schedule-parameters.js';

/** An encoded body with its own content type and headers (OIP's binary answers need both). */
export interface EncodedBody {
  body: string | Buffer;
  contentType: string;
  headers?: Readonly<Record<string, string>>;
}

/** What a protocol's encoder returns: a body in the protocol's `contentType`, or an EncodedBody. */
export type Encoded = string | Buffer | EncodedBody;

/**
 * A wire format: a decoder of requests and an encoder of answers and errors, nothing else. It
 * decides no status, sets no header and counts nothing: `answer.ts` does that for every
 * protocol alike, from the error table. `Decoded` is what the decoder hands to the queue (one
 * item of the model's inputs) plus anything the encoder needs to shape the answer.
 */
export interface Protocol<Decoded = ItemTensors> {
  /** For logs and docs: `batchline-json`, … */
  readonly name: string;
  /** Content type of bodies the encoders return as a plain string or Buffer. */
  readonly contentType: string;
  /** Reads one request for `model`; throws a BatchlineError (BAD_JSON, BAD_INPUT, …) to refuse it. */
  decode(request: FastifyRequest, model: ServedModel): Decoded;
  /** The model's inputs of a decoded request: the item that joins a batch. */
  itemOf(decoded: Decoded): ItemTensors;
  /** The body of a successful answer. May throw (the answer is then a 500 model_failure). */
  encodeAnswer(requestId: string, outputs: ItemTensors, model: ServedModel, decoded: Decoded): Encoded;
  /** The body of an error answer (the status comes from the error table). */
  encodeError(error: BatchlineError, requestId: string): Encoded;
  /** The request's own priority and timeout, when its format carries them (Triton's schedule policy). */
  scheduleOf?(decoded: Decoded): ScheduleParameters;
}
