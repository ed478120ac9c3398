import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Batcher } from '../core/batcher.js';
import type { Outcome, PendingRequest, Refusal, RejectReason } from '../core/types.js';
import { BatchlineError } from '../errors.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import { answerAfterHandOff } from './after-hand-off.js';
import { seeTheLog } from './failure-log.js';
import { answer, answerClientGone, answerError, type AnswerCounters, type AnsweringServer } from './answer.js';
import { NO_SCHEDULE, timeoutMsOf } from '../protocol/schedule-parameters.js';
import type { Encoded, Protocol } from './protocol.js';

export type ModelBatcher = Batcher<ItemTensors, ItemTensors>;

/** What a request is admitted into: a model version's model, batcher and counters. */
export interface AdmissionTarget extends AnswerCounters {
  readonly model: ServedModel;
  readonly batcher: ModelBatcher;
  /** Deadline of a request that asks for none, in ms from its arrival. */
  readonly requestTimeoutMs: number;
  /** One answer refused for an output past --max-output-elements (its outcome counted ok). */
  countOutputTooLarge?(): void;
}

/** The server-wide part of admitting: built once per server. */
export interface AdmissionContext {
  readonly server: AnsweringServer;
  /** Cap on a deadline a client asks for with X-Request-Timeout-Ms (ms). */
  readonly maxRequestTimeoutMs: number;
  /** Most numbers one answer may carry (--max-output-elements). */
  readonly maxOutputElements?: number;
  logError(message: string, error: unknown, withStack?: boolean): void;
}

/** The error answering a batcher's refusal; a reason added to the core needs its row here. */
const REFUSALS: Readonly<Record<RejectReason, (batcher: ModelBatcher, refusal: Refusal) => BatchlineError>> = {
  queue_full: (batcher) => new BatchlineError('QUEUE_FULL', String(batcher.queueDepth)),
  // Retry-After: when the queue now waiting should have drained.
  over_sla: (batcher, refusal) =>
    new BatchlineError(
      'OVER_SLA',
      `predicted ${Math.round(refusal.predictedMs ?? 0)} ms from arrival to answer behind ${batcher.queueDepth} waiting, allowed ${Math.round(refusal.allowedMs ?? 0)} ms`,
      { retryAfterS: retryAfterS(refusal.retryAfterMs) },
    ),
  circuit_open: (_batcher, refusal) =>
    circuitOpen('refusing requests until a probe batch passes', refusal.retryAfterMs),
  closed: () => new BatchlineError('SHUTTING_DOWN'),
};

/** 503 circuit_open, with a Retry-After of when the breaker lets its probe through. */
function circuitOpen(detail: string, retryAfterMs: number | undefined): BatchlineError {
  return new BatchlineError('CIRCUIT_OPEN', `${detail}; next probe in ${Math.round(retryAfterMs ?? 0)} ms`, {
    retryAfterS: retryAfterS(retryAfterMs),
  });
}

/** Whole seconds for Retry-After (HTTP takes no fractions), at least 1. */
function retryAfterS(ms: number | undefined): number {
  return Math.max(1, Math.ceil((ms ?? 0) / 1000));
}

/**
 * Decodes a request with `protocol`, hands its item to the target's batcher and answers when
 * its outcome arrives, exactly once (for a model off this thread, once the next batch has been
 * handed to it: after-hand-off.ts). Synchronous, and the caller must not await or return the
 * reply: a returned reply is a thenable, and Fastify would await its end with a Promise and
 * stream listeners per request (about 1 µs of CPU each time, in a profile).
 */
export function admit<D>(
  request: FastifyRequest,
  reply: FastifyReply,
  target: AdmissionTarget,
  protocol: Protocol<D>,
  context: AdmissionContext,
): void {
  const admission = decodeOrRefuse(request, reply, target, protocol, context);
  if (admission === undefined) return;
  const { decoded, timeoutMs, priority } = admission;
  // The request's own connection: a pipelined response gets `reply.raw.socket` only when the
  // responses before it have gone out.
  const socket = request.raw.socket as TrackedSocket | null;
  const batcher = target.batcher;
  const inline = target.model.runBatchSync !== undefined;
  const submitted = batcher.submit(
    request.id,
    protocol.itemOf(decoded),
    (outcome, pending) => {
      forget(socket?.[kWaiting], pending);
      const write = (): void => answerOutcome(reply, outcome, pending, decoded, protocol, target, context);
      if (inline) write();
      else answerAfterHandOff(write);
    },
    timeoutMs,
    priority,
  );
  if (!submitted.admitted) {
    answerError(reply, REFUSALS[submitted.reason](batcher, submitted), 'refused', protocol, target, context.server);
    return;
  }
  const pending = submitted.request;
  if (pending.phase !== 'done') trackUntilAnswered(socket, pending, batcher);
}

