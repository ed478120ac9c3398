import type { ElementType } from '../model/tensor-spec.js';

/** `InferTensorContents`: one repeated field per family of datatypes. */
export interface InferTensorContentsMessage {
  readonly bool_contents: readonly boolean[];
  readonly int_contents: readonly number[];
  readonly int64_contents: readonly number[];
  readonly uint_contents: readonly number[];
  readonly uint64_contents: readonly number[];
  readonly fp32_contents: readonly number[];
  readonly fp64_contents: readonly number[];
  readonly bytes_contents: readonly Uint8Array[];
}

/** Where each datatype's values go in `InferTensorContents`; FP16 has no field (raw contents only). */
export const CONTENTS_FIELD: Readonly<Record<ElementType, keyof InferTensorContentsMessage | undefined>> = {
  bool: 'bool_contents',
  int8: 'int_contents',
  int16: 'int_contents',
  int32: 'int_contents',
  int64: 'int64_contents',
  uint8: 'uint_contents',
  uint16: 'uint_contents',
  uint32: 'uint_contents',
  uint64: 'uint64_contents',
  float16: undefined,
  float32: 'fp32_contents',
  float64: 'fp64_contents',
  string: 'bytes_contents',
};
