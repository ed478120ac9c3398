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

/** What an encoder returns: a body in its format's `contentType`, or an EncodedBody. */
export type Encoded = string | Buffer | EncodedBody;

/**
 * How a route writes its errors: every route has one (batchline's `{"error": {"code",
 * "message"}}`, the Open Inference Protocol's `{"error": message}`). It decides no status,
 * sets no header and counts nothing: the status comes from the error table (`answer.ts`).
 */
export interface ErrorFormat {
  /** Content type of bodies the encoders return as a plain string or Buffer. */
  readonly contentType: string;
  /** The body of an error answer. */
  encodeError(error: BatchlineError, requestId: string): Encoded;
}

/**
 * A wire format of inference: reads a request into the rows it carries (one item of the model's
 * inputs each: one for batchline's JSON, N for an OIP `shape [N, …]`) and writes the answer from
 * each row's outputs. Nothing else: no status, no header, no counter. `Decoded` is the decoded
 * request, kept for the encoder (the outputs an OIP request asked for, its id).
 */
export interface InferenceCodec<Decoded> extends ErrorFormat {
  /** For logs and docs: `batchline-json`, … */
  readonly name: string;
  /** Reads one request for `model`; throws a BatchlineError (BAD_JSON, BAD_INPUT, …) to refuse it. */
  decode(request: FastifyRequest, model: ServedModel): Decoded;
  /** The items a decoded request carries, in order: admitted together or refused together. */
  rowsOf(decoded: Decoded): readonly ItemTensors[];
  /** How its refusals name row `index` of a request of several (V1's `instances[1]`); `row 1` when it has no way of its own. */
  rowName?(decoded: Decoded, index: number, model: ServedModel): string;
  /** The request's own priority and timeout, when its format carries them (Triton's schedule policy). */
  scheduleOf?(decoded: Decoded): ScheduleParameters;
  /** The body of the answer, from each row's outputs in order. May throw (a 500 model_failure). */
  encodeRows(requestId: string, outputs: readonly ItemTensors[], model: ServedModel, decoded: Decoded): Encoded;
}