function answerOutcome<D>(
  reply: FastifyReply,
  outcome: Outcome<ItemTensors>,
  request: ModelRequest,
  decoded: D,
  protocol: Protocol<D>,
  target: AdmissionTarget,
  context: AdmissionContext,
): void {
  if (reply.sent) return;
  // Cancelled means its client hung up (trackUntilAnswered): no answer to send, and no 503 to count.
  if (outcome.kind === 'cancelled' || reply.raw.destroyed) return answerClientGone(reply, target);
  if (outcome.kind === 'ok') {
    const output = outcome.output as ItemTensors;
    answerOutputs(
      reply,
      request.id,
      elementsOf(output),
      () => protocol.encodeAnswer(request.id, output, target.model, decoded),
      protocol,
      target,
      context,
    );
    return;
  }
  answerError(reply, outcomeError(outcome, request, context), 'admitted', protocol, target, context.server);
}

/** The error that answers an admitted request which did not succeed. */
function outcomeError(outcome: Outcome<ItemTensors>, request: ModelRequest, context: AdmissionContext): BatchlineError {
  switch (outcome.kind) {
    case 'timeout':
      return new BatchlineError('DEADLINE_EXCEEDED', String(Math.round(request.deadlineAtMs - request.arrivalAtMs)));
    case 'error':
      // The detail (onnxruntime's node names, its source files) goes to the log, not to the client.
      context.logError(`model execution failed for request ${request.id}`, outcome.error);
      return new BatchlineError('MODEL_FAILURE', seeTheLog(request.id));
    case 'unavailable':
      return circuitOpen('it opened while this request waited', outcome.retryAfterMs);
    case 'ok':
    case 'shutdown':
    case 'cancelled':
      return new BatchlineError('SHUTTING_DOWN');
  }
}

const kWaiting = Symbol('batchline.waiting');
type ModelRequest = PendingRequest<ItemTensors, ItemTensors>;
/**
 * A connection's requests still waiting for their answer (one, or a few when pipelined), and
 * the batcher of each: one connection may ask several models.
 */
interface Waiting {
  requests: ModelRequest[];
  batchers: ModelBatcher[];
}
type TrackedSocket = Socket & { [kWaiting]?: Waiting };

/**
 * A client that hangs up stops being worth a slot in a batch: its requests are cancelled when
 * its connection closes. One 'close' listener per connection rather than one per request (a
 * listener per response cost about 1 % of serve's CPU in a profile, a Set per connection 0.9 %).
 */
function trackUntilAnswered(socket: TrackedSocket | null, request: ModelRequest, batcher: ModelBatcher): void {
  if (socket === null || socket.destroyed) return void batcher.cancel(request);
  let waiting = socket[kWaiting];
  if (waiting === undefined) {
    const tracked: Waiting = (waiting = socket[kWaiting] = { requests: [], batchers: [] });
    socket.once('close', () => {
      const batchers = tracked.batchers.splice(0);
      tracked.requests.splice(0).forEach((waitingRequest, i) => {
        batchers[i]!.cancel(waitingRequest);
      });
    });
  }
  waiting.requests.push(request);
  waiting.batchers.push(batcher);
}

function forget(waiting: Waiting | undefined, request: ModelRequest): void {
  if (waiting === undefined) return;
  const index = waiting.requests.indexOf(request);
  if (index < 0) return;
  waiting.requests.splice(index, 1);
  waiting.batchers.splice(index, 1);
}

/**
 * The request's body decoded by `protocol`, its deadline (the body's `timeout` parameter, else
 * X-Request-Timeout-Ms, else its level's default: undefined) and its priority; or, when any is
 * bad, undefined with the request answered (refused: a 4xx in the protocol's format).
 */
function decodeOrRefuse<D>(
  request: FastifyRequest,
  reply: FastifyReply,
  target: AdmissionTarget,
  protocol: Protocol<D>,
  context: AdmissionContext,
): { decoded: D; timeoutMs: number | undefined; priority: number | undefined } | undefined {
  try {
    const fromHeader = timeoutOf(request, context.maxRequestTimeoutMs);
    const decoded = protocol.decode(request, target.model);
    const schedule = protocol.scheduleOf?.(decoded) ?? NO_SCHEDULE;
    const timeoutMs = timeoutMsOf(schedule, context.maxRequestTimeoutMs) ?? fromHeader;
    return { decoded, timeoutMs, priority: schedule.priority };
  } catch (error) {
    answerError(reply, error, 'refused', protocol, target, context.server);
    return undefined;
  }
}

function timeoutOf(request: FastifyRequest, maxMs: number): number | undefined {
  const given = request.headers['x-request-timeout-ms'];
  if (given === undefined) return undefined;
  const ms = typeof given === 'string' ? Number(given) : NaN;
  if (!Number.isFinite(ms) || ms <= 0)
    throw new BatchlineError(
      'BAD_HEADER',
      `X-Request-Timeout-Ms must be a positive number of milliseconds, got '${String(given)}'`,
    );
  return Math.min(ms, maxMs);
}

