import { stat } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { BatchlineError } from '../errors.js';
import { messageOf } from '../message-text.js';
import type { CodeModelContext, ExecuteContext, ItemCostContext } from './code-model-types.js';
import { elementTypeOf, OIP_DATATYPES } from './datatypes.js';
import { INTEGER_RANGE } from './element-values.js';
import { clientCodeOf, ItemFailure, NotOnePerItemFailure } from './item-failure.js';
import { notOnePerItem } from '../core/per-item-results.js';
import { toFloat16Bits } from './float16.js';
import { JSON_SPEC, jsonItem, jsonTextOf } from './json-items.js';
import {
  allocate,
  describeShape,
  elementCount,
  type ElementArray,
  type ItemTensors,
  type TensorSpec,
} from './tensor-spec.js';

/** The exports of a `model.mjs`, as found: each is checked here (code-model-types.ts has the contract's types). */
interface CodeModelModule {
  inputs?: unknown;
  outputs?: unknown;
  inputSchema?: unknown;
  itemCost?: unknown;
  initialize?: (context: CodeModelContext) => unknown;
  finalize?: () => unknown;
  [name: string]: unknown;
}

export interface CodeModelOptions {
  /** The export that runs a batch (default `execute`; the middleware's registration calls it `function`). */
  functionName?: string;
  instance?: number;
  version?: string;
  config?: Record<string, unknown>;
  /**
   * Added to the module's URL, so that the module is imported afresh for it: inline, where every
   * instance shares the server's module cache, each version's instance has a module (and its
   * module-level state) of its own, as it has in a thread or a process.
   */
  moduleKey?: string;
}

/** Whether `path` names a JavaScript module (a code model) rather than an ONNX graph. */
export function isCodeModelPath(path: string | undefined): boolean {
  return path !== undefined && /\.(m?js)$/i.test(path);
}

/**
 * A model written in JavaScript (Triton's Python backend's shape: `initialize`, `execute(items)`,
 * `finalize`), run where an ONNX session runs: in a model instance's thread or process, or
 * inline. Its items are tensors by its `inputs` and `outputs` specs, or JSON values when it
 * declares an `inputSchema` instead (checked on the main thread before the queue). `execute`
 * answers one entry per item, an `Error` failing that item alone; a throw fails the batch.
 */
export class CodeModel {
  private constructor(
    private readonly execute: (items: unknown[], context: ExecuteContext) => unknown,
    private readonly finalize: (() => unknown) | undefined,
    readonly inputs: TensorSpec[],
    readonly outputs: TensorSpec[],
    /** The JSON Schema of its items, when they are JSON values. */
    readonly inputSchema: object | undefined,
    private readonly instance: number,
    /** It exports `itemCost`, which the server's main thread runs on a copy of its own (`itemCostOf`). */
    readonly itemCost: boolean,
  ) {}

