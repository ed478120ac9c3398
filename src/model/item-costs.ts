import { BatchlineError } from '../errors.js';
import { messageOf, safeDetail } from '../message-text.js';
import { described } from '../options/code-options.js';
import type { ItemCostContext } from './code-model-types.js';
import { jsonTextOf } from './json-items.js';
import type { ItemTensors } from './tensor-spec.js';

/** A code model's `itemCost` as the server runs it on a row: its cost, or BAD_INPUT naming `itemCost`. */
export type RowCost = (row: ItemTensors) => number;

const NO_SHAPES: ItemCostContext = Object.freeze({ shapes: Object.freeze({}) }) as ItemCostContext;

/**
 * A code model's `itemCost` over the rows the server decoded, on the main thread before the
 * queue: a tensor model's item as `execute` gets it (`{ [input]: typed array }`, with its shapes
 * beside), a JSON model's as the value its schema checked (defaults filled in). Costs are
 * positive integers, as batch()'s: a float sum drifts, and a cost of 0 would make a batch
 * unbounded. Anything else, or a throw, is that row's client's 400; nothing else is touched.
 */
export function rowCost(itemCost: (item: unknown, context: ItemCostContext) => unknown, json: boolean): RowCost {
  return (row) => {
    let cost: unknown;
    try {
      // A tensor item's arrays are the row's own (not copies: the main thread costs every item,
      // and an image's copy would double its decoding); docs/models.md asks for them read only.
      cost = json ? itemCost(JSON.parse(jsonTextOf(row)), NO_SHAPES) : itemCost(...tensorsOf(row));
    } catch (error) {
      throw new BatchlineError('BAD_INPUT', `itemCost threw for this item: ${safeDetail(messageOf(error))}`);
    }
    if (isPromiseLike(cost)) {
      // Nothing awaits it: a rejection left unhandled would end the server, so it is let go here.
      Promise.resolve(cost).catch(() => {});
      throw new BatchlineError(
        'BAD_INPUT',
        'itemCost returned a Promise for this item; return the cost itself, a positive integer: the server costs each item before it queues it, and cannot wait for it',
      );
    }
    if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1)
      throw new BatchlineError(
        'BAD_INPUT',
        `itemCost returned ${typeof cost === 'number' ? String(cost) : described(cost)} for this item, expected a positive integer (its cost, which max_batch_size limits a batch's sum of)`,
      );
    return cost;
  };
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

function tensorsOf(row: ItemTensors): [Record<string, unknown>, ItemCostContext] {
  const item: Record<string, unknown> = {};
  const shapes: Record<string, number[]> = {};
  for (const name in row) {
    item[name] = row[name]!.data;
    shapes[name] = row[name]!.shape;
  }
  return [item, { shapes }];
}
