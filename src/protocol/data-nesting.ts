import { describeShape } from '../model/tensor-spec.js';
import { JsonNumbers } from '../model/json-numbers.js';

/**
 * Where nested `data` does not nest as its input's `shape` (row-major, as the Open Inference
 * Protocol allows): its path from `data` (`[1]`) and what is found there. One walk for the
 * server's /v2 decoder and for bench's --body, which encodes the same JSON for gRPC, so both
 * refuse the same bodies.
 */
export interface NestingMismatch {
  path: string;
  found: string;
}

/** The first place where `value`, at `depth` of `shape`, does not follow it; undefined when it does. */
export function nestingMismatch(
  value: unknown,
  shape: readonly number[],
  depth = 0,
  path = '',
): NestingMismatch | undefined {
  const isArray = Array.isArray(value) || value instanceof JsonNumbers;
  if (isArray && depth === shape.length) return { path, found: 'is an array, deeper than the shape' };
  if (value instanceof JsonNumbers) {
    // Rectangular by construction (json-reader): its shape is the whole check.
    if (sameShape(value.shape, shape, depth)) return undefined;
    return {
      path,
      found: `is nested as ${describeShape(value.shape)} where the shape needs ${describeShape(shape.slice(depth))}`,
    };
  }
  if (!Array.isArray(value))
    return depth < shape.length
      ? { path, found: `is a value where the shape needs an array of ${shape[depth]}` }
      : undefined;
  if (value.length !== shape[depth])
    return { path, found: `has ${value.length} entries where the shape needs ${shape[depth]}` };
  for (let i = 0; i < value.length; i++) {
    const mismatch = nestingMismatch(value[i], shape, depth + 1, `${path}[${i}]`);
    if (mismatch !== undefined) return mismatch;
  }
  return undefined;
}

/** `input "x" has shape [2, 3], but its "data"[1] has 2 entries …`: what both callers say. */
export function describeNestingMismatch(name: string, shape: readonly number[], mismatch: NestingMismatch): string {
  return `input "${name}" has shape ${describeShape(shape)}, but its "data"${mismatch.path} ${mismatch.found}: nest it as the shape (row-major), or give it flat`;
}

function sameShape(nested: readonly number[], shape: readonly number[], depth: number): boolean {
  return nested.length === shape.length - depth && nested.every((dim, i) => dim === shape[depth + i]);
}
