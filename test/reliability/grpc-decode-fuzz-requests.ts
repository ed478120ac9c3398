import { status } from '@grpc/grpc-js';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { inferenceType } from '../../src/protocol/grpc-proto-root.js';
import {
  greeting,
  ODD_NUMBERS,
  type GreetItem,
  type Row,
  sameNumbers,
  toyScore,
  tripled,
  validGreetItem,
  validRow,
} from './decode-fuzz-rules.js';

/**
 * Valid `ModelInferRequest`s for the decode fuzz's three models, and mutations of them: of the
 * message (datatypes, shapes, contents of the wrong field or length, raw contents that lie,
 * NaN, unknown models and outputs, parameters of the wrong kind) and of its bytes (bits
 * flipped, the message cut, bytes added). Whether a probe is valid is decided by the rules of
 * `decode-fuzz-rules.ts` and the protocol's (one raw entry per input, its length the shape's),
 * never by the server's decoders.
 */
export interface GrpcProbe {
  label: string;
  /** The message's bytes on the wire. */
  bytes: Buffer;
  /** An OK answer's fault (undefined: right); no check: the probe must be refused. */
  check?: ResponseCheck;
  /** The statuses a refusal may have; empty: the probe must be answered OK. */
  refusals: readonly status[];
}

/** A decoded `ModelInferResponse` (proto field names, defaults filled). */
export type InferResponse = {
  model_name: string;
  id: string;
  outputs: { name: string; datatype: string; shape: number[]; contents?: Record<string, unknown[]> }[];
  raw_output_contents: Uint8Array[];
};
export type ResponseCheck = (response: InferResponse) => string | undefined;

const requestType = inferenceType('ModelInferRequest');
const responseType = inferenceType('ModelInferResponse');

export function decodeInferResponse(bytes: Buffer): InferResponse {
  return responseType.toObject(responseType.decode(bytes), {
    longs: Number,
    defaults: true,
    arrays: true,
    objects: true,
  }) as InferResponse;
}

const streamResponseType = inferenceType('ModelStreamInferResponse');

export function decodeStreamResponse(bytes: Buffer): { error_message: string; infer_response: InferResponse } {
  return streamResponseType.toObject(streamResponseType.decode(bytes), {
    longs: Number,
    defaults: true,
    arrays: true,
    objects: true,
  }) as { error_message: string; infer_response: InferResponse };
}

/** A request as protobufjs' `fromObject` takes it (int64s may be decimal strings). */
type RequestObject = {
  model_name: string;
  model_version?: string;
  id?: string;
  parameters?: Record<string, object>;
  inputs: { name: string; datatype: string; shape: (number | string)[]; contents?: Record<string, unknown[]> }[];
  outputs?: { name: string; parameters?: Record<string, object> }[];
  raw_input_contents?: Buffer[];
};

const encoded = (request: RequestObject): Buffer =>
  Buffer.from(requestType.encode(requestType.fromObject(request)).finish());

const INVALID = [status.INVALID_ARGUMENT] as const;
/** An unknown model or version: NOT_FOUND here, INVALID_ARGUMENT in Triton's words. */
const UNKNOWN = [status.NOT_FOUND, status.INVALID_ARGUMENT] as const;
/** A timeout of 0 or less may be read as one already passed. */
const PARAMETER_REFUSALS = [status.INVALID_ARGUMENT, status.DEADLINE_EXCEEDED] as const;

/** A valid request before its bytes, and what its answer must hold. */
interface Plan {
  label: string;
  request: RequestObject;
  check: ResponseCheck;
  /** The payload: numbers of rows (toy, triple) or greet's items. */
  kind: 'rows' | 'items';
  /** Where the values go: typed `contents` or `raw_input_contents`. */
  carrier: 'contents' | 'raw';
}

function float32Bytes(values: readonly number[]): Buffer {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes;
}

/** BYTES elements on the wire: each with its 4-byte little-endian length. */
function bytesElements(texts: readonly string[]): Buffer {
  return Buffer.concat(
    texts.map((text) => {
      const body = Buffer.from(text);
      const length = Buffer.alloc(4);
      length.writeUInt32LE(body.length);
      return Buffer.concat([length, body]);
    }),
  );
}