  /** Imports the module and runs its `initialize`; MODEL_LOAD_FAILED with the module's own message when either fails. */
  static async load(path: string, options: CodeModelOptions = {}): Promise<CodeModel> {
    const functionName = options.functionName ?? 'execute';
    let module: CodeModelModule;
    try {
      // The file's time in the URL: a module registered again after an edit is imported afresh
      // (inline, in the server's own module cache; a thread or process has a cache of its own).
      const modifiedMs = (await stat(path)).mtimeMs;
      const key = options.moduleKey === undefined ? '' : `&${options.moduleKey}`;
      module = (await import(`${pathToFileURL(path).href}?modified=${modifiedMs}${key}`)) as CodeModelModule;
    } catch (error) {
      throw loadFailed(`importing ${path} failed: ${messageOf(error)}`, error);
    }
    const execute = module[functionName];
    if (typeof execute !== 'function')
      throw loadFailed(
        `${path} exports no function '${functionName}' (it exports ${Object.keys(module).join(', ') || 'nothing'})`,
      );
    const schema = module.inputSchema;
    let inputs: TensorSpec[];
    let outputs: TensorSpec[];
    if (schema !== undefined) {
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
        throw loadFailed(`${path}: inputSchema must be a JSON Schema object`);
      if (module.inputs !== undefined)
        throw loadFailed(`${path}: declare inputs (tensors) or inputSchema (JSON), not both`);
      inputs = [{ ...JSON_SPEC }];
      outputs = [{ ...JSON_SPEC }];
    } else {
      inputs = specsOf(module.inputs, 'inputs', path);
      outputs = specsOf(module.outputs, 'outputs', path);
    }
    if (module.itemCost !== undefined && typeof module.itemCost !== 'function')
      throw loadFailed(
        `${path}: itemCost must be a function from an item to its cost, a positive integer (got ${module.itemCost === null ? 'null' : typeof module.itemCost})`,
      );
    // Its promise would come too late: a cost is needed when the request is queued (item-costs.ts).
    if (Object.prototype.toString.call(module.itemCost) === '[object AsyncFunction]')
      throw loadFailed(
        `${path}: itemCost is an async function; the server costs each item before it queues it and cannot wait: make it synchronous, returning the cost, a positive integer`,
      );
    const instance = options.instance ?? 0;
    try {
      await module.initialize?.({ instance, version: options.version ?? '1', config: options.config ?? {} });
    } catch (error) {
      throw loadFailed(`${path}: initialize failed: ${messageOf(error)}`, error);
    }
    return new CodeModel(
      execute as CodeModel['execute'],
      module.finalize,
      inputs,
      outputs,
      schema as object | undefined,
      instance,
      module.itemCost !== undefined,
    );
  }

  /**
   * The module's `itemCost`, from a copy of the module imported on the calling thread (the
   * server's main thread, which costs each item before the queue, as it checks it): its
   * module-level code runs there once, its `initialize` never. Only for a module an instance
   * found to export it.
   */
  static async itemCostOf(path: string): Promise<(item: unknown, context: ItemCostContext) => unknown> {
    let module: CodeModelModule;
    try {
      const modifiedMs = (await stat(path)).mtimeMs;
      module = (await import(`${pathToFileURL(path).href}?modified=${modifiedMs}&item-cost`)) as CodeModelModule;
    } catch (error) {
      throw loadFailed(
        `importing ${path} on the server's main thread for its itemCost failed: ${messageOf(error)}`,
        error,
      );
    }
    if (typeof module.itemCost !== 'function')
      throw loadFailed(`${path} exports no function 'itemCost' any more (the file changed while it loaded)`);
    return module.itemCost as (item: unknown, context: ItemCostContext) => unknown;
  }

  /** One batch: the items as `execute` takes them, its answers back as items (or an Error for one item). */
  async runBatch(items: readonly ItemTensors[]): Promise<(ItemTensors | Error)[]> {
    const json = this.inputSchema !== undefined;
    const given = items.map((item) => (json ? JSON.parse(jsonTextOf(item)) : plainItem(item)));
    const shapes = json ? [] : items.map(shapesOf);
    const results = await this.execute(given, { instance: this.instance, shapes });
    if (!Array.isArray(results) || results.length !== items.length)
      throw new NotOnePerItemFailure(notOnePerItem('execute', results, items.length));
    return results.map((result: unknown) => {
      if (result instanceof Error)
        return new ItemFailure(messageOf(result), { cause: result, clientCode: clientCodeOf(result) });
      try {
        return json ? jsonResult(result) : this.tensorResult(result);
      } catch (error) {
        // Not its place in the batch ("item 3"), which told a client of one item that others shared its batch.
        return new ItemFailure(`execute's result for this item: ${messageOf(error)}`);
      }
    });
  }

  async close(): Promise<void> {
    await this.finalize?.();
  }

  /** A tensor model's answer for one item, checked against its outputs. */
  private tensorResult(result: unknown): ItemTensors {
    if (typeof result !== 'object' || result === null)
      throw new Error(`expected an object of outputs, got ${result === null ? 'null' : typeof result}`);
    const item: ItemTensors = {};
    for (const spec of this.outputs) {
      const value = (result as Record<string, unknown>)[spec.name];
      if (value === undefined)
        throw new Error(`no "${spec.name}" (the outputs are ${this.outputs.map((o) => o.name).join(', ')})`);
      item[spec.name] = tensorOf(value, spec);
    }
    return item;
  }
}

