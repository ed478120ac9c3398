import { QueuedRequest } from '../core/queued-request.js';
import type { Outcome, OutcomeListener, PendingRequest } from '../core/types.js';
import type { RowCost } from '../model/item-costs.js';
import { BatchlineError, shuttingDown } from '../errors.js';
import { blamesClientInput, ItemFailure } from '../model/item-failure.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import { optionGivenAs } from '../options/given.js';
import { outcomeError, refusalError } from '../outcome-errors.js';
import { answerAfterHandOff } from './after-hand-off.js';
import { seeTheLog } from './failure-log.js';
import type { ModelVersion } from './model-version.js';
import type { ErrorStage } from './answer-counters.js';
import type { HeldRefusals } from './retry-hold.js';

/** What admission needs of a model version. */
export type AdmissionVersion = Pick<
  ModelVersion,
  'model' | 'batcher' | 'config' | 'optionSources' | 'countOutputTooLarge' | 'drainedBecause' | 'requests'
>;

/** The server-wide part of admitting: built once per server. */
export interface AdmissionContext {
  /** Cap on a deadline a client asks for (ms). */
  readonly maxRequestTimeoutMs: number;
  /** Most numbers one answer may carry (--max-output-elements). */
  readonly maxOutputElements?: number;
  logError(message: string, error: unknown, withStack?: boolean): void;
  /** A connection that retries a 429 before its Retry-After gets its next 429 when it has passed (retry-hold.ts). */
  readonly holdRetries?: boolean;
  /** Where held refusals wait: answered at once when the server drains. */
  readonly heldRefusals?: HeldRefusals;
}

/**
 * The longest deadline a client may ask of `version` at `priority` (X-Request-Timeout-Ms,
 * `parameters.timeout`, a gRPC deadline): --max-request-timeout-ms, or the deadline its priority
 * level gives a request that asks for none (request_timeout_ms, or the level's
 * default_timeout_microseconds) when that is longer, so that asking never gives less than not asking.
 */
export function deadlineCapMs(
  version: Pick<AdmissionVersion, 'batcher'>,
  priority: number | undefined,
  context: AdmissionContext,
): number {
  const levels = version.batcher.levels;
  return Math.max(context.maxRequestTimeoutMs, levels.timeoutsMs[levels.levelOf(priority) - 1] as number);
}

/**
 * How an admitted request ends, once: every row's outputs, the error its answer carries (a row
 * of the error table), or its client gone (nothing to send; counted 499).
 */
export type Settlement =
  | { readonly kind: 'ok'; readonly outputs: readonly ItemTensors[] }
  | { readonly kind: 'error'; readonly error: BatchlineError; readonly stage: ErrorStage }
  | { readonly kind: 'gone' };

export type ModelRequest = PendingRequest<ItemTensors, ItemTensors>;

/** The two ways out that every transport's answer has for a settlement without outputs. */
export interface SettlementAnswer {
  clientGone(): void;
  error(error: unknown, stage: ErrorStage): unknown;
}

/**
 * Answers a settlement that holds no outputs (its client gone, or its error) and says so; an ok
 * one is left to the caller, which encodes its outputs for its transport.
 */
export function answeredWithoutOutputs(
  settlement: Settlement,
  answer: SettlementAnswer,
): settlement is Exclude<Settlement, { readonly kind: 'ok' }> {
  switch (settlement.kind) {
    case 'gone':
      answer.clientGone();
      return true;
    case 'error':
      answer.error(settlement.error, settlement.stage);
      return true;
    case 'ok':
      return false;
  }
}

/**
 * What to answer when a settled request's outputs could not be encoded, logged with its id: a
 * BatchlineError says what the client can do about it (an output larger than its shared memory
 * region); anything else stays in the log.
 */
export function encodingFailure(error: unknown, requestId: string, context: AdmissionContext): BatchlineError {
  context.logError(`could not present the output of request ${requestId}`, error);
  return error instanceof BatchlineError ? error : new BatchlineError('MODEL_FAILURE', seeTheLog(requestId));
}

/**
 * When and how urgently a request asks to be answered: its deadline in ms from arrival (capped
 * at --max-request-timeout-ms) and its priority level (1 the highest); undefined for its
 * level's default deadline and the model's default level.
 */
export interface RequestSchedule {
  readonly timeoutMs: number | undefined;
  readonly priority: number | undefined;
}

/**
 * Admits the rows of one request (one for batchline's JSON, N for an OIP `shape [N, …]`) into
 * `version`'s batcher, whatever transport carried it: all admitted or all refused (the queue
 * bound counts N); each row is its own item in the batcher and may share batches with other
 * requests' items. `settle` is called exactly once: when every row has its output, at the first
 * row that fails (the rows still queued are then cancelled), or when the client has gone; once
 * the next batch has been handed to the model (after-hand-off.ts).
 * Synchronous. Returns the admitted rows (cancel them when the client goes away), or the
 * refusal, which the caller answers (`settle` is then never called).
 */
