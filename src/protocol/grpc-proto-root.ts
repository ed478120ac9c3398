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
  for (const type of typesOf(parsed)) proto3Decoding(type);
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
 * Makes `type`'s decoding read what protobufjs reads otherwise than proto3 (and Triton's C++
 * protobuf), on the bytes the message came in:
 * - of a oneof, only the member last on the wire counts: protobufjs kept every member given and
 *   named the one declared last, so an `InferParameter` of a string_param then an int64_param
 *   was read as the string and refused;
 * - a message field given twice is the two merged (its repeated fields joined: decoding the
 *   occurrences' bytes one after the other merges them): protobufjs kept the last, so an input's
 *   `contents` sent in two parts lost the first.
 * Wraps the decoder its parents call too (`types[i].decode`); a type with neither is left as is.
 */
function proto3Decoding(type: protobuf.Type): void {
  const messageFields = type.fieldsArray.filter(
    (field) => !field.repeated && !field.map && field.resolvedType instanceof protobuf.Type,
  );
  const oneofs = type.oneofsArray;
  if (oneofs.length === 0 && messageFields.length === 0) return;
  type.setup();
  const decode = type.decode.bind(type);
  type.decode = (from: protobuf.Reader | Uint8Array, length?: number) => {
    const reader = from instanceof protobuf.Reader ? from : protobuf.Reader.create(from);
    const start = reader.pos;
    const message = decode(reader, length) as unknown as Record<string, unknown>;
    // Almost every message has one member of each oneof and each message field once: checked
    // without allocating, the wrapper cost a small ModelInferRequest 3.8 µs a decode against 1.5.
    const mixed = oneofs.some((oneof) => membersSet(message, oneof) > 1);
    if (!mixed && !repeatsMessageField(reader.buf, start, reader.pos, type, messageFields))
      return message as unknown as protobuf.Message;
    return readAsProto3(message, reader.buf.subarray(start, reader.pos), type, messageFields);
  };
}

/** How many members of `oneof` the decoded message holds. */
function membersSet(message: Record<string, unknown>, oneof: protobuf.OneOf): number {
  let set = 0;
  for (const member of oneof.fieldsArray) if (Object.hasOwn(message, member.name)) set++;
  return set;
}

/** Whether one of `messageFields` comes more than once in the message's bytes `buf[start, end)`. */
function repeatsMessageField(
  buf: Uint8Array,
  start: number,
  end: number,
  type: protobuf.Type,
  messageFields: readonly protobuf.Field[],
): boolean {
  if (messageFields.length === 0) return false;
  const scan = protobuf.Reader.create(buf);
  scan.pos = start;
  scan.len = end;
  let seen = 0; // a bit per message field, by its index in messageFields (a handful per type)
  while (scan.pos < scan.len) {
    const tag = scan.uint32();
    const index = messageFields.indexOf(type.fieldsById[tag >>> 3] as protobuf.Field);
    if (index >= 0 && index < 31 && (tag & 7) === 2) {
      if ((seen & (1 << index)) !== 0) return true;
      seen |= 1 << index;
    }
    scan.skipType(tag & 7);
  }
  return false;
}

/** The decoded message read again as proto3 reads its bytes: the oneof member last on the wire, a message field's occurrences merged. */
function readAsProto3(
  message: Record<string, unknown>,
  bytes: Uint8Array,
  type: protobuf.Type,
  messageFields: readonly protobuf.Field[],
): protobuf.Message {
  const lastMember = new Map<protobuf.OneOf, string>();
  const occurrences = new Map<protobuf.Field, Uint8Array[]>();
  const scan = protobuf.Reader.create(bytes);
  while (scan.pos < scan.len) {
    const tag = scan.uint32();
    const field = type.fieldsById[tag >>> 3];
    if (field?.partOf) lastMember.set(field.partOf, field.name);
    if (field !== undefined && messageFields.includes(field) && (tag & 7) === 2) {
      const payload = scan.bytes();
      occurrences.set(field, [...(occurrences.get(field) ?? []), payload]);
    } else scan.skipType(tag & 7);
  }
  for (const [field, payloads] of occurrences)
    if (payloads.length > 1)
      message[field.name] = (field.resolvedType as protobuf.Type).decode(Buffer.concat(payloads));
  for (const [oneof, kept] of lastMember)
    for (const member of oneof.fieldsArray) if (member.name !== kept) delete message[member.name];
  return message as unknown as protobuf.Message;
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