/** `{ name: typed array }` for `execute`: the item's elements, row-major. */
/**
 * An item's tensors as `execute` takes them: copies, which it may change. Its own were the
 * server's, which a failed batch's isolation runs again: a model that added 100 to its inputs in
 * place before it threw saw them +200 in the re-run, and answered that with 200 (on a thread, and
 * inline; a process has its own copy).
 */
function plainItem(item: ItemTensors): Record<string, ElementArray> {
  const plain: Record<string, ElementArray> = {};
  for (const name in item) {
    const data = item[name]!.data;
    plain[name] = Array.isArray(data) ? [...data] : data.slice();
  }
  return plain;
}

function shapesOf(item: ItemTensors): Record<string, number[]> {
  const shapes: Record<string, number[]> = {};
  for (const name in item) shapes[name] = item[name]!.shape;
  return shapes;
}

function jsonResult(result: unknown): ItemTensors {
  const text = JSON.stringify(result);
  if (text === undefined) throw new Error(`${typeof result} is not a JSON value`);
  return jsonItem(text);
}

/**
 * One output of one item: a typed array or array of numbers (its shape the spec's, one free
 * dimension found from the length), or `{ data, shape }` when the shape has to be said.
 */
function tensorOf(value: unknown, spec: TensorSpec): { data: ElementArray; shape: number[] } {
  const given =
    typeof value === 'object' && value !== null && 'data' in value && 'shape' in value
      ? (value as { data: unknown; shape: unknown })
      : { data: value, shape: undefined };
  if (!Array.isArray(given.data) && !ArrayBuffer.isView(given.data))
    throw new Error(`"${spec.name}": expected a typed array, an array or { data, shape }`);
  const values = given.data as ArrayLike<unknown>;
  const shape = shapeFor(spec, values.length, given.shape);
  // Already the tensor's own kind of array (float16 as its bits, a Uint16Array): taken as it is.
  if (ArrayBuffer.isView(given.data) && given.data.constructor === allocate(spec.type, 0).constructor)
    return { data: given.data as ElementArray, shape };
  const data = allocate(spec.type, values.length);
  if (spec.type === 'string') {
    for (let i = 0; i < values.length; i++) (data as string[])[i] = String(values[i]);
    return { data, shape };
  }
  for (let i = 0; i < values.length; i++) checkElement(values[i], i, spec);
  if (spec.type === 'float16') {
    for (let i = 0; i < values.length; i++) (data as Uint16Array)[i] = toFloat16Bits(Number(values[i]));
  } else if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    for (let i = 0; i < values.length; i++) data[i] = BigInt(values[i] as number | bigint);
  } else {
    const numbers = data as Exclude<ElementArray, string[] | BigInt64Array | BigUint64Array>;
    for (let i = 0; i < values.length; i++) numbers[i] = Number(values[i]);
  }
  return { data, shape };
}

/**
 * One element of a numeric output, before it is stored: a typed array's own conversion would turn
 * "a" or null into NaN or 0, 1.5 into 1 and 300 into 44 (uint8), and answer 200 with numbers the
 * model never gave. NaN and infinities of a float output are the model's to give.
 */
function checkElement(value: unknown, index: number, spec: TensorSpec): void {
  const wrong = (why: string): Error => new Error(`"${spec.name}"[${index}]: ${why}`);
  const type = spec.type;
  if (type === 'bool') {
    if (value === true || value === false || value === 0 || value === 1) return;
    throw wrong(`${describeElement(value)} is not a boolean (true, false, 0 or 1)`);
  }
  if (typeof value === 'bigint') {
    if (type === 'int64' || type === 'uint64') {
      if (type === 'uint64' && value < 0n) throw wrong(`${value} is below uint64's range`);
      return;
    }
    throw wrong(`${value} is a bigint, not a ${type}`);
  }
  if (typeof value !== 'number') throw wrong(`${describeElement(value)} is not a number`);
  // A finite number past float32's or float16's range would be stored as Infinity, which the model did not give.
  if (type === 'float32' && Number.isFinite(value) && !Number.isFinite(Math.fround(value)))
    throw wrong(`${value} is beyond float32's range (±3.4e38)`);
  if (type === 'float16' && Number.isFinite(value) && (toFloat16Bits(value) & 0x7c00) === 0x7c00)
    throw wrong(`${value} is beyond float16's range (±65504)`);
  const range = INTEGER_RANGE[type];
  if (range !== undefined && !(Number.isInteger(value) && value >= range[0] && value <= range[1]))
    throw wrong(`${value} is not a ${type} (integers from ${range[0]} to ${range[1]})`);
}