/** The FP32 values of output `index`: from raw contents, or typed ones. */
function fp32Output(response: InferResponse, index = 0): number[] | undefined {
  const raw = response.raw_output_contents[index];
  if (raw !== undefined) {
    const bytes = Buffer.from(raw);
    return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
  }
  return response.outputs[index]?.contents?.fp32_contents as number[] | undefined;
}

/** The BYTES values of output `index` as text: length-prefixed raw contents, or typed ones. */
function textOutput(response: InferResponse, index = 0): string[] | undefined {
  const raw = response.raw_output_contents[index];
  if (raw === undefined)
    return (response.outputs[index]?.contents?.bytes_contents as Uint8Array[] | undefined)?.map((b) =>
      Buffer.from(b).toString(),
    );
  const bytes = Buffer.from(raw);
  const texts: string[] = [];
  for (let at = 0; at < bytes.length; ) {
    const length = bytes.readUInt32LE(at);
    texts.push(bytes.toString('utf8', at + 4, at + 4 + length));
    at += 4 + length;
  }
  return texts;
}

/** Checks a tensor answer: model, id, the one output's name and shape, and its values. */
function tensorCheck(
  model: string,
  output: string,
  rows: readonly number[][],
  want: number[],
  id: string,
): ResponseCheck {
  return (response) => {
    if (response.model_name !== model) return `answered for model ${response.model_name}`;
    if (response.id !== id) return `id ${JSON.stringify(response.id)}, expected ${JSON.stringify(id)}`;
    const out = response.outputs[0];
    if (response.outputs.length !== 1 || out?.name !== output)
      return `outputs ${JSON.stringify(response.outputs.map((o) => o.name))}`;
    if (out.shape[0] !== rows.length) return `output shape [${out.shape.join(', ')}] for ${rows.length} rows`;
    const got = fp32Output(response);
    return sameNumbers(got, want, model === 'toy' ? 1e-6 : 0)
      ? undefined
      : `${output} ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`;
  };
}

/** The payloads: rows of three numbers in ±1000, greet's items. */
const value = fc.double({ min: -1000, max: 1000, noNaN: true });
const row = fc.array(value, { minLength: 3, maxLength: 3 });
const rows = fc.array(row, { minLength: 1, maxLength: 3 });
const name = fc.stringMatching(/^[A-Za-z]{0,20}$/);
const greetItem = fc.record({ name, times: fc.integer({ min: 1, max: 3 }) }, { requiredKeys: ['name'] });
const items = fc.array(greetItem, { minLength: 1, maxLength: 3 });
const id = fc.oneof(fc.constant(''), fc.stringMatching(/^[a-z0-9-]{1,12}$/));

/** An FP32 [n, 3] request of `model` (toy or triple), with its values in `carrier`. */
function tensorPlan(
  model: 'toy' | 'triple',
  carrier: 'contents' | 'raw',
  given: number[][],
  requestId: string,
  typedOutput: boolean,
  askOutput: boolean,
): Plan {
  const input = model === 'toy' ? 'features' : 'x';
  const output = model === 'toy' ? 'score' : 'y';
  const flat = given.flat();
  const request: RequestObject = {
    model_name: model,
    id: requestId,
    inputs: [
      {
        name: input,
        datatype: 'FP32',
        shape: [given.length, 3],
        ...(carrier === 'contents' ? { contents: { fp32_contents: flat } } : {}),
      },
    ],
    ...(carrier === 'raw' ? { raw_input_contents: [float32Bytes(flat)] } : {}),
    ...(typedOutput ? { parameters: { binary_data_output: { bool_param: false } } } : {}),
    ...(askOutput ? { outputs: [{ name: output }] } : {}),
  };
  const want = model === 'toy' ? given.map(toyScore) : given.flatMap(tripled);
  return {
    label: `${model} ${carrier}${typedOutput ? ' typed output' : ''}`,
    request,
    check: tensorCheck(model, output, given, want, requestId),
    kind: 'rows',
    carrier,
  };
}

