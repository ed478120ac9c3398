import { BATCHING_OPTIONS, INLINE_MAILBOX_OPTION, MAX_ITEM_BATCH_SIZE, PIPELINE_OPTION } from './batching.js';
import type { OptionSchema, OptionValues } from './schema.js';
import { parseWarmupBatchSizes, parseWarmupDims, warmupDimsFromText } from './warmup-values.js';

/** The onnxruntime execution providers `--execution-provider` takes: those onnxruntime-node 1.30 builds for some platform. */
export const EXECUTION_PROVIDERS = ['cpu', 'cuda', 'tensorrt', 'webgpu', 'dml', 'coreml'] as const;
export type ExecutionProvider = (typeof EXECUTION_PROVIDERS)[number];

/**
 * The largest max_batch_size of a served version whose code model exports `itemCost`: a limit of
 * cost (a text's tokens), which each item's cost of at least 1 makes a bound of its items too. Not
 * batch()'s 10⁹: /v1/stats' readers (watch, bench and its report) draw a row or a point per batch
 * size up to a version's max_batch_size, and take a server's figure up to 65536 only
 * (stats-contract/is-server-stats.ts). A version that counts items is held to 4096 once the load
 * says which it is (serve/item-batch-size.ts).
 */
export const MAX_SERVED_BATCH_COST = 65_536;

/**
 * The options one model version may set for itself: the batching options and how its model
 * runs. On the command line they are the server's defaults; a model's `config.json` in a
 * repository takes the same options in snake_case (`max_batch_size`), with the same ranges.
 */
