import fc from 'fast-check';
import protobuf from 'protobufjs';
import { protoRoot } from '../../src/protocol/grpc-proto-root.js';

/**
 * Valid requests of the gRPC methods besides inference (liveness, readiness, metadata, config,
 * statistics, the repository and shared memory calls, health's Check), and their bytes mutated:
 * a bit flipped, the message cut, bytes appended, a field given twice (at the top or inside a
 * map entry, where proto3 merges a message and keeps a oneof's last member). What they must
 * answer is judged by the fuzz, not here: never INTERNAL or UNKNOWN, once.
 */
export interface MethodProbe {
  /** The call's path, `/inference.GRPCInferenceService/ModelReady`. */
  path: string;
  label: string;
  bytes: Buffer;
}

const INFERENCE = '/inference.GRPCInferenceService';
const MODELS = ['toy', 'triple', 'greet', 'nope', ''];
const VERSIONS = ['', '1', '2', 'v1', '-1'];

const encode = (type: string, message: object): Buffer => {
  const found = protoRoot().lookupType(type);
  return Buffer.from(found.encode(found.fromObject(message)).finish());
};

const modelRef = fc.record({ name: fc.constantFrom(...MODELS), version: fc.constantFrom(...VERSIONS) });
const repositoryParameter = fc.oneof(
  fc.record({ bool_param: fc.boolean() }),
  fc.record({ int64_param: fc.integer({ min: -5, max: 5 }) }),
  fc.record({ string_param: fc.constantFrom('', 'yes', '{}') }),
  fc.record({ bytes_param: fc.constantFrom(Buffer.from('{}'), Buffer.alloc(0)) }),
);
const repositoryRequest = fc.record(
  {
    repository_name: fc.constantFrom('', 'models'),
    model_name: fc.constantFrom(...MODELS),
    parameters: fc.dictionary(
      fc.constantFrom('unload_dependents', 'config', 'file:1/model.onnx'),
      repositoryParameter,
      {
        maxKeys: 2,
      },
    ),
  },
  { requiredKeys: ['model_name'] },
);

/** A method, its request type and valid requests of it. */
const METHODS: readonly [string, string, fc.Arbitrary<object>][] = [
  [`${INFERENCE}/ServerLive`, 'inference.ServerLiveRequest', fc.constant({})],
  [`${INFERENCE}/ServerReady`, 'inference.ServerReadyRequest', fc.constant({})],
  [`${INFERENCE}/ServerMetadata`, 'inference.ServerMetadataRequest', fc.constant({})],
  [`${INFERENCE}/ModelReady`, 'inference.ModelReadyRequest', modelRef],
  [`${INFERENCE}/ModelMetadata`, 'inference.ModelMetadataRequest', modelRef],
  [`${INFERENCE}/ModelConfig`, 'inference.ModelConfigRequest', modelRef],
  [`${INFERENCE}/ModelStatistics`, 'inference.ModelStatisticsRequest', modelRef],
  [
    `${INFERENCE}/RepositoryIndex`,
    'inference.RepositoryIndexRequest',
    fc.record({ repository_name: fc.constantFrom('', 'models'), ready: fc.boolean() }),
  ],
  [`${INFERENCE}/RepositoryModelLoad`, 'inference.RepositoryModelLoadRequest', repositoryRequest],
  [`${INFERENCE}/RepositoryModelUnload`, 'inference.RepositoryModelUnloadRequest', repositoryRequest],
  [
    `${INFERENCE}/SystemSharedMemoryStatus`,
    'inference.SystemSharedMemoryStatusRequest',
    fc.record({ name: fc.constantFrom('', 'r0') }),
  ],
  [
    `${INFERENCE}/SystemSharedMemoryRegister`,
    'inference.SystemSharedMemoryRegisterRequest',
    fc.record({
      name: fc.constantFrom('', 'r0'),
      key: fc.constantFrom('', '/batchline-fuzz-none', '../x'),
      offset: fc.constantFrom(0, 8, 2 ** 40),
      byte_size: fc.constantFrom(0, 16, 2 ** 40),
    }),
  ],
  [
    `${INFERENCE}/SystemSharedMemoryUnregister`,
    'inference.SystemSharedMemoryUnregisterRequest',
    fc.record({ name: fc.constantFrom('', 'r0') }),
  ],
  [
    '/grpc.health.v1.Health/Check',
    'grpc.health.v1.HealthCheckRequest',
    fc.record({ service: fc.constantFrom('', 'inference.GRPCInferenceService', 'nope') }),
  ],
];

