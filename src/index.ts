/**
 * batchline as a library: `import { batch, serve } from 'batchline'`. This file is the package's
 * one public surface (its `exports`); everything else under dist/ is internal and may change.
 */
export { batch } from './library/batch.js';
export type { BatchContext, BatchFunction, Batched, CallOptions, CallResult, CloseOptions } from './library/batch.js';
export type { BatchOptions, ResolvedBatchOptions } from './library/batch-options.js';
export {
  BatchError,
  CircuitOpenError,
  DeadlineExceededError,
  InvalidOptionError,
  ModelFailureError,
  OverSlaError,
  QueueFullError,
  ShuttingDownError,
} from './library/errors.js';
export type { BatchErrorCode, BatchErrorOptions } from './library/errors.js';
export { serve } from './library/serve.js';
export type { RunningServer, ServeOptions } from './library/serve.js';
export type { BatcherSnapshot, BatchStats } from './core/batcher-stats.js';
export type { ServerStats } from './stats-contract/server-stats.js';
export type {
  CodeModelContext,
  CodeModelItem,
  CodeModelOutput,
  CodeModelResults,
  CodeTensorSpec,
  ExecuteContext,
  JsonModel,
  TensorModel,
} from './model/code-model-types.js';
