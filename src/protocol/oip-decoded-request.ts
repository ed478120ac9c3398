import type { ItemTensors, TensorSpec } from '../model/tensor-spec.js';
import type { Classification } from './classification.js';
import type { ScheduleParameters } from './schedule-parameters.js';
import type { SharedMemoryAccess, SharedMemoryRef } from './shared-memory-parameters.js';

/**
 * An Open Inference Protocol inference request as both transports decode it (`/v2`'s body in
 * `oip-request.ts`, gRPC's `ModelInferRequest` in `grpc-infer-request.ts`), and what a decoder
 * checks it against; the answer's encoders read the outputs asked for.
 */

/** What the decoder needs of a model: its inputs and outputs, per item (no batch dimension). */
export interface OipModelView {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** The class labels by index, for outputs asked for as a classification (its labels file). */
  readonly labels?: readonly string[];
}

/** An output the client asked for, whether it wants it as binary data, and as a classification. */
export interface RequestedOutput {
  readonly spec: TensorSpec;
  readonly binary: boolean;
  /** Set when asked with `parameters.classification`: the output is answered as its top classes. */
  readonly classification?: Classification;
  /** Set when asked with `parameters.shared_memory_region`: the output's bytes go there, not in the answer. */
  readonly sharedMemory?: { readonly ref: SharedMemoryRef; readonly access: SharedMemoryAccess };
}

/** An Open Inference Protocol inference request, decoded into the model's items. */
export interface OipRequest {
  /** The request's `id`, echoed in the answer. */
  readonly id: string | undefined;
  /** The batch dimension every input shares: the request carries this many items. */
  readonly rows: number;
  /** One entry per row: each input's values for that item, in an array of its own. */
  readonly items: ItemTensors[];
  /** The outputs to answer with, in the order asked (every output when none was named). */
  readonly outputs: readonly RequestedOutput[];
  /** Its `priority` and `timeout` parameters. */
  readonly schedule: ScheduleParameters;
}