/** A protocol whose requests may carry several items (rows of a batch dimension), answered together. */
export interface RowsProtocol<D> extends Protocol<D> {
  /** The items a decoded request carries, in order: they are admitted together or refused together. */
  rowsOf(decoded: D): readonly ItemTensors[];
  /** The body of the answer, from each row's outputs in order. May throw (a 500 model_failure). */
  encodeRows(requestId: string, outputs: readonly ItemTensors[], model: ServedModel, decoded: D): Encoded;
}

/**
 * `admit` for a request of N rows (an Open Inference Protocol `shape [N, …]`): the N items enter
 * the batcher together (`submitGroup`: all admitted or all refused, the queue bound counting N)
 * and may share batches with other requests' items; the request is answered once every row has
 * its output, or at the first row that fails (the rows still queued are then cancelled).
 */
export function admitRows<D>(
  request: FastifyRequest,
  reply: FastifyReply,
  target: AdmissionTarget,
  protocol: RowsProtocol<D>,
  context: AdmissionContext,
): void {
  const admission = decodeOrRefuse(request, reply, target, protocol, context);
  if (admission === undefined) return;
  const { decoded, timeoutMs, priority } = admission;
  const rows = protocol.rowsOf(decoded);
  const socket = request.raw.socket as TrackedSocket | null;
  const batcher = target.batcher;
  const inline = target.model.runBatchSync !== undefined;
  const outputs = new Array<ItemTensors>(rows.length);
  let done = 0;
  let settled = false;
  let pendings: readonly ModelRequest[] = [];
  const ids = rows.length === 1 ? [request.id] : rows.map((_, i) => `${request.id}/${i}`);
  const submitted = batcher.submitGroup(
    ids,
    rows,
    (outcome, pending) => {
      forget(socket?.[kWaiting], pending);
      if (settled) return;
      if (outcome.kind === 'ok') {
        outputs[ids.indexOf(pending.id)] = outcome.output as ItemTensors;
        if (++done < rows.length) return;
        settled = true;
        if (inline) answerRowsOk(reply, request.id, outputs, decoded, protocol, target, context);
        else answerAfterHandOff(() => answerRowsOk(reply, request.id, outputs, decoded, protocol, target, context));
        return;
      }
      // One row failed: the request fails; its other rows need not run.
      settled = true;
      for (const other of pendings) if (other !== pending && other.phase === 'queued') batcher.cancel(other);
      if (inline) answerOutcome(reply, outcome, pending, decoded, protocol, target, context);
      else answerAfterHandOff(() => answerOutcome(reply, outcome, pending, decoded, protocol, target, context));
    },
    timeoutMs,
    priority,
  );
  if (!submitted.admitted) {
    answerError(reply, REFUSALS[submitted.reason](batcher, submitted), 'refused', protocol, target, context.server);
    return;
  }
  pendings = submitted.requests;
  for (const pending of pendings) if (pending.phase !== 'done') trackUntilAnswered(socket, pending, batcher);
}

function answerRowsOk<D>(
  reply: FastifyReply,
  requestId: string,
  outputs: readonly ItemTensors[],
  decoded: D,
  protocol: RowsProtocol<D>,
  target: AdmissionTarget,
  context: AdmissionContext,
): void {
  if (reply.sent) return;
  if (reply.raw.destroyed) return answerClientGone(reply, target);
  // All rows together count against --max-output-elements, as one answer's outputs do.
  const elements = outputs.reduce((total, output) => total + elementsOf(output), 0);
  answerOutputs(
    reply,
    requestId,
    elements,
    () => protocol.encodeRows(requestId, outputs, target.model, decoded),
    protocol,
    target,
    context,
  );
}

/**
 * Answers 200 with the outputs `encode` presents, unless they carry more than
 * --max-output-elements numbers (500 output_too_large) or cannot be encoded (500 model_failure).
 */
function answerOutputs<D>(
  reply: FastifyReply,
  requestId: string,
  elements: number,
  encode: () => Encoded,
  protocol: Protocol<D>,
  target: AdmissionTarget,
  context: AdmissionContext,
): void {
  // An output of 1e8 numbers took 51.7 s and 4.47 GB of JSON on the main thread: refused before encoding.
  if (context.maxOutputElements !== undefined && elements > context.maxOutputElements) {
    target.countOutputTooLarge?.();
    answerError(
      reply,
      new BatchlineError(
        'OUTPUT_TOO_LARGE',
        `${elements} numbers, more than --max-output-elements ${context.maxOutputElements}`,
      ),
      'admitted',
      protocol,
      target,
      context.server,
    );
    return;
  }
  let encoded: Encoded;
  try {
    encoded = encode();
  } catch (error) {
    context.logError(`could not present the output of request ${requestId}`, error);
    answerError(
      reply,
      new BatchlineError('MODEL_FAILURE', seeTheLog(requestId)),
      'admitted',
      protocol,
      target,
      context.server,
    );
    return;
  }
  answer(reply, 200, encoded, protocol, target, context.server);
}

/** Numbers in an answer's outputs, all outputs together. */
function elementsOf(outputs: ItemTensors): number {
  let count = 0;
  for (const name in outputs) count += outputs[name]!.data.length;
  return count;
}
