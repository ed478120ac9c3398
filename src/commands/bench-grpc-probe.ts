import { createRequire } from 'node:module';
import type * as GrpcJs from '@grpc/grpc-js';
import { inferenceType } from '../protocol/grpc-proto-root.js';
import { madeUpOipBody, TOY_MODEL_OIP_BODY } from '../bench/default-body.js';

const require = createRequire(import.meta.url);

/** The Open Inference Protocol's metadata call, as its path travels in HTTP/2. */
const MODEL_METADATA_PATH = '/inference.GRPCInferenceService/ModelMetadata';
const TOY_MODEL_NAME = 'toy-logistic-v1';

/** What a gRPC server says of the URL's model before a run that was given no --body. */
export type GrpcModelProbe =
  /** A body made up from the model's metadata, and what it is for. */
  | { kind: 'generated'; body: string; about: string }
  /** The model is there, but only the user can say what to send (`why`). */
  | { kind: 'only-yours'; why: string }
  /** The server has no such model or version (NOT_FOUND, with its details). */
  | { kind: 'missing'; details: string }
  /** The server cannot read the URL's model or version (INVALID_ARGUMENT, with its details: batchline's `01`). */
  | { kind: 'refused'; details: string }
  /** UNAVAILABLE: a server still loading its models (batchline's not_ready), or one going away. */
  | { kind: 'unavailable' }
  /** No answer, or not the protocol's: nothing is known. */
  | { kind: 'unknown' };

interface MetadataMessage {
  name?: string;
  versions?: string[];
  inputs?: { name?: string; datatype?: string; shape?: number[] }[];
}

/**
 * Asks the server for the model's metadata once (ModelMetadata), as bench asks an HTTP target's
 * `/v1/stats`: so that a run against batchline's own gRPC port needs no --body when the model's
 * inputs have fixed shapes, and one against a model the server does not have stops before it
 * starts instead of loading the error path. Any other answer, or none within `timeoutMs`, is
 * `unknown`, and the run goes on as the user asked.
 */
export function probeGrpcModel(
  url: URL,
  model: { name: string; version: string },
  timeoutMs = 2000,
): Promise<GrpcModelProbe> {
  const grpc = require('@grpc/grpc-js') as typeof GrpcJs;
  const client = new grpc.Client(`${url.hostname}:${url.port}`, grpc.credentials.createInsecure());
  const request = inferenceType('ModelMetadataRequest');
  const response = inferenceType('ModelMetadataResponse');
  return new Promise<GrpcModelProbe>((resolve) => {
    client.makeUnaryRequest(
      MODEL_METADATA_PATH,
      (message: object) => Buffer.from(request.encode(request.fromObject(message)).finish()),
      (bytes: Buffer) =>
        response.toObject(response.decode(bytes), { longs: Number, defaults: true }) as MetadataMessage,
      { name: model.name, version: model.version },
      new grpc.Metadata(),
      { deadline: Date.now() + timeoutMs },
      (error, metadata) => {
        if (error !== null)
          return resolve(
            error.code === grpc.status.NOT_FOUND
              ? { kind: 'missing', details: error.details }
              : error.code === grpc.status.INVALID_ARGUMENT
                ? { kind: 'refused', details: error.details }
                : error.code === grpc.status.UNAVAILABLE
                  ? { kind: 'unavailable' }
                  : { kind: 'unknown' },
          );
        resolve(probeOf(model, metadata));
      },
    );
  }).finally(() => client.close());
}

function probeOf(model: { name: string; version: string }, metadata: MetadataMessage | undefined): GrpcModelProbe {
  if (metadata === undefined || !Array.isArray(metadata.inputs)) return { kind: 'unknown' };
  const version = model.version !== '' ? model.version : (metadata.versions?.[0] ?? 'latest');
  if (model.name === TOY_MODEL_NAME)
    return { kind: 'generated', body: TOY_MODEL_OIP_BODY, about: `${TOY_MODEL_NAME} version ${version}` };
  const unbatched = metadata.inputs.length === 0 || metadata.inputs.some((input) => input.shape?.[0] !== -1);
  const made = unbatched ? undefined : madeUpOipBody(metadata.inputs, { name: model.name, version });
  if (made !== undefined) return made;
  // The reason given: a model without a batch dimension first (Triton's max_batch_size 0) is not one of free size.
  const what = unbatched ? 'lists inputs without a batch dimension first' : 'has inputs of free size';
  return {
    kind: 'only-yours',
    why: `its model ${model.name} version ${version} ${what}, which only you can fill (ModelMetadata lists them)`,
  };
}