function describeElement(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 32 ? `${value.slice(0, 32)}…` : value);
  if (value === null || value === undefined || typeof value === 'number') return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

function shapeFor(spec: TensorSpec, length: number, given: unknown): number[] {
  const declared = spec.itemShape;
  const wrong = (why: string): Error =>
    new Error(`"${spec.name}": ${why} (declared ${describeShape(declared)}, ${length} elements)`);
  if (given !== undefined) {
    if (!Array.isArray(given) || !given.every((d) => Number.isInteger(d) && d >= 0)) throw wrong('shape must be sizes');
    if (given.length !== declared.length || given.some((d, i) => typeof declared[i] === 'number' && declared[i] !== d))
      throw wrong(`shape ${describeShape(given)} does not fit`);
    if (elementCount(given) !== length) throw wrong(`shape ${describeShape(given)} does not hold them`);
    return given;
  }
  const free = declared.filter((dim) => typeof dim !== 'number').length;
  const fixed = elementCount(declared.filter((dim): dim is number => typeof dim === 'number'));
  if (free === 0) {
    if (fixed !== length) throw wrong('the length does not match');
    return declared as number[];
  }
  if (free > 1) throw wrong('more than one free dimension: answer { data, shape }');
  if (fixed === 0 || length % fixed !== 0) throw wrong('the length does not match');
  return declared.map((dim) => (typeof dim === 'number' ? dim : length / fixed));
}

/** The model's `inputs` or `outputs` as batchline's specs: names, OIP datatypes, item shapes with -1 free. */
function specsOf(given: unknown, what: 'inputs' | 'outputs', path: string): TensorSpec[] {
  const example = '[{ name: "x", datatype: "FP32", shape: [3] }]';
  if (!Array.isArray(given) || given.length === 0)
    throw loadFailed(`${path} must export ${what} (${example}), or an inputSchema for JSON items`);
  const names = new Set<string>();
  return given.map((spec: unknown, i) => {
    const where = `${path}: ${what}[${i}]`;
    if (typeof spec !== 'object' || spec === null) throw loadFailed(`${where}: expected ${example.slice(1, -1)}`);
    const { name, datatype, shape } = spec as Record<string, unknown>;
    if (typeof name !== 'string' || name === '' || names.has(name))
      throw loadFailed(`${where}: name must be a non-empty string, once`);
    // An item's tensors are a plain object keyed by name: '__proto__' set its prototype instead.
    if (name === '__proto__') throw loadFailed(`${where}: name '__proto__' is not taken; name the tensor otherwise`);
    names.add(name);
    const type = typeof datatype === 'string' ? elementTypeOf(datatype) : undefined;
    if (type === undefined && datatype === undefined)
      // /v1/model spells it `type: 'float32'`; a spec copied from there is a likely slip.
      throw loadFailed(
        `${where}: no datatype${'type' in (spec as object) ? ` (found type ${JSON.stringify((spec as { type: unknown }).type)})` : ''}; give an Open Inference Protocol datatype, one of ${OIP_DATATYPES.join(', ')}`,
      );
    if (type === undefined)
      throw loadFailed(`${where}: datatype ${JSON.stringify(datatype)} is none of ${OIP_DATATYPES.join(', ')}`);
    if (!Array.isArray(shape) || !shape.every((d) => d === -1 || (Number.isInteger(d) && d >= 1)))
      throw loadFailed(`${where}: shape must be the item's sizes, -1 for a free one (such as [3] or [3, -1, -1])`);
    return { name, type, itemShape: shape.map((d: number, k) => (d === -1 ? `${name}_${k}` : d)) };
  });
}

function loadFailed(detail: string, cause?: unknown): BatchlineError {
  return new BatchlineError('MODEL_LOAD_FAILED', detail, cause === undefined ? undefined : { cause });
}
