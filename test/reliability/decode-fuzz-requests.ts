import { deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import {
  type Check,
  type GreetItem,
  greeting,
  ODD_NUMBERS,
  oipOutputValues,
  answerJson,
  type Row,
  sameNumber,
  sameNumbers,
  toyScore,
  tripled,
  validGreetItem,
  validRow,
} from './decode-fuzz-rules.js';
import type { RawRequest } from './one-exchange.js';

/**
 * Valid requests for every inference route and encoding, and mutations of them. A probe says
 * whether it must be refused (no `check`), must be answered right (`check`), or may be either
 * (`check` and `mayRefuse`): validity is decided by the rules of `decode-fuzz-rules.ts`.
 */
export interface Probe {
  label: string;
  request: RawRequest;
  check?: Check;
  mayRefuse?: boolean;
}

const packr = new Packr({ useRecords: false });

type Encoding = 'json' | 'msgpack' | 'binary';

/** A request before its bytes: the body's document (a binary request's JSON part) and its binary part. */
interface Plan {
  label: string;
  path: string;
  headers: Record<string, string>;
  encoding: Encoding;
  doc: Record<string, unknown>;
  binary?: Buffer;
  check?: Check;
  /** A refusal is fair too (binary data that holds NaN or ±Infinity). */
  mayRefuse?: boolean;
  /** Keys (dotted paths in `doc`) whose loss makes the request invalid. */
  required: readonly string[];
}

/** A route and encoding: how a payload (rows of numbers, or greet's items) becomes a plan. */
interface Form {
  name: string;
  payload: 'one-row' | 'rows' | 'one-item' | 'items';
  encoding: Encoding;
  build(payload: unknown[]): Plan;
}

/** Non-finite numbers written into JSON text: NaN as its bare token (no JSON), ±Infinity as 1e999. */
function jsonText(doc: unknown): string {
  return JSON.stringify(doc, (_key, value) =>
    typeof value === 'number' && !Number.isFinite(value) ? `@@${value}@@` : value,
  ).replace(/"@@(NaN|Infinity|-Infinity)@@"/g, (_match, token: string) =>
    token === 'NaN' ? 'NaN' : token === 'Infinity' ? '1e999' : '-1e999',
  );
}

function encode(plan: Plan): RawRequest {
  if (plan.encoding === 'msgpack') return { path: plan.path, headers: plan.headers, body: packr.pack(plan.doc) };
  const json = Buffer.from(jsonText(plan.doc));
  if (plan.encoding === 'json') return { path: plan.path, headers: plan.headers, body: json };
  return {
    path: plan.path,
    headers: { ...plan.headers, 'inference-header-content-length': String(json.length) },
    body: Buffer.concat([json, plan.binary ?? Buffer.alloc(0)]),
  };
}

const JSON_TYPE = { 'content-type': 'application/json' };
const MSGPACK_TYPE = { 'content-type': 'application/msgpack' };

function toyCheck(row: number[]): Check {
  return (answer) => {
    const json = answerJson(answer);
    return json.model === 'toy' && sameNumbers(json.outputs?.score, [toyScore(row)], 1e-6)
      ? undefined
      : `expected score ${toyScore(row)}`;
  };
}

function tripleCheck(row: number[]): Check {
  return (answer) => {
    const json = answerJson(answer);
    return json.model === 'triple' && sameNumbers(json.outputs?.y, tripled(row))
      ? undefined
      : `expected y ${tripled(row)}`;
  };
}

function greetCheck(item: { name: string; times?: number }): Check {
  return (answer) =>
    answerJson(answer).outputs?.greeting === greeting(item) ? undefined : `expected greeting ${greeting(item)}`;
}

/** /v2 rows of triple (y) or toy (score), from `data` or binary data. */
function oipRowsCheck(model: 'triple' | 'toy', rows: number[][]): Check {
  const want = model === 'triple' ? rows.flatMap(tripled) : rows.map(toyScore);
  return (answer) => {
    const json = answerJson(answer);
    const shape = json.outputs?.[0]?.shape;
    const ok =
      json.model_name === model &&
      Array.isArray(shape) &&
      shape[0] === rows.length &&
      sameNumbers(oipOutputValues(answer), want, model === 'toy' ? 1e-6 : 0);
    return ok ? undefined : `expected ${model} ${want.slice(0, 6)}`;
  };
}

const allValid = (rows: Row[]): rows is number[][] => rows.length > 0 && rows.every(validRow);

/**
 * The rows a /v2 JSON input's `data` (the rows flattened once) holds when valid: flat, or nested
 * as its shape [n, 3] (as Triton reads it); undefined when it is neither.
 */
function oipJsonRows(rows: Row[]): number[][] | undefined {
  const data = rows.flat();
  if (allValid(rows)) return rows;
  const nested = data as Row[];
  return nested.length === rows.length && nested.every(Array.isArray) && allValid(nested) ? nested : undefined;
}

const FORMS: readonly Form[] = [
  ...(['json', 'msgpack'] as const).flatMap((encoding): Form[] => [
    {
      name: `/v1/infer ${encoding} (toy, ONNX)`,
      payload: 'one-row',
      encoding,
      build: ([row]) => ({
        label: `/v1/infer ${encoding}`,
        path: '/v1/infer',
        headers: encoding === 'json' ? JSON_TYPE : MSGPACK_TYPE,
        encoding,
        doc: { inputs: row },
        ...(validRow(row as Row) ? { check: toyCheck(row as number[]) } : {}),
        required: ['inputs'],
      }),
    },
    {
      name: `/models/triple/predict ${encoding}`,
      payload: 'one-row',
      encoding,
      build: ([row]) => ({
        label: `/models/triple/predict ${encoding}`,
        path: '/models/triple/predict',
        headers: encoding === 'json' ? JSON_TYPE : MSGPACK_TYPE,
        encoding,
        doc: { inputs: row },
        ...(validRow(row as Row) ? { check: tripleCheck(row as number[]) } : {}),
        required: ['inputs'],
      }),
    },
    {
      name: `/models/greet/predict ${encoding}`,
      payload: 'one-item',
      encoding,
      build: ([item]) => ({
        label: `/models/greet/predict ${encoding}`,
        path: '/models/greet/predict',
        headers: encoding === 'json' ? JSON_TYPE : MSGPACK_TYPE,
        encoding,
        doc: { inputs: item },
        ...(validGreetItem(item) ? { check: greetCheck(item) } : {}),
        required: ['inputs'],
      }),
    },
  ]),
  ...(['triple', 'toy'] as const).map(
    (model): Form => ({
      name: `/v2 JSON (${model})`,
      payload: 'rows',
      encoding: 'json',
      build: (rows) => ({
        label: `/v2/models/${model}/infer JSON`,
        path: `/v2/models/${model}/infer`,
        headers: {},
        encoding: 'json',
        doc: {
          id: 'fuzz',
          inputs: [
            {
              name: model === 'triple' ? 'x' : 'features',
              shape: [rows.length, 3],
              datatype: 'FP32',
              data: (rows as Row[]).flat(),
            },
          ],
        },
        ...(oipJsonRows(rows as Row[]) === undefined
          ? {}
          : { check: oipRowsCheck(model, oipJsonRows(rows as Row[]) as number[][]) }),
        required: ['inputs', 'inputs.0', 'inputs.0.name', 'inputs.0.shape', 'inputs.0.datatype', 'inputs.0.data'],
      }),
    }),
  ),
  {
    name: '/v2 binary (triple)',
    payload: 'rows',
    encoding: 'binary',
    build: (rows) => {
      // Bytes cannot say "not a number": anything else is NaN there, and only the rows' lengths can be wrong.
      const numbers = (rows as Row[]).flat().map((v) => (typeof v === 'number' ? v : Number.NaN));
      const floats = Float32Array.from(numbers);
      const binary = Buffer.from(floats.buffer);
      const asSent = Array.from({ length: rows.length }, (_, r) => Array.from(floats.subarray(r * 3, r * 3 + 3)));
      return {
        label: '/v2/models/triple/infer binary',
        path: '/v2/models/triple/infer',
        headers: { 'content-type': 'application/octet-stream' },
        encoding: 'binary',
        doc: {
          inputs: [
            { name: 'x', shape: [rows.length, 3], datatype: 'FP32', parameters: { binary_data_size: binary.length } },
          ],
          outputs: [{ name: 'y', parameters: { binary_data: true } }],
        },
        binary,
        // Any float32 is a value the bytes may carry; NaN and ±Infinity may be refused.
        ...(rows.length > 0 && (rows as Row[]).every((row) => Array.isArray(row) && row.length === 3)
          ? { check: oipRowsCheck('triple', asSent), mayRefuse: !floats.every(Number.isFinite) }
          : {}),
        required: ['inputs', 'inputs.0', 'inputs.0.name', 'inputs.0.shape', 'inputs.0.datatype', 'inputs.0.parameters'],
      };
    },
  },
  {
    name: '/v2 JSON (greet, BYTES of JSON texts)',
    payload: 'items',
    encoding: 'json',
    build: (items) => ({
      label: '/v2/models/greet/infer JSON',
      path: '/v2/models/greet/infer',
      headers: { 'content-type': 'application/json' },
      encoding: 'json',
      doc: {
        inputs: [
          { name: 'json', shape: [items.length], datatype: 'BYTES', data: items.map((item) => JSON.stringify(item)) },
        ],
      },
      ...(items.length > 0 && items.every(validGreetItem)
        ? {
            check: (answer) => {
              const data = answerJson(answer).outputs?.[0]?.data;
              const want = items.map((item) => JSON.stringify({ greeting: greeting(item as { name: string }) }));
              return JSON.stringify(data) === JSON.stringify(want) ? undefined : `expected ${want}`;
            },
          }
        : {}),
      required: ['inputs', 'inputs.0', 'inputs.0.name', 'inputs.0.shape', 'inputs.0.datatype', 'inputs.0.data'],
    }),
  },
  {
    name: 'KServe V1 :predict (triple)',
    payload: 'rows',
    encoding: 'json',
    build: (rows) => ({
      label: '/v1/models/triple:predict',
      path: '/v1/models/triple:predict',
      headers: {},
      encoding: 'json',
      doc: { instances: rows },
      ...(allValid(rows as Row[])
        ? {
            check: (answer) => {
              const predictions = answerJson(answer).predictions;
              return Array.isArray(predictions) &&
                predictions.length === rows.length &&
                (rows as number[][]).every((row, i) => sameNumbers(predictions[i], tripled(row)))
                ? undefined
                : 'expected the tripled rows';
            },
          }
        : {}),
      required: ['instances'],
    }),
  },
];

const value = fc.double({ min: -1000, max: 1000, noNaN: true });
const row = fc.array(value, { minLength: 3, maxLength: 3 });
const name = fc.stringMatching(/^[a-z]{0,20}$/);
const greetItem = fc.record({ name, times: fc.integer({ min: 1, max: 3 }) }, { requiredKeys: ['name'] });

function payloadOf(form: Form): fc.Arbitrary<unknown[]> {
  switch (form.payload) {
    case 'one-row':
      return row.map((r) => [r]);
    case 'rows':
      return fc.array(row, { minLength: 1, maxLength: 3 });
    case 'one-item':
      return greetItem.map((item) => [item]);
    case 'items':
      return fc.array(greetItem, { minLength: 1, maxLength: 3 });
  }
}

/** A valid request of any form, and its plan's form. */
const validPlan = fc
  .constantFrom(...FORMS)
  .chain((form) => payloadOf(form).map((payload) => ({ form, payload, plan: form.build(payload) })));

export const validProbe: fc.Arbitrary<Probe> = validPlan.map(({ plan }) => ({
  label: plan.label,
  request: encode(plan),
  ...(plan.check === undefined ? {} : { check: plan.check }),
}));

/** What a number of a row may become. */
const ROW_VALUES: readonly unknown[] = ['1.5', null, true, {}, [], [1], ...ODD_NUMBERS, 1e30];

/** What a greet item, or one of its fields, may become. */
const ITEM_VALUES: readonly unknown[] = [5, null, 'x'.repeat(21), 'ü'.repeat(20), '😀'.repeat(20), ['a'], '', {}];
const TIMES_VALUES: readonly unknown[] = [0, 4, -1, 1.5, '2', null, 3, true];

/** A mutation of a payload's values: the rules say what the result must be answered. */
function mutatePayload(form: Form, payload: unknown[], pick: number, choice: number): unknown[] {
  const copy = structuredClone(payload);
  if (form.payload === 'one-row' || form.payload === 'rows') {
    const rows = copy as unknown[][];
    const r = rows[pick % rows.length] as unknown[];
    switch (choice % 5) {
      case 0:
        r[pick % 3] = ROW_VALUES[(pick >> 2) % ROW_VALUES.length];
        break;
      case 1:
        r.splice(pick % 3, 1);
        break;
      case 2:
        r.push(1);
        break;
      case 3:
        rows[pick % rows.length] = [r];
        break;
      default:
        if (form.payload === 'rows') rows.push([0.5, -0.5, 2]);
        else rows[0] = rows[0]?.slice(0, 0) ?? [];
    }
    return rows;
  }
  const items = copy as Record<string, unknown>[];
  const i = pick % items.length;
  switch (choice % 5) {
    case 0:
      items[i] = { ...items[i], name: ITEM_VALUES[(pick >> 2) % ITEM_VALUES.length] };
      break;
    case 1:
      items[i] = { ...items[i], times: TIMES_VALUES[(pick >> 2) % TIMES_VALUES.length] };
      break;
    case 2:
      delete (items[i] as Record<string, unknown>)[(pick & 1) === 0 ? 'name' : 'times'];
      break;
    case 3:
      items[i] = { ...items[i], fuzz_extra: 1 };
      break;
    default:
      items[i] = ITEM_VALUES[(pick >> 2) % ITEM_VALUES.length] as GreetItem as Record<string, unknown>;
  }
  return items;
}

/** Every dotted path of keys in `doc` (objects' keys and arrays' indexes), its root's children first. */
function keyPaths(doc: unknown, prefix = ''): string[] {
  if (typeof doc !== 'object' || doc === null) return [];
  return Object.keys(doc).flatMap((key) => {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    return [path, ...keyPaths((doc as Record<string, unknown>)[key], path)];
  });
}

function parentOf(doc: Record<string, unknown>, path: string): { parent: any; key: string } {
  const keys = path.split('.');
  const key = keys.pop() as string;
  return { parent: keys.reduce<any>((node, k) => node[k], doc), key };
}

/** A plan's request that must be refused. */
const refused = (plan: Plan, label: string, request = encode(plan)): Probe => ({
  label: `${plan.label}: ${label}`,
  request,
});
/** A plan's request that must be answered right (or, with `mayRefuse`, refused). */
const answered = (plan: Plan, label: string, request = encode(plan), mayRefuse = false): Probe =>
  plan.check === undefined
    ? refused(plan, label, request)
    : {
        label: `${plan.label}: ${label}`,
        request,
        check: plan.check,
        ...(mayRefuse || plan.mayRefuse ? { mayRefuse: true } : {}),
      };

const SHAPES = (n: number): unknown[] => [
  [n, 4],
  [n * 3],
  [n, 3, 1],
  [n + 1, 3],
  [0, 3],
  [-1, 3],
  [2 ** 31, 3],
  [1.5, 3],
  ['1', 3],
  [],
  null,
  [n, 2 ** 53],
];
const DATATYPES = ['FP64', 'FP16', 'INT32', 'BYTES', 'BOOL', 'fp32', '', 5, null];
const LENGTHS = (length: number): string[] => [
  String(length + 1),
  String(length - 1),
  '-1',
  '0',
  'abc',
  '1e2',
  '0x10',
  '99999999999999999999999',
  String(2 ** 53),
];
const BINARY_SIZES = (size: number): unknown[] => [size + 4, size - 4, size + 1, -size, 2 ** 53, String(size), null, 0];
const FOREIGN_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/xml',
  'multipart/form-data; boundary=x',
];

