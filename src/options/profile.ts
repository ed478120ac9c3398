import { SERVE_OPTIONS } from './serve.js';
import type { OptionSchema, OptionValues } from './schema.js';

/** Every option of `batchline profile`. The model options are serve's, so a profile measures what serve runs. */
export const PROFILE_OPTIONS = {
  model: {
    ...SERVE_OPTIONS.model,
    description:
      'path of a model to profile: an ONNX file or a code model (.mjs, .js; timed on the item of --body when given, which one of JSON items needs) (default: the embedded toy-logistic-v1)',
  },
  intraOpThreads: SERVE_OPTIONS.intraOpThreads,
  batchSizes: {
    kind: 'string',
    flag: 'batch-sizes',
    default: '1,2,4,8,16,32',
    description: 'batch sizes to measure, comma-separated',
  },
  warmup: {
    kind: 'int',
    flag: 'warmup',
    default: 20,
    min: 0,
    max: 100_000,
    description: 'untimed runs per batch size before measuring',
  },
  repetitions: {
    kind: 'int',
    flag: 'repetitions',
    default: 100,
    min: 1,
    max: 1_000_000,
    description: 'timed runs per batch size (interleaved across sizes, so drift hits all alike)',
  },
  seed: {
    kind: 'int',
    flag: 'seed',
    default: 1,
    min: 0,
    max: 4_294_967_295,
    description: 'seed of the random inputs',
  },
  itemShape: {
    kind: 'string',
    flag: 'item-shape',
    default: undefined,
    description:
      "one item's shape per input with free dimensions, such as x=3x48x192 (comma-separated for several inputs); free dimensions not given are measured at size 1",
  },
  body: {
    kind: 'string',
    flag: 'body',
    default: undefined,
    description:
      "a request body to time serve's reading and checking of it with, inline or @file, such as one real request; a code model's batches are made of its item (a model of JSON items needs one; one that refuses random values is given one) (default: one generated item in JSON, three decimals a value)",
  },
  serveDuration: {
    kind: 'duration',
    flag: 'serve-duration',
    default: 3000,
    minMs: 0,
    maxMs: 600_000,
    description:
      'with --model: how long a real serve answers these requests over HTTP to measure its CPU per request by thread, HTTP and garbage collection included, in a closed loop and again under Poisson arrivals (0 = skip; Linux)',
  },
  out: {
    kind: 'string',
    flag: 'out',
    default: undefined,
    description: 'write the profile here, for simulate --latency-profile',
  },
  json: {
    kind: 'string',
    flag: 'json',
    default: undefined,
    description: 'write the profile as JSON to a file, or - for stdout (instead of the table)',
  },
} as const satisfies OptionSchema;

export type ProfileOptions = OptionValues<typeof PROFILE_OPTIONS>;