export const MODEL_VERSION_OPTIONS = {
  ...BATCHING_OPTIONS,
  maxBatchSize: {
    ...BATCHING_OPTIONS.maxBatchSize,
    max: MAX_SERVED_BATCH_COST,
    allowed: `an integer from 1 to ${MAX_ITEM_BATCH_SIZE}, or to ${MAX_SERVED_BATCH_COST} for a code model that exports itemCost`,
    description: `largest batch handed to the model: its items, up to ${MAX_ITEM_BATCH_SIZE}; for a code model that exports itemCost, the sum of their costs`,
  },
  modelLatencyMs: {
    kind: 'affine',
    flag: 'model-latency-ms',
    env: 'MODEL_LATENCY_MS',
    default: '20',
    maxMs: 600_000,
    description:
      "simulated accelerator time added to each batch, in ms: fixed (20) or growing with the batch size n (5+2n); 0 = the model's own time only, the default for a model of yours (--model, --model-repository)",
  },
  intraOpThreads: {
    kind: 'int',
    flag: 'intra-op-threads',
    env: 'INTRA_OP_THREADS',
    default: 1,
    min: 0,
    max: 256,
    description:
      "onnxruntime threads per batch run (0 = one per core, within a container's CPU limit; more helps large models, hurts small ones)",
  },
  executionProvider: {
    kind: 'enum',
    flag: 'execution-provider',
    env: 'EXECUTION_PROVIDER',
    choices: EXECUTION_PROVIDERS,
    default: 'cpu',
    description:
      "onnxruntime's execution provider: cpu, or an accelerator's (cuda, tensorrt: onnxruntime-node's CUDA 12 package; webgpu; dml on Windows; coreml on macOS), refused at start-up where it is not installed",
  },
  execution: {
    kind: 'enum',
    flag: 'execution',
    env: 'EXECUTION',
    choices: ['auto', 'inline', 'worker', 'shared', 'process'],
    default: 'auto',
    description:
      "where batches run: process = a child process per instance (killed and restarted when stuck), worker = a thread per instance, shared = each instance a session on the server's shared model threads (one a core; ~9 MB less a model, for many models), inline = the main thread (a batch that never yields blocks the server); auto = inline for the embedded model, worker for model files",
  },
  stuckBatchFactor: {
    kind: 'number',
    flag: 'stuck-batch-factor',
    env: 'STUCK_BATCH_FACTOR',
    default: 2,
    min: 1,
    max: 1000,
    description:
      'a batch running longer than this many times its longest request deadline marks its instance stuck (a process is killed and restarted)',
  },
  pipeline: PIPELINE_OPTION,
  inlineMailbox: INLINE_MAILBOX_OPTION,
  holdRetries: {
    kind: 'boolean',
    flag: 'hold-retries',
    negatable: true,
    describesOn: true,
    env: 'HOLD_RETRIES',
    default: true,
    description:
      'a connection that sends again before the Retry-After of its last 429 and is refused again gets that 429 when the Retry-After has passed, so clients that retry at once cost one refusal a second each instead of the CPU the model needs',
  },
  warmupBatchSizes: {
    kind: 'json',
    flag: 'warmup-batch-sizes',
    env: 'WARMUP_BATCH_SIZES',
    default: undefined,
    placeholder: 'sizes',
    parse: parseWarmupBatchSizes,
    fromText: (text: string) => text.split(','),
    description:
      "before a version is ready, run one batch of each of these sizes on every instance (Triton's model_warmup), e.g. 1,8; /readyz and ModelReady wait for it",
  },
  warmupDims: {
    kind: 'json',
    flag: 'warmup-dims',
    env: 'WARMUP_DIMS',
    default: undefined,
    placeholder: 'dims',
    parse: parseWarmupDims,
    fromText: warmupDimsFromText,
    description:
      'the item shape each named input\'s warmup batches take, its free (-1) dimensions filled (Triton\'s model_warmup dims), e.g. x=3x48x192 or {"x":[3,48,192]}; an input not named has its free dimensions as 1',
  },
  warmupCount: {
    kind: 'int',
    flag: 'warmup-count',
    env: 'WARMUP_COUNT',
    default: 1,
    min: 1,
    max: 100,
    description:
      "how many times each warmup batch size runs on each instance (Triton's model_warmup count): onnxruntime's second run of a shape is still slower than the third",
  },
  warmupData: {
    kind: 'enum',
    flag: 'warmup-data',
    env: 'WARMUP_DATA',
    choices: ['zero', 'random'],
    default: 'zero',
    description: "what the warmup batches hold: zeros, or seeded random values (as Triton's zero_data and random_data)",
  },
  latencyProfile: {
    kind: 'string',
    flag: 'latency-profile',
    env: 'LATENCY_PROFILE',
    default: undefined,
    description:
      'a profile of the model (batchline profile --out) that adaptive batching and SLA admission start from, before they have measured runs of their own',
  },
} as const satisfies OptionSchema;

/** One model version's effective options: its config.json over the server's flags. */
export type ModelVersionConfig = OptionValues<typeof MODEL_VERSION_OPTIONS>;