/** greet's BYTES [n] of JSON texts, in `carrier`. */
function greetPlan(carrier: 'contents' | 'raw', given: GreetItem[], requestId: string, typedOutput: boolean): Plan {
  const texts = given.map((item) => JSON.stringify(item));
  const request: RequestObject = {
    model_name: 'greet',
    id: requestId,
    inputs: [
      {
        name: 'json',
        datatype: 'BYTES',
        shape: [texts.length],
        ...(carrier === 'contents' ? { contents: { bytes_contents: texts.map((t) => Buffer.from(t)) } } : {}),
      },
    ],
    ...(carrier === 'raw' ? { raw_input_contents: [bytesElements(texts)] } : {}),
    ...(typedOutput ? { parameters: { binary_data_output: { bool_param: false } } } : {}),
  };
  const want = (given as { name: string; times?: number }[]).map((item) => greeting(item));
  return {
    label: `greet ${carrier}${typedOutput ? ' typed output' : ''}`,
    request,
    check: (response) => {
      if (response.id !== requestId) return `id ${JSON.stringify(response.id)}, expected ${JSON.stringify(requestId)}`;
      const got = textOutput(response)?.map((text) => JSON.parse(text).greeting);
      return JSON.stringify(got) === JSON.stringify(want)
        ? undefined
        : `greetings ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`;
    },
    kind: 'items',
    carrier,
  };
}

const carrier = fc.constantFrom('contents' as const, 'raw' as const);

export const validPlan: fc.Arbitrary<Plan> = fc.oneof(
  fc
    .tuple(fc.constantFrom('toy' as const, 'triple' as const), carrier, rows, id, fc.boolean(), fc.boolean())
    .map(([model, where, given, requestId, typed, ask]) => tensorPlan(model, where, given, requestId, typed, ask)),
  fc
    .tuple(carrier, items, id, fc.boolean())
    .map(([where, given, requestId, typed]) => greetPlan(where, given, requestId, typed)),
);

export const validGrpcProbe: fc.Arbitrary<GrpcProbe> = validPlan.map((plan) => ({
  label: plan.label,
  bytes: encoded(plan.request),
  check: plan.check,
  refusals: [],
}));

/** A copy of a plan's request to change. */
const copied = (request: RequestObject): RequestObject => structuredClone(request);

const refused = (label: string, request: RequestObject, refusals: readonly status[] = INVALID): GrpcProbe => ({
  label,
  bytes: encoded(request),
  refusals,
});

/** The values of a plan's one input, wherever they are, as rows of numbers (tensor plans). */
function planRows(plan: Plan): number[][] {
  const input = plan.request.inputs[0]!;
  const rowsCount = Number(input.shape[0]);
  const flat =
    plan.carrier === 'contents'
      ? (input.contents!.fp32_contents as number[])
      : Array.from({ length: rowsCount * 3 }, (_, i) => plan.request.raw_input_contents![0]!.readFloatLE(i * 4));
  return Array.from({ length: rowsCount }, (_, r) => flat.slice(r * 3, r * 3 + 3));
}

/** A tensor plan with its rows replaced (the same carrier); its check as the rules say. */
function withRows(plan: Plan, given: Row[]): GrpcProbe {
  const model = plan.request.model_name as 'toy' | 'triple';
  const request = copied(plan.request);
  const flat = given.flat() as number[];
  if (plan.carrier === 'contents') request.inputs[0]!.contents = { fp32_contents: flat };
  else request.raw_input_contents = [float32Bytes(flat)];
  request.inputs[0]!.shape = [given.length, 3];
  const label = `${plan.label} values ${JSON.stringify(given.map((r) => r.map(String)))}`;
  // Within float32 once rounded (the wire holds float32): the rules' row; NaN or ±Infinity may be refused.
  const rounded = given.map((r) => r.map((v) => Math.fround(v as number)));
  const output = model === 'toy' ? 'score' : 'y';
  const want = model === 'toy' ? rounded.map(toyScore) : rounded.flatMap(tripled);
  const check = tensorCheck(model, output, rounded, want, request.id ?? '');
  return { label, bytes: encoded(request), check, refusals: rounded.every(validRow) ? [] : INVALID };
}

