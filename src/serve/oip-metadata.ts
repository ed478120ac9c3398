import type { TensorSpec } from '../model/tensor-spec.js';
import { oipDatatypeOf } from '../model/datatypes.js';
import type { ModelVersion } from './model-version.js';
import type { Registry } from './registry.js';
import { runtimeOf } from './triton-model-config.js';

/** The server metadata's name: the same on `/v2` and over gRPC. */
export const OIP_SERVER_NAME = 'batchline';

/** The protocol's extensions both transports serve (the repository extension is the admin API's: REST only). */
export const OIP_EXTENSIONS: readonly string[] = [
  'binary_tensor_data',
  'classification',
  'schedule_policy',
  'model_configuration',
  'statistics',
];

/** `$metadata_tensor`: the batch first and every free dimension as -1. */
export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

/** A model's metadata (`$metadata_model_response`, `ModelMetadataResponse`): its versions, platform, inputs and outputs. */
export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

/** The metadata of `version` (one that has loaded its model), as both transports answer it. */
export function modelMetadata(version: ModelVersion, registry: Registry): ModelMetadata {
  const { platform, backend } = runtimeOf(version);
  return {
    name: version.name,
    versions: registry.versionsOf(version.name).map((v) => String(v.version)),
    platform: platform || backend,
    inputs: version.model.inputs.map(tensorMetadata),
    outputs: version.model.outputs.map(tensorMetadata),
  };
}

function tensorMetadata(spec: TensorSpec): TensorMetadata {
  return {
    name: spec.name,
    datatype: oipDatatypeOf(spec.type),
    shape: [-1, ...spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : -1))],
  };
}