/** Every option of `batchline serve`: the batching options plus the server's own. */
export const SERVE_OPTIONS = {
  host: {
    kind: 'string',
    flag: 'host',
    env: 'HOST',
    default: '127.0.0.1',
    description: 'address to listen on (use 0.0.0.0 in a container)',
  },
  allowedHosts: {
    kind: 'string',
    flag: 'allowed-hosts',
    env: 'ALLOWED_HOSTS',
    default: '',
    description:
      'on a loopback --host, Host names answered besides localhost, 127.x.x.x and [::1] (comma-separated; * = any); others get 421',
  },
  port: {
    kind: 'int',
    flag: 'port',
    env: 'PORT',
    default: 8080,
    min: 0,
    max: 65_535,
    description: 'port to listen on (0 = any free port)',
  },
  grpcPort: {
    kind: 'int',
    flag: 'grpc-port',
    env: 'GRPC_PORT',
    default: undefined,
    min: 0,
    max: 65_535,
    description:
      "also serve the Open Inference Protocol over gRPC on this port, on --host (KServe's custom predictors use 8081; 0 = any free port; off when not given)",
  },
  grpcMaxMessageBytes: {
    kind: 'int',
    flag: 'grpc-max-message-bytes',
    env: 'GRPC_MAX_MESSAGE_BYTES',
    default: undefined,
    min: 1024,
    max: 2_147_483_647,
    description:
      "largest gRPC message received or sent (default: --oip-body-limit-bytes, as /v2's bodies; Triton's gRPC takes 2147483647); larger gets RESOURCE_EXHAUSTED",
  },
  ...MODEL_VERSION_OPTIONS,
  model: {
    kind: 'string',
    flag: 'model',
    env: 'MODEL',
    default: undefined,
    description:
      'path of a model to serve: an ONNX file, or your own code (.mjs, .js; docs/models.md); version 1, or a path ending NAME/VERSION/model.onnx (.mjs, .js) serves NAME version VERSION (default: the embedded toy-logistic-v1)',
  },
  modelName: {
    kind: 'string',
    flag: 'model-name',
    env: 'MODEL_NAME',
    default: undefined,
    description:
      'name of the --model model in routes and metrics (default: the file name without .onnx, .mjs or .js; NAME for NAME/VERSION/model.onnx, served as version VERSION, as a repository does)',
  },
  modelRepository: {
    kind: 'string',
    flag: 'model-repository',
    env: 'MODEL_REPOSITORY',
    default: undefined,
    description:
      'directory of models to serve: NAME/VERSION/model.onnx (or model.mjs), with an optional NAME/config.json',
  },
  defaultModel: {
    kind: 'string',
    flag: 'default-model',
    env: 'DEFAULT_MODEL',
    default: undefined,
    description: 'model that POST /v1/infer serves when the repository holds several',
  },
  adminToken: {
    kind: 'string',
    flag: 'admin-token',
    env: 'ADMIN_TOKEN',
    default: undefined,
    // An Authorization header carries a bearer token as one word: 'a b' started a server that
    // then refused every admin request.
    pattern: { test: /^[\x21-\x7e]+$/, allowed: 'printable ASCII characters without spaces' },
    secret: true,
    description: 'turns on the admin API (/admin/models): every admin request needs Authorization: Bearer <token>',
  },
  adminHost: {
    kind: 'string',
    flag: 'admin-host',
    env: 'ADMIN_HOST',
    default: undefined,
    description: "address of the admin API's own listener, with --admin-port (default: --host)",
  },
  adminPort: {
    kind: 'int',
    flag: 'admin-port',
    env: 'ADMIN_PORT',
    default: 0,
    min: 0,
    max: 65_535,
    description: 'port of a separate listener for the admin API (0 = the admin API shares the main listener)',
  },
  maxRequestTimeoutMs: {
    kind: 'number',
    flag: 'max-request-timeout-ms',
    env: 'MAX_REQUEST_TIMEOUT_MS',
    default: 30_000,
    min: 1,
    max: 1e9,
    description:
      'cap on a deadline a client asks for with X-Request-Timeout-Ms (where the deadline a request gets asking for none is longer, its --request-timeout-ms or the default of its priority level, that is the cap)',
  },
  drainDelayMs: {
    kind: 'number',
    flag: 'drain-delay-ms',
    env: 'DRAIN_DELAY_MS',
    default: 0,
    min: 0,
    max: 600_000,
    description:
      'on SIGTERM/SIGINT, how long /readyz answers 503 while requests are still served before the drain starts, so a load balancer stops sending first',
  },
  drainTimeoutMs: {
    kind: 'number',
    flag: 'drain-timeout-ms',
    env: 'DRAIN_TIMEOUT_MS',
    default: 10_000,
    min: 0,
    max: 600_000,
    description: 'on SIGTERM/SIGINT, how long queued and running requests may take to finish',
  },
  bodyLimitBytes: {
    kind: 'int',
    flag: 'body-limit-bytes',
    env: 'BODY_LIMIT_BYTES',
    default: 1_048_576,
    min: 64,
    max: 1_073_741_824,
    description: "largest request body accepted on batchline's own routes; larger gets 413",
  },
  oipBodyLimitBytes: {
    kind: 'int',
    flag: 'oip-body-limit-bytes',
    env: 'OIP_BODY_LIMIT_BYTES',
    default: 67_108_864,
    min: 64,
    max: 2_147_483_647,
    description:
      "largest inference request body accepted on /v2 (Triton's HTTP limit, 64 MiB: the JSON form of an image batch is ~10x its binary size); larger gets 413; the gRPC message limit too, unless --grpc-max-message-bytes",
  },
  allowClientShm: {
    kind: 'boolean',
    flag: 'allow-client-shm',
    env: 'ALLOW_CLIENT_SHM',
    default: false,
    description:
      "serve Triton's system shared memory extension on /v2 and over gRPC: clients register regions under /dev/shm and send inputs and take outputs there (off by default, as in Triton since April 2026: a client that can register can make the server read and write its shared memory)",
  },
  maxOutputElements: {
    kind: 'int',
    flag: 'max-output-elements',
    env: 'MAX_OUTPUT_ELEMENTS',
    default: 4_194_304,
    min: 1,
    max: 1_000_000_000,
    description:
      "most numbers one answer may carry (all outputs together; text, such as a JSON model's answer, counts one a 10 characters); a larger output is answered 500 output_too_large",
  },
  headersTimeoutMs: {
    kind: 'number',
    flag: 'headers-timeout-ms',
    env: 'HEADERS_TIMEOUT_MS',
    default: 20_000,
    min: 10,
    max: 600_000,
    description:
      'a connection must send its request headers within this many ms (from its first byte, or from the previous answer); else 408 and close',
  },
  bodyTimeoutMs: {
    kind: 'number',
    flag: 'body-timeout-ms',
    env: 'BODY_TIMEOUT_MS',
    default: 60_000,
    min: 10,
    max: 3_600_000,
    description:
      'a request must arrive whole (headers and body) within this many ms; else 408 and close (over gRPC: the one request message of a call, else DEADLINE_EXCEEDED)',
  },
  keepAliveTimeoutMs: {
    kind: 'number',
    flag: 'keep-alive-timeout-ms',
    env: 'KEEP_ALIVE_TIMEOUT_MS',
    default: 72_000,
    min: 1,
    max: 3_600_000,
    description:
      "an idle keep-alive connection is closed after this many ms (longer than a load balancer's 60 s); so is a gRPC connection with no call open",
  },
  maxRequestsPerConnection: {
    kind: 'int',
    flag: 'max-requests-per-connection',
    env: 'MAX_REQUESTS_PER_CONNECTION',
    default: 1000,
    min: 0,
    max: 1_000_000_000,
    description: 'answers on one keep-alive connection before it is closed (0 = no limit)',
  },
  maxConnections: {
    kind: 'int',
    flag: 'max-connections',
    env: 'MAX_CONNECTIONS',
    default: 1000,
    min: 1,
    max: 1_000_000,
    description:
      'open connections at most, on each listener (HTTP, gRPC); more are closed at once, but for 8 the HTTP listener keeps for health probes (keep their sum under `ulimit -n`)',
  },
  logRequests: {
    kind: 'boolean',
    flag: 'log-requests',
    env: 'LOG_REQUESTS',
    default: false,
    description: 'log one line per request (costly at thousands of requests a second)',
  },
} as const satisfies OptionSchema;

export type ServeConfig = OptionValues<typeof SERVE_OPTIONS>;

/**
 * `--model-latency-ms` simulates an accelerator around the embedded toy model, whose own run takes
 * microseconds: 20 ms a batch unless told otherwise. A model of the user's own (`--model`,
 * `--model-repository`) runs in its own time: unless the option was given, nothing is added that
 * the user did not ask for (a real model's p50 would otherwise carry 20 ms of pretence a batch).
 */
export function withModelLatencyDefault(config: ServeConfig, given: boolean): ServeConfig {
  if (given || (config.model === undefined && config.modelRepository === undefined)) return config;
  // The spread carries the record of the options given (given.ts).
  return Object.freeze({ ...config, modelLatencyMs: Object.freeze({ aMs: 0, bMs: 0 }) });
}