/** Mutations of the message: each a probe whose validity the rules decide. */
function messageMutations(plan: Plan): fc.Arbitrary<GrpcProbe> {
  const r = plan.request;
  const input = r.inputs[0]!;
  const n = Number(input.shape[0]);
  const tensor = plan.kind === 'rows';
  const field = tensor ? 'fp32_contents' : 'bytes_contents';
  const change = (label: string, edit: (request: RequestObject) => void, refusals: readonly status[] = INVALID) =>
    fc.constant(null).map(() => {
      const request = copied(r);
      edit(request);
      return refused(`${plan.label}: ${label}`, request, refusals);
    });
  const datatypes = tensor
    ? ['FP64', 'FP16', 'INT32', 'BYTES', 'BOOL', 'fp32', '', 'FP32 ']
    : ['FP32', 'INT8', 'bytes', '', 'STRING'];
  const shapes: (number | string)[][] = tensor
    ? [
        [n, 4],
        [3 * n],
        [n, 3, 1],
        [n + 1, 3],
        [0, 3],
        [-1, 3],
        [2 ** 31, 3],
        [],
        [n, '9007199254740993'],
        ['4611686018427387904', 3],
        [5, 3],
      ]
    : [[n + 1], [n, 1], [0], [-1], [], ['9223372036854775807'], [2 ** 31]];
  const wrongFields = tensor
    ? ['int_contents', 'fp64_contents', 'bool_contents', 'bytes_contents', 'uint_contents', 'int64_contents']
    : ['fp32_contents', 'int_contents', 'bool_contents'];
  const wrongValue = (f: string): unknown =>
    f === 'bool_contents' ? true : f === 'bytes_contents' ? Buffer.from('1') : 1;
  const arbitraries: fc.Arbitrary<GrpcProbe>[] = [
    fc.constantFrom(...datatypes).chain((datatype) =>
      change(`datatype ${JSON.stringify(datatype)}`, (q) => {
        q.inputs[0]!.datatype = datatype;
      }),
    ),
    fc.constantFrom(...shapes).chain((shape) =>
      change(`shape [${shape.join(', ')}]`, (q) => {
        q.inputs[0]!.shape = shape;
      }),
    ),
    fc
      .constantFrom('x', 'features', 'json', '', 'X', 'features ')
      .filter((other) => other !== input.name)
      .chain((other) =>
        change(`input named ${JSON.stringify(other)}`, (q) => {
          q.inputs[0]!.name = other;
        }),
      ),
    change('the input given twice', (q) => {
      q.inputs.push(structuredClone(q.inputs[0]!));
      if (q.raw_input_contents !== undefined) q.raw_input_contents.push(q.raw_input_contents[0]!);
    }),
    change('no inputs', (q) => {
      q.inputs = [];
      delete q.raw_input_contents;
    }),
    change('no values', (q) => {
      delete q.inputs[0]!.contents;
      delete q.raw_input_contents;
    }),
    fc.constantFrom('nowhere', 'unknown', '', ' toy').chain((model) =>
      change(
        `model ${JSON.stringify(model)}`,
        (q) => {
          q.model_name = model;
        },
        model === '' ? INVALID : UNKNOWN,
      ),
    ),
    fc.constantFrom('2', '0', 'latest', '1.0', ' 1', '+1', '99999999999999999999').chain((version) =>
      change(
        `version ${JSON.stringify(version)}`,
        (q) => {
          q.model_version = version;
        },
        UNKNOWN,
      ),
    ),
    // Version 1 by name, and -1 (Triton's core reads it as the latest): answered right, or NOT_FOUND for -1.
    fc.constantFrom('1', '-1').map((version) => {
      const request = copied(r);
      request.model_version = version;
      return {
        label: `${plan.label}: version ${version}`,
        bytes: encoded(request),
        check: plan.check,
        refusals: version === '1' ? [] : UNKNOWN,
      };
    }),
    fc.constantFrom('nothing', '', 'Y', tensor ? 'json' : 'y').chain((output) =>
      change(`output ${JSON.stringify(output)} asked for`, (q) => {
        q.outputs = [{ name: output }];
      }),
    ),
    change('an output asked for twice', (q) => {
      const out = tensor ? (q.model_name === 'toy' ? 'score' : 'y') : 'json';
      q.outputs = [{ name: out }, { name: out }];
    }),
    fc
      .constantFrom<[string, object]>(
        ['priority', { string_param: '1' }],
        ['priority', { double_param: 1.5 }],
        ['priority', { bool_param: true }],
        ['timeout', { string_param: '5000000' }],
        ['timeout', { double_param: 5e6 }],
        ['timeout', { bool_param: false }],
      )
      .chain(([key, parameter]) =>
        change(`parameter ${key} ${JSON.stringify(parameter)}`, (q) => {
          q.parameters = { ...q.parameters, [key]: parameter };
        }),
      ),
    // Parameters the protocol leaves room on: answered right, or refused with a reason.
    fc
      .constantFrom<[string, object]>(
        ['binary_data_output', { int64_param: 0 }],
        ['binary_data_output', { string_param: 'false' }],
        ['binary_data_output', {}],
        ['priority', { int64_param: 0 }],
        ['priority', { int64_param: 1 }],
        ['priority', { int64_param: 99 }],
        ['priority', { int64_param: -1 }],
        ['priority', { uint64_param: '18446744073709551615' }],
        ['timeout', { int64_param: 0 }],
        ['timeout', { int64_param: -5 }],
        ['timeout', { int64_param: '4611686018427387904' }],
        ['timeout', {}],
        ['foo', { string_param: 'bar' }],
        ['', { double_param: Number.NaN }],
      )
      .map(([key, parameter]) => {
        const request = copied(r);
        request.parameters = { ...request.parameters, [key]: parameter };
        const label = `${plan.label}: parameter ${JSON.stringify(key)} ${JSON.stringify(parameter)}`;
        return { label, bytes: encoded(request), check: plan.check, refusals: PARAMETER_REFUSALS };
      }),
    fc
      .constantFrom<object>(
        { string_param: 'scores' },
        { int64_param: 0 },
        { int64_param: -2 },
        { bool_param: true },
        { double_param: 1 },
      )
      .chain((parameter) =>
        change(`output classification ${JSON.stringify(parameter)}`, (q) => {
          const out = tensor ? (q.model_name === 'toy' ? 'score' : 'y') : 'json';
          q.outputs = [{ name: out, parameters: { classification: parameter } }];
        }),
      ),
    fc.constantFrom<object>({ int64_param: 4 }, { bool_param: true }, { double_param: 0.5 }).chain((parameter) =>
      change(`input shared_memory_region ${JSON.stringify(parameter)}`, (q) => {
        (q.inputs[0] as { parameters?: object }).parameters = { shared_memory_region: parameter };
      }),
    ),
  ];
  if (plan.carrier === 'contents') {
    arbitraries.push(
      fc.constantFrom(...wrongFields).chain((other) =>
        change(`values in contents.${other}`, (q) => {
          const count = (q.inputs[0]!.contents![field] as unknown[]).length;
          q.inputs[0]!.contents = { [other]: Array.from({ length: count }, () => wrongValue(other)) };
        }),
      ),
      fc.constantFrom(...wrongFields).chain((other) =>
        change(`contents.${other} beside contents.${field}`, (q) => {
          q.inputs[0]!.contents![other] = [wrongValue(other)];
        }),
      ),
      fc.constantFrom(-1, 1).chain((delta) =>
        change(`contents one value ${delta < 0 ? 'short' : 'long'}`, (q) => {
          const values = q.inputs[0]!.contents![field]!;
          if (delta < 0) values.pop();
          else values.push(values[0]);
        }),
      ),
      fc.nat({ max: (input.contents![field] as unknown[]).length }).map((at) => splitContents(plan, field, at)),
      change('raw_input_contents beside contents', (q) => {
        q.raw_input_contents = [tensor ? float32Bytes(planRows(plan).flat()) : bytesElements(['{"name":"a"}'])];
      }),
    );
  } else {
    arbitraries.push(
      fc.constantFrom(-4, -1, 1, 4, -Number.MAX_SAFE_INTEGER).chain((delta) =>
        change(
          `raw_input_contents ${delta === -Number.MAX_SAFE_INTEGER ? 'empty' : `${delta > 0 ? '+' : ''}${delta} bytes`}`,
          (q) => {
            const bytes = q.raw_input_contents![0]!;
            q.raw_input_contents = [
              delta < 0
                ? bytes.subarray(0, Math.max(0, bytes.length + delta))
                : Buffer.concat([bytes, Buffer.alloc(delta, 0x41)]),
            ];
          },
        ),
      ),
      change('two raw_input_contents for one input', (q) => {
        q.raw_input_contents!.push(q.raw_input_contents![0]!);
      }),
      change('contents beside raw_input_contents', (q) => {
        q.inputs[0]!.contents = { [field]: tensor ? [1] : [Buffer.from('{"name":"a"}')] };
      }),
    );
  }
  if (tensor) {
    const oddValue = fc.constantFrom(...ODD_NUMBERS);
    const given = planRows(plan);
    arbitraries.push(
      fc.tuple(oddValue, fc.nat({ max: given.length * 3 - 1 })).map(([odd, at]) =>
        withRows(
          plan,
          given.map((row, i) => row.map((v, j) => (i * 3 + j === at ? odd : v))),
        ),
      ),
    );
  } else {
    const given = JSON.parse(
      `[${(r.inputs[0]!.contents?.bytes_contents ?? []).map((b) => Buffer.from(b as Buffer).toString()).join(',')}]`,
    );
    const texts = r.raw_input_contents === undefined ? given : textsOfRaw(r.raw_input_contents[0]!);
    arbitraries.push(
      fc
        .tuple(
          fc.nat({ max: texts.length - 1 }),
          fc.constantFrom<unknown>(
            { name: 5 },
            { name: 'a'.repeat(21) },
            { name: '😀'.repeat(20) },
            { name: '' },
            { name: 'a', times: 0 },
            { name: 'a', times: 4 },
            { name: 'a', times: 1.5 },
            { name: 'a', times: '2' },
            { name: 'a', times: null },
            { name: 'a', extra: 1 },
            {},
            'a',
            [],
            null,
          ),
        )
        .map(([at, item]) =>
          greetWithItems(
            plan,
            texts.map((t: unknown, i: number) => (i === at ? item : t)),
          ),
        ),
      fc.constantFrom('{', '', 'null', '{"name":"a"} x', '\u00ff', '{"name":"a","name":"b"}').map((text) => {
        const request = copied(r);
        const bytes = [Buffer.from(text, text === '\u00ff' ? 'latin1' : 'utf8')];
        if (plan.carrier === 'contents') request.inputs[0]!.contents = { bytes_contents: bytes };
        else request.raw_input_contents = [Buffer.concat([lengthOf(bytes[0]!), bytes[0]!])];
        request.inputs[0]!.shape = [1];
        // A key given twice is JSON.parse's last: valid, and greet says "b".
        if (text === '{"name":"a","name":"b"}') return greetWithItems(plan, [{ name: 'b' }], request, true);
        return refused(`${plan.label}: JSON text ${JSON.stringify(text)}`, request);
      }),
    );
  }
  return fc.oneof(...arbitraries);
}

