import type { OptionSchema } from './schema.js';

/**
 * The batching options, shared by `serve` and `simulate` so both take the same names, env
 * variables and defaults (the defaults of the original Batchline).
 */
export const BATCHING_OPTIONS = {
  maxBatchSize: {
    kind: 'int', flag: 'max-batch-size', env: 'MAX_BATCH_SIZE', default: 8, min: 1, max: 4096,
    description: 'largest batch handed to the model',
  },
  batchWindowMs: {
    kind: 'number', flag: 'batch-window-ms', env: 'BATCH_WINDOW_MS', default: 10, min: 0, max: 60_000,
    description: 'longest the oldest waiting request waits for company, in ms from its arrival',
  },
  maxQueueSize: {
    kind: 'int', flag: 'max-queue-size', env: 'MAX_QUEUE_SIZE', default: 128, min: 1, max: 10_000_000,
    description: 'requests allowed to wait; more are rejected with 429',
  },
  requestTimeoutMs: {
    kind: 'number', flag: 'request-timeout-ms', env: 'REQUEST_TIMEOUT_MS', default: 2000, min: 1, max: 1e9,
    description: 'deadline of a request in ms from its arrival; past it the answer is 504',
  },
  instances: {
    kind: 'int', flag: 'instances', env: 'INSTANCES', default: 1, min: 1, max: 256,
    description: 'model instances taking batches from the one queue, each a session on its own thread',
  },
} as const satisfies OptionSchema;