export function admitRows(
  version: AdmissionVersion,
  requestId: string,
  rows: readonly ItemTensors[],
  schedule: RequestSchedule,
  context: AdmissionContext,
  settle: (settlement: Settlement, request: ModelRequest) => void,
  /** How the request's protocol names its row `index` in a refusal (V1's `instances[1]`). */
  rowName: (index: number) => string = (index) => `row ${index}`,
): readonly ModelRequest[] | BatchlineError {
  const batcher = version.batcher;
  // Counted as one request until it is settled, whatever its rows (the drain's log line).
  let settled = false;
  let untrack = (): void => {};
  const tracked = (requests: readonly ModelRequest[]): readonly ModelRequest[] => {
    if (!settled) untrack = version.requests.add(requests);
    return requests;
  };
  const finish = (settlement: Settlement, request: ModelRequest): void => {
    settled = true;
    untrack();
    answerAfterHandOff(() => settle(settlement, request));
  };
  const itemCost = version.model.itemCost;
  let costs: number[] | undefined;
  if (itemCost !== undefined) {
    const found = costsOf(rows, itemCost, rowName);
    if (found instanceof BatchlineError) return found;
    costs = found;
  }
  if (rows.length === 1 && costs !== undefined) {
    const request = costedRequest(requestId, rows[0]!, costs[0]!, (outcome, request) =>
      finish(settlementOf(outcome, request, [outcome.output!], version, context), request),
    );
    const refused = batcher.offer(request, schedule.timeoutMs, schedule.priority);
    return refused === undefined ? tracked([request]) : refusalError(batcher, refused);
  }
  if (rows.length === 1) {
    // The common case, one row: no group to keep.
    const submitted = batcher.submit(
      requestId,
      rows[0]!,
      (outcome, request) => finish(settlementOf(outcome, request, [outcome.output!], version, context), request),
      schedule.timeoutMs,
      schedule.priority,
    );
    return submitted.admitted ? tracked([submitted.request]) : refusalError(batcher, submitted);
  }
  // All rows wait together, so more rows than the queue holds would be refused 429 on an idle server too.
  const levels = batcher.levels;
  const level = levels.levelOf(schedule.priority);
  const bound = levels.bounds[level - 1]!;
  if (rows.length > bound)
    return new BatchlineError(
      'BAD_INPUT',
      `the request carries ${rows.length} rows and this model queues at most ${bound} waiting (${queueBoundName(version, level, levels.count)}): send at most ${bound} rows a request`,
    );
  const outputs = new Array<ItemTensors>(rows.length);
  let done = 0;
  let rowsSettled = false;
  let requests: readonly ModelRequest[] = [];
  const ids = rows.map((_, i) => `${requestId}/${i}`);
  const onRowOutcome: OutcomeListener<ItemTensors, ItemTensors> = (outcome, request) => {
    if (rowsSettled) return;
    if (outcome.kind === 'ok') {
      outputs[ids.indexOf(request.id)] = outcome.output!;
      if (++done < rows.length) return;
    }
    // Settled before the other rows are cancelled: each cancel calls this listener back, and
    // its 'cancelled' would otherwise settle the request as a client gone (nothing answered).
    rowsSettled = true;
    // One row failed: the request fails; its other rows need not run. Rows that timed out are
    // left to time out too (they share the deadline): cancelled, they counted as clients gone.
    if (outcome.kind !== 'ok' && outcome.kind !== 'timeout')
      for (const other of requests) if (other !== request && other.phase === 'queued') batcher.cancel(other);
    finish(settlementOf(outcome, request, outputs, version, context), request);
  };
  const submitted = batcher.submitGroup(ids, rows, onRowOutcome, schedule.timeoutMs, schedule.priority, costs);
  if (!submitted.admitted) return refusalError(batcher, submitted);
  requests = submitted.requests;
  return tracked(requests);
}

/** Each row's cost by the model's `itemCost`, or the BAD_INPUT of the first row it refuses (named as its protocol names rows when there are several). */
function costsOf(
  rows: readonly ItemTensors[],
  itemCost: RowCost,
  rowName: (index: number) => string,
): number[] | BatchlineError {
  const costs = new Array<number>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    try {
      costs[i] = itemCost(rows[i]!);
    } catch (error) {
      if (!(error instanceof BatchlineError)) throw error;
      return rows.length === 1 ? error : new BatchlineError('BAD_INPUT', `${rowName(i)}: ${error.detail}`);
    }
  }
  return costs;
}

/** A row as the batcher queues it when the model's items have costs: the limit counts its `cost`. */
function costedRequest(
  id: string,
  row: ItemTensors,
  cost: number,
  onOutcome: OutcomeListener<ItemTensors, ItemTensors>,
): QueuedRequest<ItemTensors, ItemTensors> {
  const request = new QueuedRequest<ItemTensors, ItemTensors>(id, row, onOutcome);
  (request as { cost?: number }).cost = cost;
  return request;
}

/**
 * The settlement of a request whose (last) row ended with `outcome`, or a 500 when working it out
 * threw: the request is answered whatever its outputs or its error hold. A code model's output
 * named `__proto__`, or an Error whose `message` getter throws, threw here, and the batcher's
 * listener guard swallowed it: the request was counted ok and never answered.
 */