/**
 * The plan's request with its input's `contents` given twice on the wire, the values split at
 * `at`: proto3 merges a message field given twice (its repeated fields joined), so it is the
 * same request and must be answered right.
 */
function splitContents(plan: Plan, field: string, at: number): GrpcProbe {
  const { inputs, ...rest } = copied(plan.request);
  const { contents, ...tensor } = inputs[0]!;
  const values = contents![field]!;
  const tensorType = inferenceType('ModelInferRequest.InferInputTensor');
  const contentsType = inferenceType('InferTensorContents');
  const first = tensorType
    .encode(tensorType.fromObject({ ...tensor, contents: { [field]: values.slice(0, at) } }))
    .finish();
  const second = contentsType.encode(contentsType.fromObject({ [field]: values.slice(at) })).finish();
  // InferInputTensor.contents is field 5, ModelInferRequest.inputs field 5: both length-delimited.
  const tensorBytes = Buffer.concat([
    first,
    protobuf.Writer.create()
      .uint32((5 << 3) | 2)
      .bytes(second)
      .finish(),
  ]);
  const input = protobuf.Writer.create()
    .uint32((5 << 3) | 2)
    .bytes(tensorBytes)
    .finish();
  return {
    label: `${plan.label}: contents given twice on the wire, split at ${at}`,
    bytes: Buffer.concat([encoded({ ...rest, inputs: [] }), input]),
    check: plan.check,
    refusals: [],
  };
}

