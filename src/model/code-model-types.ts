import type { OipDatatype } from './datatypes.js';
import type { ElementArray } from './tensor-spec.js';

/**
 * The contract of a code model (`model.mjs`, docs/models.md) as TypeScript types, exported by
 * the package for authors who write their model in TypeScript (`import type { TensorModel }
 * from 'batchline'`). Types only: the server checks every export at load time whatever the
 * author's types said, since a module may be plain JavaScript.
 */

/** A tensor as a code model declares it: per item, in the Open Inference Protocol's words. */
export interface CodeTensorSpec {
  name: string;
  /** `FP32`, `INT64`, `BYTES`… */
  datatype: OipDatatype;
  /** The item's shape (no batch dimension); -1 for a free dimension. */
  shape: readonly number[];
}

/** What a code model's `initialize` is told. */
export interface CodeModelContext {
  /** Which of the version's instances this is, from 0 (the middleware's `worker_id`). */
  instance: number;
  /** The model version's label. */
  version: string;
  /**
   * The version's effective options (`maxBatchSize`, `batchWindowMs`, …), and `parameters`: the
   * `parameters` object of its config.json (or registration) as written, `{}` when it has none.
   */
  config: Record<string, unknown> & { parameters?: Record<string, unknown> };
}

/** What `execute` is told besides its items. */
export interface ExecuteContext {
  instance: number;
  /** Each item's input shapes (with free dimensions resolved), by input name; empty (`[]`) for a JSON model. */
  shapes: Record<string, number[]>[];
}

/** What `itemCost` is told besides its item. */
export interface ItemCostContext {
  /** The item's input shapes (with free dimensions resolved), by input name; `{}` for a JSON model. */
  shapes: Record<string, number[]>;
}

/**
 * One item as a tensor model's `execute` gets it: each input's elements, row-major, as the typed
 * array of its datatype (`Float32Array` for FP32, `BigInt64Array` for INT64, a `Uint16Array` of
 * float16 bits for FP16, `Uint8Array` for BOOL), a `string[]` for BYTES.
 */
export type CodeModelItem = Record<string, ElementArray>;

/**
 * One output of one item: a typed array or an array of numbers (bigints for 64-bit integers,
 * booleans for BOOL, strings for BYTES), or `{ data, shape }` when the output has more than one
 * free dimension.
 */
export type CodeModelOutput =
  | ElementArray
  | readonly (number | bigint | boolean | string)[]
  | { data: ElementArray | readonly (number | bigint | boolean | string)[]; shape: readonly number[] };

/**
 * `execute`'s answer: an array of one entry per item, in order; an `Error` fails that item alone
 * (500 model_failure, or, with a `code` of `ItemClientCode`, the client error it names).
 * The type makes it an array of outputs or Errors; its length is checked when it runs (an array
 * of the wrong length fails every item of the batch).
 */
export type CodeModelResults<R> = readonly (R | Error)[] | Promise<readonly (R | Error)[]>;

/** The hooks every code model may export besides `execute`. */
interface CodeModelHooks<I> {
  /**
   * An item's cost, a positive integer (Ray Serve's `batch_size_fn`, batch()'s `itemCost`): a
   * batch then holds items while their costs sum to at most `max_batch_size` (one that costs
   * more runs alone). Run on the server's main thread for each item before the queue, on a copy
   * of the module of its own: keep it cheap and synchronous, and read the item without changing
   * it. A throw or another value refuses that item's request (400 `bad_input`).
   */
  itemCost?(item: I, context: ItemCostContext): number;
  /** Once per instance, before its first batch: load weights here. A throw refuses the version. */
  initialize?(context: CodeModelContext): unknown;
  /**
   * Once per instance, when its version is unloaded or the server drains; not for an instance
   * that crashed, nor one killed (a process busy at close, or one that did not finish closing in time).
   */
  finalize?(): unknown;
}

/** The exports of a code model whose items are tensors. */
export interface TensorModel extends CodeModelHooks<CodeModelItem> {
  inputs: readonly CodeTensorSpec[];
  outputs: readonly CodeTensorSpec[];
  execute(items: CodeModelItem[], context: ExecuteContext): CodeModelResults<Record<string, CodeModelOutput>>;
}

/**
 * The exports of a code model whose items are JSON values, checked against `inputSchema` (JSON
 * Schema, defaults filled in) before the queue: `I` is the item once checked, `O` its answer.
 */
export interface JsonModel<I = unknown, O = unknown> extends CodeModelHooks<I> {
  inputSchema: object;
  execute(items: I[], context: ExecuteContext): CodeModelResults<O>;
}

/**
 * The `code` an `Error` in an item's slot may carry to blame the client's input: `bad_input`
 * (400, gRPC INVALID_ARGUMENT), `input_not_found` (404, NOT_FOUND), `unprocessable_input` (422,
 * INVALID_ARGUMENT): `Object.assign(new Error('not a PNG'), { code: 'bad_input' })`.
 */
export type { ItemClientCode } from './item-failure.js';