/** The valid request of each method, one of its arbitraries' values. */
export const validMethodProbe: fc.Arbitrary<MethodProbe> = fc.constantFrom(...METHODS).chain(([path, type, request]) =>
  request.map((message) => ({
    path,
    label: `${path.split('/').pop()} ${JSON.stringify(message)}`,
    bytes: encode(type, message),
  })),
);

/** The spans of `bytes`' fields, read as a message's (none past the first that is no field). */
function fieldSpans(bytes: Uint8Array): [number, number][] {
  const spans: [number, number][] = [];
  const reader = protobuf.Reader.create(bytes);
  try {
    while (reader.pos < reader.len) {
      const start = reader.pos;
      const tag = reader.uint32();
      reader.skipType(tag & 7);
      spans.push([start, reader.pos]);
    }
  } catch {
    // the rest is no field: the spans before it stand
  }
  return spans;
}

/**
 * `bytes` with one of its fields given again, right after itself; in a map entry (field 3 of a
 * repository request), maybe the entry's value given again inside the entry.
 */
function duplicatedField(bytes: Buffer, pick: number, inside: boolean): Buffer {
  const spans = fieldSpans(bytes);
  if (spans.length === 0) return Buffer.concat([bytes, bytes]);
  const [start, end] = spans[pick % spans.length] as [number, number];
  const field = bytes.subarray(start, end);
  const reader = protobuf.Reader.create(field);
  const tag = reader.uint32();
  if (inside && (tag & 7) === 2) {
    const payload = reader.bytes();
    const inner = fieldSpans(payload);
    if (inner.length > 0) {
      const [from, to] = inner[pick % inner.length] as [number, number];
      const grown = Buffer.concat([payload.subarray(0, to), payload.subarray(from, to), payload.subarray(to)]);
      const rewritten = Buffer.from(protobuf.Writer.create().uint32(tag).bytes(grown).finish());
      return Buffer.concat([bytes.subarray(0, start), rewritten, bytes.subarray(end)]);
    }
  }
  return Buffer.concat([bytes.subarray(0, end), field, bytes.subarray(end)]);
}

type Mutation = (bytes: Buffer) => fc.Arbitrary<[string, Buffer]>;

const MUTATIONS: readonly Mutation[] = [
  (bytes) =>
    fc.tuple(fc.nat(), fc.integer({ min: 0, max: 7 })).map(([at, bit]) => {
      const flipped = Buffer.from(bytes.length === 0 ? [0] : bytes);
      const i = at % flipped.length;
      flipped[i] = (flipped[i] as number) ^ (1 << bit);
      return [`bit ${bit} of byte ${i} flipped`, flipped];
    }),
  (bytes) => fc.nat().map((at) => [`cut at ${at % (bytes.length + 1)}`, bytes.subarray(0, at % (bytes.length + 1))]),
  (bytes) =>
    fc
      .uint8Array({ minLength: 1, maxLength: 12 })
      .map((tail) => [`${tail.length} bytes appended`, Buffer.concat([bytes, Buffer.from(tail)])]),
  (bytes) =>
    fc
      .tuple(fc.nat(), fc.boolean())
      .map(([pick, inside]) => [
        `a field given twice${inside ? ' inside it' : ''}`,
        duplicatedField(bytes, pick, inside),
      ]),
];

/** A valid request of a method, its bytes mutated once or twice. */
export const mutatedMethodProbe: fc.Arbitrary<MethodProbe> = validMethodProbe.chain((probe) =>
  fc
    .array(fc.constantFrom(...MUTATIONS), { minLength: 1, maxLength: 2 })
    .chain((mutations) =>
      mutations.reduce<fc.Arbitrary<MethodProbe>>(
        (arbitrary, mutation) =>
          arbitrary.chain((before) =>
            mutation(before.bytes).map(([said, bytes]) => ({ ...before, label: `${before.label}, ${said}`, bytes })),
          ),
        fc.constant(probe),
      ),
    ),
);