/** The mutations of a plan's document, bytes and headers (`pick` chooses among each one's variants). */
function mutateDocument(form: Form, payload: unknown[], plan: Plan, kind: number, pick: number, other: Plan): Probe {
  const request = encode(plan);
  const paths = keyPaths(plan.doc);
  const path = paths[pick % paths.length] as string;
  const rows = payload.length;
  const input = (plan.doc.inputs as Record<string, unknown>[] | undefined)?.[0];
  const oip = plan.path.startsWith('/v2/');
  switch (kind % 14) {
    case 0: {
      // A key removed, at any depth: refused when the request needs it; in the payload, judged by the rules.
      const item = /^inputs\.([^.]+)$/.exec(path);
      if (form.payload === 'one-item' && item !== null) {
        const { [item[1] as string]: _removed, ...rest } = payload[0] as Record<string, unknown>;
        return answered(form.build([rest]), `without ${path}`);
      }
      const instance = /^instances\.(\d+)(?:\.(\d+))?$/.exec(path);
      if (instance !== null) {
        const [r, c] = [Number(instance[1]), instance[2]];
        const rest = (payload as Row[]).flatMap((one, i) =>
          i !== r ? [one] : c === undefined ? [] : [one.filter((_, j) => j !== Number(c))],
        );
        return answered(form.build(rest), `without ${path}`);
      }
      const doc = structuredClone(plan.doc);
      const { parent, key } = parentOf(doc, path);
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key];
      const mutated = { ...plan, doc };
      return plan.required.includes(path) || path.startsWith('inputs.0.data') || path.startsWith('instances.')
        ? refused(mutated, `without ${path}`)
        : answered(plan, `without ${path}`, encode(mutated), true);
    }
    case 1: {
      // A field the request does not define, at the top or in an input.
      const doc = structuredClone(plan.doc);
      const target = oip && (pick & 1) === 1 ? (doc.inputs as Record<string, unknown>[])[0] : doc;
      (target as Record<string, unknown>).fuzz_extra = [{ a: 1 }, 'x', null, 7][pick % 4];
      return answered(plan, 'an extra field', encode({ ...plan, doc }), true);
    }
    case 2: {
      // The body cut short: never a whole document.
      const cut = pick % request.body.length;
      return refused(plan, `cut to ${cut} of ${request.body.length} bytes`, {
        ...request,
        body: request.body.subarray(0, cut),
      });
    }
    case 3: {
      // Bytes after the document: garbage is refused, whitespace is JSON's own.
      if (plan.encoding === 'json' && (pick & 1) === 0)
        return answered(plan, 'trailing whitespace', {
          ...request,
          body: Buffer.concat([request.body, Buffer.from(' \n\t')]),
        });
      const tail = [Buffer.from('x'), Buffer.from('{}'), Buffer.of(0), Buffer.of(0xc1)][pick % 4] as Buffer;
      const body = Buffer.concat([request.body, tail]);
      // Bytes after a binary request's data: Triton refuses them; either is fair if the answer is right.
      return plan.encoding === 'binary'
        ? answered(plan, 'bytes after the binary data', { ...request, body }, true)
        : refused(plan, `trailing ${tail.toString('hex')}`, { ...request, body });
    }
    case 4: {
      // Another Content-Type: /v2 and V1 read any; the /v1 routes take JSON or MessagePack only.
      const type = FOREIGN_TYPES[pick % FOREIGN_TYPES.length] as string;
      const headers = { ...request.headers, 'content-type': type };
      if (oip || plan.path.startsWith('/v1/models/'))
        return answered(plan, `content-type ${type}`, { ...request, headers });
      if ((pick & 4) === 0) return refused(plan, `content-type ${type}`, { ...request, headers });
      const swapped = plan.encoding === 'json' ? 'application/msgpack' : 'application/json';
      return refused(plan, `a ${plan.encoding} body sent as ${swapped}`, {
        ...request,
        headers: { 'content-type': swapped },
      });
    }
    case 5: {
      // A key given twice (JSON only): the last one counts, as JSON.parse reads it.
      if (plan.encoding === 'msgpack') return msgpackLie(plan, pick);
      const text = jsonText(plan.doc);
      const key = 'inputs' in plan.doc ? 'inputs' : 'instances';
      const otherValue = jsonText(other.doc[key]);
      // A binary request's sizes are those of its first plan's bytes: only the original goes last.
      const first = plan.encoding === 'binary' || (pick & 1) === 0;
      const body = first
        ? `{${JSON.stringify(key)}:${otherValue},${text.slice(1)}`
        : `${text.slice(0, -1)},${JSON.stringify(key)}:${otherValue}}`;
      const last = first ? plan : other;
      const bytes =
        plan.encoding === 'binary' ? Buffer.concat([Buffer.from(body), plan.binary as Buffer]) : Buffer.from(body);
      const headers =
        plan.encoding === 'binary'
          ? { ...request.headers, 'inference-header-content-length': String(Buffer.byteLength(body)) }
          : request.headers;
      return answered(
        last,
        `"${key}" twice, ${first ? 'the original last' : 'another last'}`,
        {
          ...request,
          headers,
          body: bytes,
        },
        true,
      );
    }
    case 6:
    case 7: {
      if (!oip || form.payload === 'items') return mutateValues(form, payload, kind, pick);
      // The shape or the datatype of a /v2 input.
      const doc = structuredClone(plan.doc);
      const target = (doc.inputs as Record<string, unknown>[])[0] as Record<string, unknown>;
      const field = kind % 14 === 6 ? 'shape' : 'datatype';
      target[field] = field === 'shape' ? SHAPES(rows)[pick % 12] : DATATYPES[pick % DATATYPES.length];
      return refused({ ...plan, doc }, `${field} ${JSON.stringify(target[field])}`);
    }
    case 8: {
      if (plan.encoding !== 'binary') return mutateValues(form, payload, kind, pick);
      // Inference-Header-Content-Length that does not end the JSON where it ends.
      const length = Number(request.headers['inference-header-content-length']);
      const given = LENGTHS(length)[pick % 9] as string;
      return refused(plan, `Inference-Header-Content-Length ${given}`, {
        ...request,
        headers: { ...request.headers, 'inference-header-content-length': given },
      });
    }
    case 9: {
      if (plan.encoding !== 'binary') return mutateValues(form, payload, kind, pick);
      // binary_data_size that is not the bytes the shape takes.
      const doc = structuredClone(plan.doc);
      const parameters = (input as { parameters: { binary_data_size: number } }).parameters;
      const given = BINARY_SIZES(parameters.binary_data_size)[pick % 8];
      ((doc.inputs as any[])[0] as { parameters: Record<string, unknown> }).parameters.binary_data_size = given;
      return refused({ ...plan, doc }, `binary_data_size ${JSON.stringify(given)}`);
    }
    case 10: {
      if (plan.encoding !== 'binary') return mutateValues(form, payload, kind, pick);
      // Bits flipped in the binary data: any float32 is a value the bytes may carry.
      const binary = Buffer.from(plan.binary as Buffer);
      for (let flip = 0; flip < 1 + (pick % 3); flip++) {
        const at = (pick * 7919 + flip * 104_729) % binary.length;
        binary[at] = (binary[at] as number) ^ (1 << ((pick >> flip) % 8));
      }
      const values = Array.from({ length: binary.length / 4 }, (_, i) => binary.readFloatLE(i * 4));
      const flipped = form.build(Array.from({ length: rows }, (_, r) => values.slice(r * 3, r * 3 + 3)));
      return answered(
        flipped,
        'bits flipped in its binary data',
        { ...request, body: Buffer.concat([request.body.subarray(0, request.body.length - binary.length), binary]) },
        !values.every(Number.isFinite),
      );
    }
    case 11: {
      // X-Request-Timeout-Ms: a positive plain decimal, or refused naming the header.
      const given = TIMEOUTS[pick % TIMEOUTS.length] as string;
      const headers = { ...request.headers, 'x-request-timeout-ms': given };
      return /^\d+(\.\d+)?$/.test(given) && Number(given) > 0
        ? answered(plan, `X-Request-Timeout-Ms ${given}`, { ...request, headers })
        : refused(plan, `X-Request-Timeout-Ms '${given}'`, { ...request, headers });
    }
    case 12: {
      // A body sent compressed: /v2 inflates gzip and deflate; the /v1 routes read plain bodies only (415).
      const coding = (['gzip', 'deflate', 'br', 'identity'] as const)[pick % 4] as string;
      const packed =
        coding === 'gzip' ? gzipSync(request.body) : coding === 'deflate' ? deflateSync(request.body) : request.body;
      const corrupt = (pick & 4) !== 0 && coding !== 'identity';
      const body = corrupt ? packed.subarray(0, Math.max(1, packed.length >> 1)) : packed;
      const sent = { ...request, headers: { ...request.headers, 'content-encoding': coding }, body };
      if (corrupt || coding === 'br')
        return refused(plan, `Content-Encoding ${coding}${corrupt ? ', cut short' : ''}`, sent);
      return oip
        ? answered(plan, `Content-Encoding ${coding}`, sent, coding === 'identity')
        : answered(plan, `Content-Encoding ${coding}`, sent, true);
    }
    default:
      return mutateValues(form, payload, kind, pick);
  }
}