function settlementOf(
  outcome: Outcome<ItemTensors>,
  request: ModelRequest,
  outputs: readonly ItemTensors[],
  version: AdmissionVersion,
  context: AdmissionContext,
): Settlement {
  try {
    return settlementOrThrow(outcome, request, outputs, version, context);
  } catch (error) {
    try {
      context.logError(`the answer to request ${request.id} could not be made`, error);
    } catch {
      // A log line that cannot be written must not cost the client its answer.
    }
    return {
      kind: 'error',
      error: new BatchlineError('INTERNAL', `the answer could not be made: ${seeTheLog(request.id)}`),
      stage: 'admitted',
    };
  }
}

function settlementOrThrow(
  outcome: Outcome<ItemTensors>,
  request: ModelRequest,
  outputs: readonly ItemTensors[],
  version: AdmissionVersion,
  context: AdmissionContext,
): Settlement {
  // Cancelled means its client hung up: no answer to send, and no 503 to count.
  if (outcome.kind === 'cancelled') return { kind: 'gone' };
  if (outcome.kind === 'shutdown') version.requests.countShutdown();
  // A removal's drain that ran out said "shutting down: the drain time ran out" of a server that was not.
  if (outcome.kind === 'shutdown' && version.drainedBecause === 'removed')
    return {
      kind: 'error',
      error: shuttingDown('its model version was removed, and the drain time ran out before this request was answered'),
      stage: 'admitted',
    };
  if (outcome.kind !== 'ok')
    return { kind: 'error', error: failedOutcomeError(outcome, request, context), stage: 'admitted' };
  // All rows together count against --max-output-elements, as one answer's outputs do. An output
  // of 1e8 numbers took 51.7 s and 4.47 GB of JSON on the main thread: refused before encoding.
  const elements = outputs.reduce((total, output) => total + elementsOf(output), 0);
  if (context.maxOutputElements !== undefined && elements > context.maxOutputElements) {
    version.countOutputTooLarge();
    const error = new BatchlineError(
      'OUTPUT_TOO_LARGE',
      `${elements} numbers${outputs.some(holdsText) ? ` (text counts one a ${JSON_CHARS_PER_NUMBER} characters)` : ''}, more than --max-output-elements ${context.maxOutputElements}`,
    );
    return { kind: 'error', error, stage: 'admitted' };
  }
  return { kind: 'ok', outputs };
}

/** The error that answers an admitted request which did not succeed. */
function failedOutcomeError(
  outcome: Outcome<ItemTensors>,
  request: ModelRequest,
  context: AdmissionContext,
): BatchlineError {
  return outcomeError(outcome, request, (error) => {
    // A code model's own answer for the item is the model's word to the client; one that blames
    // the client's input (its Error's `code`) is the client's error, and no failure of the server's to log.
    if (blamesClientInput(error)) return error.answer();
    // The detail (onnxruntime's node names, its source files) goes to the log, not to the client.
    context.logError(`model execution failed for request ${request.id}`, error);
    return error instanceof ItemFailure ? error.answer() : new BatchlineError('MODEL_FAILURE', seeTheLog(request.id));
  });
}

/** Numbers in an answer's outputs, all outputs together. */
function elementsOf(outputs: ItemTensors): number {
  let count = 0;
  for (const name of Object.keys(outputs)) {
    const data = outputs[name]!.data;
    if (!Array.isArray(data)) count += data.length;
    // A string (BYTES, a JSON model's answer) counts a number a JSON_CHARS_PER_NUMBER characters:
    // counted as one, a JSON model answered a 60 MB string past --max-output-elements 10.
    else for (const text of data) count += Math.max(1, Math.ceil(text.length / JSON_CHARS_PER_NUMBER));
  }
  return count;
}

function holdsText(outputs: ItemTensors): boolean {
  return Object.values(outputs).some((tensor) => Array.isArray(tensor.data));
}

/** About what a number takes in a JSON answer (`0.12345678,`), for a string's share of --max-output-elements. */
const JSON_CHARS_PER_NUMBER = 10;

/**
 * The bound of the request's priority level named as its operator wrote it: the level's own
 * max_queue_size in a priority queue policy (also the one queue's, as level 1, without
 * --priority-levels), else max_queue_size. Each is the version's own (a config.json's or a
 * registration's field, by name only: a client is not shown the server's paths), else as the
 * server's options gave it (the flag, the environment, serve()'s option).
 */
function queueBoundName(
  version: Pick<AdmissionVersion, 'config' | 'optionSources'>,
  level: number,
  levelCount: number,
): string {
  const nameOf = (key: 'maxQueueSize' | 'priorityQueuePolicy', flag: string): string => {
    const own = version.optionSources[key];
    return own !== undefined ? `its ${own.name}` : (optionGivenAs(version.config, key)?.name ?? flag);
  };
  if (version.config.priorityQueuePolicy?.[level]?.maxQueueSize !== undefined)
    return `${nameOf('priorityQueuePolicy', '--priority-queue-policy')}'s level ${level} max_queue_size`;
  const name = nameOf('maxQueueSize', '--max-queue-size');
  return levelCount === 1 ? name : `${name}, the bound of each priority level`;
}
