import type { PackageDefinition } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { HEALTH_PROTO, INFERENCE_PROTO } from './grpc-service-proto.js';

let root: protobuf.Root | undefined;

/** The inference and health protos, parsed once (field names as the proto writes them: `model_name`). */
export function protoRoot(): protobuf.Root {
  if (root !== undefined) return root;
  const parsed = new protobuf.Root();
  protobuf.parse(INFERENCE_PROTO, parsed, { keepCase: true });
  protobuf.parse(HEALTH_PROTO, parsed, { keepCase: true });
  root = parsed;
  return root;
}

/** A message type of the inference package, e.g. `ModelInferRequest`. */
export function inferenceType(name: string): protobuf.Type {
  return protoRoot().lookupType(`inference.${name}`);
}

/**
 * The services as grpc-js takes them: int64s as numbers (shapes, timeouts and priorities all fit
 * a double), enums by name, oneofs named, absent fields at their defaults.
 */
export async function packageDefinition(): Promise<PackageDefinition> {
  const { fromJSON } = await import('@grpc/proto-loader');
  return fromJSON(protoRoot().toJSON(), { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
}
