import type { FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { jsonTextOf } from '../model/json-items.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import type { OipRequest } from '../protocol/oip-decoded-request.js';
import { decodeOipRequest } from '../protocol/oip-request.js';
import { encodeOipAnswer, encodeOipError } from '../protocol/oip-response.js';
import { readJson } from '../protocol/json-reader.js';
import type { SharedMemoryAccess } from '../protocol/shared-memory-parameters.js';
import { oipBodyOf } from './oip-body.js';
import type { Encoded, ErrorFormat, InferenceCodec } from './protocol.js';

/** What an inference answer names: the model version a request was admitted into. */
export interface OipVersion {
  readonly name: string;
  readonly version: number;
  readonly config: { readonly maxBatchSize: number };
}

const JSON_TYPE = 'application/json';

/** Every error of the Open Inference Protocol routes: `{"error": "<message>"}`, the status from the error table. */
export const OIP_ERRORS: ErrorFormat = {
  contentType: JSON_TYPE,
  encodeError: (error) => encodeOipError(error.message),
};

const plainCache = new WeakMap<OipVersion, InferenceCodec<OipRequest>>();
const cacheWithSharedMemory = new WeakMap<OipVersion, InferenceCodec<OipRequest>>();

/**
 * The Open Inference Protocol's inference request and answer for one model version: the body
 * (JSON, or JSON and binary tensors by Inference-Header-Content-Length) decoded into rows of at
 * most the version's max batch size, the answer stacked back and named after the version. With
 * `sharedMemory` (`--allow-client-shm`), inputs and outputs may name registered regions.
 */
export function oipCodecFor(version: OipVersion, sharedMemory?: SharedMemoryAccess): InferenceCodec<OipRequest> {
  const cache = sharedMemory === undefined ? plainCache : cacheWithSharedMemory;
  let codec = cache.get(version);
  if (codec !== undefined) return codec;
  const encodeRows = (outputs: readonly ItemTensors[], decoded: OipRequest): Encoded => {
    const encoded = encodeOipAnswer({
      modelName: version.name,
      modelVersion: String(version.version),
      id: decoded.id,
      outputs: decoded.outputs,
      rows: outputs,
    });
    if (encoded.headerLength === undefined) return encoded.body;
    return {
      body: encoded.body,
      contentType: encoded.contentType,
      headers: { 'inference-header-content-length': String(encoded.headerLength) },
    };
  };
  codec = {
    ...OIP_ERRORS,
    name: 'open-inference-protocol',
    decode: (request, model) => {
      const decoded = decodeOipRequest(
        oipBodyOf(request),
        headerLengthOf(request),
        model,
        version.config.maxBatchSize,
        sharedMemory,
      );
      return withJsonRowsChecked(decoded, model);
    },
    rowsOf: (decoded) => decoded.items,
    rowName: (_decoded, index, model) => oipRowName(model, index),
    scheduleOf: (decoded) => decoded.schedule,
    encodeRows: (_requestId, outputs, _model, decoded) => encodeRows(outputs, decoded),
  };
  cache.set(version, codec);
  return codec;
}

/** `Inference-Header-Content-Length`: the bytes of JSON before binary data, or undefined (JSON alone). */
function headerLengthOf(request: FastifyRequest): number | undefined {
  const given = request.headers['inference-header-content-length'];
  if (given === undefined) return undefined;
  if (typeof given !== 'string' || !/^\d{1,15}$/.test(given.trim()))
    throw new BatchlineError(
      'BAD_HEADER',
      `Inference-Header-Content-Length must be a whole number of bytes, got '${String(given)}'`,
    );
  return Number(given);
}

/**
 * How the protocol's refusals name a row of a request of several: a JSON model's `json[1]` (its
 * one BYTES input's element, as `withJsonRowsChecked` names it), any other model's `row 1` (the
 * index in every input's first dimension).
 */
export function oipRowName(model: Pick<ServedModel, 'inputSchema'>, index: number): string {
  return model.inputSchema === undefined ? `row ${index}` : `json[${index}]`;
}

/**
 * A JSON model's rows arrive over the Open Inference Protocol (HTTP or gRPC) as BYTES elements of
 * JSON text: each is checked by the model's schema and given its defaults, as on /v1, before the
 * queue. Other models' rows are returned as they are.
 */
export function withJsonRowsChecked(decoded: OipRequest, model: ServedModel): OipRequest {
  if (model.inputSchema === undefined) return decoded;
  const several = decoded.items.length > 1;
  return {
    ...decoded,
    items: decoded.items.map((item, i) => {
      try {
        return model.decode(jsonValueOf(item));
      } catch (error) {
        // Of several rows, the client is told which one is at fault.
        if (!several || !(error instanceof BatchlineError) || error.code !== 'BAD_INPUT') throw error;
        throw new BatchlineError('BAD_INPUT', `json[${i}]: ${error.detail.replace(/^json: /, '')}`);
      }
    }),
  };
}

/**
 * The JSON value a row of a JSON model's `json` BYTES input carries, read as /v1 reads a body
 * (`readJson`: at most 64 levels deep): the schema check walks the value recursively, and a text
 * nested 100,000 deep overflowed its stack, a 500 for a client's bad item.
 */
function jsonValueOf(item: ItemTensors): unknown {
  try {
    return readJson(Buffer.from(jsonTextOf(item)), 'the element');
  } catch (error) {
    if (error instanceof BatchlineError && error.code === 'BAD_JSON')
      throw new BatchlineError('BAD_INPUT', `json: each element must be a JSON text (${error.detail})`);
    throw error;
  }
}
