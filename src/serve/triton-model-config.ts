import { basename } from 'node:path';
import { isCodeModelPath } from '../model/code-model.js';
import type { TensorSpec } from '../model/tensor-spec.js';
import { oipDatatypeOf } from '../model/datatypes.js';
import type { ModelVersion } from './model-version.js';

/**
 * What runs a version, in Triton's terms: onnxruntime for an ONNX model (`onnxruntime_onnx`); a
 * code model has no platform and the backend `javascript`, as Triton's Python models have none and
 * the backend `python`. The metadata's one `platform` names the backend where there is no platform.
 */
export function runtimeOf(version: Pick<ModelVersion, 'path'>): { platform: string; backend: string } {
  return isCodeModelPath(version.path)
    ? { platform: '', backend: 'javascript' }
    : { platform: 'onnxruntime_onnx', backend: 'onnxruntime' };
}

/**
 * A version's configuration as Triton's `ModelConfig` (model_config.proto, in the JSON form its
 * HTTP `GET /v2/models/{m}/config` answers and the same fields over gRPC): what tritonclient's
 * `get_model_config` and perf_analyzer read — `max_batch_size`, inputs and outputs without the
 * batch dimension (a free one as -1), `dynamic_batching` with the queue delay, priority levels
 * and queue policies, `instance_group`, and the warmup. `versions`: those of the model served.
 */
export function tritonModelConfig(version: ModelVersion, versions: readonly number[]): Record<string, unknown> {
  const c = version.config;
  const batcher = version.batcher;
  const levels = c.priorityLevels > 1 ? c.priorityLevels : 0;
  const queuePolicy = (maxQueueSize: number, timeoutMs: number) => ({
    timeout_action: 'REJECT',
    default_timeout_microseconds: Math.round(timeoutMs * 1000),
    allow_timeout_override: true,
    max_queue_size: maxQueueSize,
  });
  const perLevel: Record<string, unknown> = {};
  for (const [level, own] of Object.entries(c.priorityQueuePolicy ?? {}))
    perLevel[level] = queuePolicy(own.maxQueueSize ?? c.maxQueueSize, own.requestTimeoutMs ?? c.requestTimeoutMs);
  const { platform, backend } = runtimeOf(version);
  return {
    name: version.name,
    platform,
    backend,
    version_policy: { specific: { versions: [...versions] } },
    max_batch_size: c.maxBatchSize,
    input: version.model.inputs.map((spec) => ({
      name: spec.name,
      data_type: dataTypeOf(spec),
      format: 'FORMAT_NONE',
      dims: dimsOf(spec),
      is_shape_tensor: false,
      allow_ragged_batch: false,
      optional: false,
    })),
    output: version.model.outputs.map((spec) => ({
      name: spec.name,
      data_type: dataTypeOf(spec),
      dims: dimsOf(spec),
      label_filename: version.labelFilename ?? '',
      is_shape_tensor: false,
    })),
    dynamic_batching: {
      preferred_batch_size: [],
      max_queue_delay_microseconds: Math.round(c.batchWindowMs * 1000),
      preserve_ordering: false,
      priority_levels: levels,
      default_priority_level: levels === 0 ? 0 : (batcher?.levels.defaultLevel ?? levels),
      default_queue_policy: queuePolicy(c.maxQueueSize, c.requestTimeoutMs),
      priority_queue_policy: perLevel,
    },
    instance_group: [
      { name: `${version.name}_0`, kind: 'KIND_CPU', count: c.instances, gpus: [], profile: [], passive: false },
    ],
    default_model_filename: version.path === undefined ? '' : basename(version.path),
    parameters: tritonParameters(version.parameters),
    model_warmup: (c.warmupBatchSizes ?? []).map((size) => ({
      name: `warmup_${size}`,
      batch_size: size,
      count: c.warmupCount,
      inputs: Object.fromEntries(
        version.model.inputs.map((spec) => [
          spec.name,
          {
            data_type: dataTypeOf(spec),
            dims: c.warmupDims?.[spec.name] ?? dimsOf(spec).map((dim) => (dim < 0 ? 1 : dim)),
            ...(c.warmupData === 'random' ? { random_data: true } : { zero_data: true }),
          },
        ]),
      ),
    })),
  };
}

/**
 * A config.json's `parameters` as Triton's `map<string, ModelParameter>`, whose one field is a
 * string (`{"threshold": {"string_value": "0.5"}}`, as config.pbtxt writes every value): a value
 * written so already as it is, a string as its `string_value`, any other JSON value as its JSON text.
 */
function tritonParameters(parameters: Readonly<Record<string, unknown>>): Record<string, { string_value: string }> {
  return Object.fromEntries(
    Object.entries(parameters).map(([key, value]) => [key, { string_value: stringValueOf(value) }]),
  );
}

function stringValueOf(value: unknown): string {
  if (typeof value === 'string') return value;
  const tritonStyle = value as { string_value?: unknown } | null;
  if (
    typeof tritonStyle === 'object' &&
    tritonStyle !== null &&
    Object.keys(tritonStyle).length === 1 &&
    typeof tritonStyle.string_value === 'string'
  )
    return tritonStyle.string_value;
  return JSON.stringify(value);
}

/** `TYPE_FP32`, …; BYTES is `TYPE_STRING` in a model configuration. */
function dataTypeOf(spec: TensorSpec): string {
  const oip = oipDatatypeOf(spec.type);
  return oip === 'BYTES' ? 'TYPE_STRING' : `TYPE_${oip}`;
}

function dimsOf(spec: TensorSpec): number[] {
  return spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : -1));
}