/** X-Request-Timeout-Ms values: long enough, when valid, that no deadline passes on a loaded host. */
const TIMEOUTS = ['5000', '60000', '5000.5', '0', '-1', 'NaN', 'abc', '1e4', '0x10', '', '1e400', '+5000', '5,000'];

/** A payload's values changed (a number to a string, NaN, a row too short, …): judged by the rules. */
function mutateValues(form: Form, payload: unknown[], kind: number, pick: number): Probe {
  const plan = form.build(mutatePayload(form, payload, pick, kind + pick));
  return answered(plan, `values ${JSON.stringify(plan.binary === undefined ? plan.doc : plan.doc.inputs)}`);
}

/** MessagePack headers that lie: a map, a string or an array of 4 G entries, or the never-used byte 0xc1. */
function msgpackLie(plan: Plan, pick: number): Probe {
  const request = encode(plan);
  const body = request.body;
  const lies: [string, Buffer][] = [
    ['a map32 of 2^32-1 entries', Buffer.concat([Buffer.of(0xdf, 0xff, 0xff, 0xff, 0xff), body.subarray(1)])],
    [
      'a str32 of 2^32-1 bytes',
      Buffer.concat([body.subarray(0, 1), Buffer.of(0xdb, 0xff, 0xff, 0xff, 0xff), body.subarray(2)]),
    ],
    ['an array32 of 2^32-1 entries', Buffer.concat([body.subarray(0, 8), Buffer.of(0xdd, 0xff, 0xff, 0xff, 0xff)])],
    ['0xc1 for its inputs', Buffer.concat([body.subarray(0, 8), Buffer.of(0xc1)])],
  ];
  const [label, bytes] = lies[pick % lies.length] as [string, Buffer];
  return refused(plan, label, { ...request, body: bytes });
}

/** A mutated request of any form: its payload's values, its document, its bytes or its headers changed. */
export const mutatedProbe: fc.Arbitrary<Probe> = fc
  .tuple(validPlan, validPlan, fc.nat(13), fc.nat(1 << 20))
  .map(([{ form, payload, plan }, otherValid, kind, pick]) => {
    // The other plan, for a key given twice, is of the same form.
    const other = form.build(otherValid.form === form ? otherValid.payload : payload);
    return mutateDocument(form, payload, plan, kind, pick, other);
  });

export { sameNumber };