function lengthOf(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32LE(bytes.length);
  return length;
}

function textsOfRaw(bytes: Buffer): unknown[] {
  const texts: unknown[] = [];
  for (let at = 0; at < bytes.length; at += 4 + bytes.readUInt32LE(at))
    texts.push(JSON.parse(bytes.toString('utf8', at + 4, at + 4 + bytes.readUInt32LE(at))));
  return texts;
}

/** greet with these items (as JSON texts, in the plan's carrier): valid as the rules say. */
function greetWithItems(plan: Plan, given: unknown[], prepared?: RequestObject, mayRefuse = false): GrpcProbe {
  const request = prepared ?? copied(plan.request);
  if (prepared === undefined) {
    const texts = given.map((item) => JSON.stringify(item));
    if (plan.carrier === 'contents') request.inputs[0]!.contents = { bytes_contents: texts.map((t) => Buffer.from(t)) };
    else request.raw_input_contents = [bytesElements(texts)];
    request.inputs[0]!.shape = [texts.length];
  }
  const label = `${plan.label}: items ${JSON.stringify(given)}`;
  if (!given.every(validGreetItem)) return refused(label, request);
  const check = greetPlan(plan.carrier, given, request.id ?? '', false).check;
  return { label, bytes: encoded(request), check, refusals: mayRefuse ? INVALID : [] };
}

