import { BATCHING_OPTIONS } from './batching.js';
import type { OptionSchema, OptionValues } from './schema.js';

/** Every option of `batchline serve`: the batching options plus the server's own. */
export const SERVE_OPTIONS = {
  host: {
    kind: 'string', flag: 'host', env: 'HOST', default: '127.0.0.1',
    description: 'address to listen on (use 0.0.0.0 in a container)',
  },
  port: { kind: 'int', flag: 'port', env: 'PORT', default: 8080, min: 0, max: 65_535, description: 'port to listen on (0 = any free port)' },
  ...BATCHING_OPTIONS,
  modelLatencyMs: {
    kind: 'number', flag: 'model-latency-ms', env: 'MODEL_LATENCY_MS', default: 20, min: 0, max: 600_000,
    description: 'simulated accelerator time added to each batch, in ms (0 = the model\'s own time only)',
  },
  model: {
    kind: 'string', flag: 'model', env: 'MODEL', default: undefined,
    description: 'path of an ONNX model to serve (default: the embedded toy-logistic-v1)',
  },
  intraOpThreads: {
    kind: 'int', flag: 'intra-op-threads', env: 'INTRA_OP_THREADS', default: 1, min: 0, max: 256,
    description: 'onnxruntime threads per batch run (0 = one per core; more helps large models, hurts small ones)',
  },
  execution: {
    kind: 'enum', flag: 'execution', env: 'EXECUTION', choices: ['auto', 'inline', 'worker'], default: 'auto',
    description: 'where batches run: worker = a thread per instance, inline = the main thread; auto = inline for the embedded model, worker for --model',
  },
  maxRequestTimeoutMs: {
    kind: 'number', flag: 'max-request-timeout-ms', env: 'MAX_REQUEST_TIMEOUT_MS', default: 30_000, min: 1, max: 1e9,
    description: 'cap on a deadline a client asks for with X-Request-Timeout-Ms',
  },
  drainTimeoutMs: {
    kind: 'number', flag: 'drain-timeout-ms', env: 'DRAIN_TIMEOUT_MS', default: 10_000, min: 0, max: 600_000,
    description: 'on SIGTERM/SIGINT, how long queued and running requests may take to finish',
  },
  bodyLimitBytes: {
    kind: 'int', flag: 'body-limit-bytes', env: 'BODY_LIMIT_BYTES', default: 1_048_576, min: 64, max: 1_073_741_824,
    description: 'largest request body accepted; larger gets 413',
  },
  logRequests: {
    kind: 'boolean', flag: 'log-requests', env: 'LOG_REQUESTS', default: false,
    description: 'log one line per request (costly at thousands of requests a second)',
  },
} as const satisfies OptionSchema;

export type ServeConfig = OptionValues<typeof SERVE_OPTIONS>;
