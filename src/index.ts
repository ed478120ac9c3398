/**
 * batchline as a library: `import { batch, serve } from 'batchline'`. This file is the package's
 * one public surface (its `exports`); everything else under dist/ is internal and may change.
 */
export { batch } from './library/batch.js';
export type { BatchContext, BatchFunction, Batched, CallOptions, CallResult, CloseOptions } from './library/batch.js';
export type { BatchOptions, LiveBatchOptions, ResolvedBatchOptions } from './library/batch-options.js';
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
// The types the public ones are made of, so that an app's own exported values (declaration emit)
// and annotations can name them: otherwise tsc says TS2742, "cannot be named … not portable".
export type { BatcherSnapshot } from './core/batcher-stats.js';
export type { BatchStats } from './library/batch-stats.js';
export type { BatcherCounts } from './core/batcher-options.js';
export type { PercentilesMs } from './core/latency-histogram.js';
export type { BreakerState, OutcomeKind, RejectReason } from './core/types.js';
export type {
  BatchingConfigStats,
  ModelVersionState,
  ModelVersionStats,
  ResponsesByProtocol,
  ServedOutcomes,
  ServedSnapshot,
  ServerState,
  ServerStats,
} from './stats-contract/server-stats.js';
export type {
  CodeModelContext,
  CodeModelItem,
  CodeModelOutput,
  CodeModelResults,
  CodeTensorSpec,
  ExecuteContext,
  ItemClientCode,
  ItemCostContext,
  JsonModel,
  TensorModel,
} from './model/code-model-types.js';
export type { OipDatatype } from './model/datatypes.js';
export type { ElementArray, TypedElementArray } from './model/tensor-spec.js';
