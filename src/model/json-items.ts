import type { ItemTensors, TensorSpec } from './tensor-spec.js';

/**
 * A model whose items are JSON values (a code model with an `inputSchema`) travels the serving
 * path as every model does, as tensors: one string tensor holding the value's JSON text. The
 * threads, processes (tensor frames), batcher and isolation need nothing else; only the two ends
 * read the text: the instance parses it for `execute`, and the reply splices it into its body.
 */
export const JSON_TENSOR = 'json';

/** The one input, and the one output, of a JSON model. */
export const JSON_SPEC: Readonly<TensorSpec> = Object.freeze({ name: JSON_TENSOR, type: 'string', itemShape: [] });

/** A JSON value as an item. */
export function jsonItem(text: string): ItemTensors {
  return { [JSON_TENSOR]: { data: [text], shape: [] } };
}

/** The JSON text an item holds. */
export function jsonTextOf(item: ItemTensors): string {
  const data = item[JSON_TENSOR]?.data;
  if (!Array.isArray(data) || typeof data[0] !== 'string') throw new Error('the item holds no JSON value');
  return data[0];
}
