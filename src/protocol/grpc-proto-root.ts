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
  parsed.resolveAll();
  for (const type of typesOf(parsed)) if (type.oneofsArray.length > 0) lastOneofMemberWins(type);
  root = parsed;
  return root;
}

function typesOf(namespace: protobuf.NamespaceBase): protobuf.Type[] {
  return namespace.nestedArray.flatMap((nested) => [
    ...(nested instanceof protobuf.Type ? [nested] : []),
    ...(nested instanceof protobuf.Namespace ? typesOf(nested) : []),
  ]);
}

/**
 * Makes `type`'s decoding keep, of each oneof, only the member last on the wire, as proto3
 * reads it (and Triton's C++ protobuf). protobufjs keeps every member given and names the one
 * declared last: an `InferParameter` of a string_param then an int64_param was read as the
 * string and refused. Wraps the decoder its parents call too (`types[i].decode`).
 */
function lastOneofMemberWins(type: protobuf.Type): void {
  type.setup();
  const decode = type.decode.bind(type);
  type.decode = (from: protobuf.Reader | Uint8Array, length?: number) => {
    const reader = from instanceof protobuf.Reader ? from : protobuf.Reader.create(from);
    const start = reader.pos;
    const message = decode(reader, length) as unknown as Record<string, unknown>;
    const lastMember = new Map<protobuf.OneOf, string>();
    const scan = protobuf.Reader.create(reader.buf.subarray(start, reader.pos));
    while (scan.pos < scan.len) {
      const tag = scan.uint32();
      const field = type.fieldsById[tag >>> 3];
      if (field?.partOf !== null && field?.partOf !== undefined) lastMember.set(field.partOf, field.name);
      scan.skipType(tag & 7);
    }
    for (const [oneof, kept] of lastMember)
      for (const member of oneof.fieldsArray) if (member.name !== kept) delete message[member.name];
    return message as unknown as protobuf.Message;
  };
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
