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
 *   `contents` sent in two parts lost the first;
 * - so is a map entry's message value given twice in the entry (the entry is a message of its
 *   own on the wire): protobufjs kept the last, so an `unload_dependents` of a bool_param and
 *   then an empty value was read as no choice and refused.
 * Wraps the decoder its parents call too (`types[i].decode`); a type with none of them is left as is.
 */
function proto3Decoding(type: protobuf.Type): void {
  const messageFields = type.fieldsArray.filter(
    (field) => !field.repeated && field.resolvedType instanceof protobuf.Type,
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

/** The tag of a map entry's value (field 2, length-delimited: a message). */
const ENTRY_VALUE_TAG = (2 << 3) | 2;

/**
 * Whether one of `messageFields` comes more than once in the message's bytes `buf[start, end)`,
 * or, of a map of them, an entry holds its value more than once.
 */
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
    const field = type.fieldsById[tag >>> 3] as protobuf.Field;
    const index = messageFields.indexOf(field);
    if (index >= 0 && (tag & 7) === 2) {
      if (field.map) {
        if (entryValues(scan) > 1) return true;
        continue;
      }
      if (index < 31 && (seen & (1 << index)) !== 0) return true;
      if (index < 31) seen |= 1 << index;
    }
    scan.skipType(tag & 7);
  }
  return false;
}

/** How many times the map entry at `scan` (its length next) holds its value; `scan` is left after the entry. */
function entryValues(scan: protobuf.Reader): number {
  const end = scan.uint32() + scan.pos;
  let values = 0;
  while (scan.pos < end) {
    const tag = scan.uint32();
    if (tag === ENTRY_VALUE_TAG) values++;
    scan.skipType(tag & 7);
  }
  return values;
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
  // Of a map, each key's last entry's values (proto3: the last entry of a key wins).
  const entries = new Map<protobuf.Field, Map<string, Uint8Array[]>>();
  const scan = protobuf.Reader.create(bytes);
  while (scan.pos < scan.len) {
    const tag = scan.uint32();
    const field = type.fieldsById[tag >>> 3];
    if (field?.partOf) lastMember.set(field.partOf, field.name);
    if (field !== undefined && messageFields.includes(field) && (tag & 7) === 2) {
      const payload = scan.bytes();
      if (field.map) {
        const [key, values] = entryOf(field, payload);
        const byKey = entries.get(field) ?? new Map<string, Uint8Array[]>();
        entries.set(field, byKey.set(key, values));
      } else occurrences.set(field, [...(occurrences.get(field) ?? []), payload]);
    } else scan.skipType(tag & 7);
  }
  const merged = (field: protobuf.Field, payloads: Uint8Array[]) =>
    (field.resolvedType as protobuf.Type).decode(Buffer.concat(payloads));
  for (const [field, payloads] of occurrences) if (payloads.length > 1) message[field.name] = merged(field, payloads);
  for (const [field, byKey] of entries)
    for (const [key, values] of byKey)
      if (values.length > 1) (message[field.name] as Record<string, unknown>)[key] = merged(field, values);
  for (const [oneof, kept] of lastMember)
    for (const member of oneof.fieldsArray) if (member.name !== kept) delete message[member.name];
  return message as unknown as protobuf.Message;
}

/** A map entry's key, as protobufjs names it in the decoded map, and the payloads of its values. */
function entryOf(field: protobuf.Field, entry: Uint8Array): [string, Uint8Array[]] {
  const keyType = (field as unknown as protobuf.MapField).keyType;
  let key: unknown = keyType === 'string' ? '' : keyType === 'bool' ? false : 0;
  const values: Uint8Array[] = [];
  const scan = protobuf.Reader.create(entry);
  while (scan.pos < scan.len) {
    const tag = scan.uint32();
    if (tag === ENTRY_VALUE_TAG) values.push(scan.bytes());
    else if (tag >>> 3 === 1) key = (scan as unknown as Record<string, () => unknown>)[keyType]!.call(scan);
    else scan.skipType(tag & 7);
  }
  const name = typeof key === 'object' ? protobuf.util.longToHash(key as protobuf.Long) : String(key);
  return [name, values];
}

/** A message type of the inference package, e.g. `ModelInferRequest`. */
export function inferenceType(name: string): protobuf.Type {
  return protoRoot().lookupType(`inference.${name}`);
}