/** `InferParameter`'s oneof members as bytes on the wire (field number << 3 | wire type, then the value). */
const ONEOF_MEMBERS = [
  { name: 'bool_param', bytes: Buffer.from([0x08, 0x01]), wholeNumber: false },
  { name: 'int64_param', bytes: Buffer.from([0x10, 0x00]), wholeNumber: true },
  { name: 'string_param', bytes: Buffer.from([0x1a, 0x01, 0x31]), wholeNumber: false },
  { name: 'double_param', bytes: Buffer.from([0x21, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f]), wholeNumber: false },
  { name: 'uint64_param', bytes: Buffer.from([0x28, 0x00]), wholeNumber: true },
];

/** An entry of `ModelInferRequest.parameters` (field 4, a map entry of key 1 and value 2) as bytes. */
function parameterEntry(key: string, value: Buffer): Buffer {
  const name = Buffer.from(key);
  const entry = Buffer.concat([Buffer.from([0x0a, name.length]), name, Buffer.from([0x12, value.length]), value]);
  return Buffer.concat([Buffer.from([0x22, entry.length]), entry]);
}

/**
 * Mutations of the bytes: bits flipped, the message cut, bytes after it. Their meaning is not
 * read here (that would be a second protobuf decoder): an answer must be OK and a
 * `ModelInferResponse`, or INVALID_ARGUMENT or NOT_FOUND (a flipped name) with a message. An
 * unknown field added is still the same request (proto3 skips it) and must be answered right.
 */
function byteMutations(plan: Plan): fc.Arbitrary<GrpcProbe> {
  const bytes = encoded(plan.request);
  const any: ResponseCheck = () => undefined;
  const loose = (label: string, mutated: Buffer): GrpcProbe => ({
    label: `${plan.label}: ${label}`,
    bytes: mutated,
    check: any,
    refusals: UNKNOWN,
  });
  return fc.oneof(
    fc.array(fc.nat({ max: bytes.length * 8 - 1 }), { minLength: 1, maxLength: 3 }).map((bits) => {
      const mutated = Buffer.from(bytes);
      for (const bit of bits) mutated[bit >> 3]! ^= 1 << (bit & 7);
      return loose(`bits ${bits.join(', ')} flipped`, mutated);
    }),
    fc
      .nat({ max: bytes.length - 1 })
      .map((length) => loose(`cut to ${length} of ${bytes.length} bytes`, bytes.subarray(0, length))),
    fc
      .uint8Array({ minLength: 1, maxLength: 16 })
      .map((tail) => loose(`bytes ${Buffer.from(tail).toString('hex')} after it`, Buffer.concat([bytes, tail]))),
    fc
      .tuple(fc.constantFrom(...ONEOF_MEMBERS), fc.constantFrom(...ONEOF_MEMBERS))
      .filter(([first, last]) => first.name !== last.name)
      .map(([first, last]) => ({
        label: `${plan.label}: parameter "priority" of ${first.name} then ${last.name} on the wire`,
        bytes: Buffer.concat([bytes, parameterEntry('priority', Buffer.concat([first.bytes, last.bytes]))]),
        // proto3: of a oneof's members on the wire, the last counts; a whole number is a priority.
        ...(last.wholeNumber ? { check: plan.check, refusals: [] } : { refusals: INVALID }),
      })),
    // Field 99, a varint (tag 99 << 3 = 0x98 0x06), then a length-delimited field 100 (0xa2 0x06).
    fc.constant({
      label: `${plan.label}: unknown fields 99 and 100 added`,
      bytes: Buffer.concat([bytes, Buffer.from([0x98, 0x06, 0x2a, 0xa2, 0x06, 0x02, 0x68, 0x69])]),
      check: plan.check,
      refusals: [],
    }),
  );
}

export const mutatedGrpcProbe: fc.Arbitrary<GrpcProbe> = validPlan.chain((plan) =>
  fc.oneof({ weight: 3, arbitrary: messageMutations(plan) }, { weight: 1, arbitrary: byteMutations(plan) }),
);
