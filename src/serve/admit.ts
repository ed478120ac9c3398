import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { refusalError } from '../outcome-errors.js';
import { NO_SCHEDULE, timeoutMsOf } from '../protocol/schedule-parameters.js';
import {
  type AdmissionContext,
  type AdmissionVersion,
  admitRows,
  answeredWithoutOutputs,
  deadlineCapMs,
  encodingFailure,
  type ModelRequest,
  type RequestSchedule,
} from './admission.js';
import type { Answer } from './answer.js';
import type { ModelBatcher } from './model-version.js';
import { admittedOn, answerRefusal } from './retry-hold.js';
import type { InferenceCodec } from './protocol.js';
import type { ItemTensors } from '../model/tensor-spec.js';

/**
 * An HTTP inference request's way from its body to its answer: decoded by `codec` (a 4xx in the
 * route's format when it cannot be), admitted into `version` (admission.ts), its rows cancelled
 * when its connection closes, and answered through `answer` when it is settled. Synchronous,
 * and the caller must not await or return the reply: a returned reply is a thenable, and
 * Fastify would await its end with a Promise and stream listeners per request (about 1 µs of
 * CPU each time, in a profile).
 */
export function admit<D>(
  request: FastifyRequest,
  answer: Answer,
  version: AdmissionVersion,
  codec: InferenceCodec<D>,
  context: AdmissionContext,
): void {
  // A full queue refuses before the body is decoded: under a storm of retried 429s, decoding and
  // checking each tensor only to refuse it took a quarter of the main thread.
  const full = version.batcher.refuseIfFull(request.id);
  if (full !== undefined)
    return answerRefusal(
      request,
      answer,
      refusalError(version.batcher, full),
      context.holdRetries === true,
      context.heldRefusals,
    );
  let decoded: D;
  let rows: readonly ItemTensors[];
  let schedule: RequestSchedule;
  try {
    const fromHeader = askedTimeoutMs(request);
    decoded = codec.decode(request, version.model);
    rows = codec.rowsOf(decoded);
    // The body's own schedule (OIP's parameters.timeout and .priority) before the header.
    const asked = codec.scheduleOf?.(decoded) ?? NO_SCHEDULE;
    const capMs = deadlineCapMs(version, asked.priority, context);
    schedule = {
      timeoutMs: timeoutMsOf(asked, capMs) ?? (fromHeader === undefined ? undefined : Math.min(fromHeader, capMs)),
      priority: asked.priority,
    };
  } catch (error) {
    // A failure that is no refusal is a bug: Fastify's error handler logs it and keeps its text from the client.
    if (!(error instanceof BatchlineError)) throw error;
    answer.error(error);
    return;
  }
  // The request's own connection: a pipelined response gets `reply.raw.socket` only when the
  // responses before it have gone out.
  const socket = request.raw.socket as TrackedSocket | null;
  let rowsAdmitted: readonly ModelRequest[] = [];
  const rowName =
    codec.rowName === undefined ? undefined : (index: number) => codec.rowName!(decoded, index, version.model);
  const admitted = admitRows(
    version,
    request.id,
    rows,
    schedule,
    context,
    (settlement) => {
      forget(socket?.[kWaiting], rowsAdmitted);
      if (answeredWithoutOutputs(settlement, answer)) return;
      let encoded: ReturnType<InferenceCodec<D>['encodeRows']>;
      try {
        encoded = codec.encodeRows(request.id, settlement.outputs, version.model, decoded);
      } catch (error) {
        return void answer.error(encodingFailure(error, request.id, context), 'admitted');
      }
      answer.send(200, encoded);
    },
    rowName,
  );
  if (admitted instanceof BatchlineError)
    return answerRefusal(request, answer, admitted, context.holdRetries === true, context.heldRefusals);
  admittedOn(request);
  rowsAdmitted = admitted;
  if (admitted.some((row) => row.phase !== 'done')) trackUntilAnswered(socket, admitted, version.batcher);
}

/** The deadline a client asks for with X-Request-Timeout-Ms (ms, not capped yet: deadlineCapMs), or undefined. */
function askedTimeoutMs(request: FastifyRequest): number | undefined {
  const given = request.headers['x-request-timeout-ms'];
  if (given === undefined) return undefined;
  // Plain decimal: Number() also took 0x10 (16 ms) and 1e3.
  const ms = typeof given === 'string' && PLAIN_DECIMAL.test(given) ? Number(given) : Number.NaN;
  if (!Number.isFinite(ms) || ms <= 0)
    throw new BatchlineError(
      'BAD_HEADER',
      `X-Request-Timeout-Ms must be a positive number of milliseconds, got '${String(given)}'`,
    );
  return ms;
}

const PLAIN_DECIMAL = /^\s*\d+(\.\d+)?\s*$/;

const kWaiting = Symbol('batchline.waiting');
/**
 * A connection's requests still waiting for their answer (one, or a few when pipelined: the
 * rows each admitted), and the batcher of each: one connection may ask several models.
 */
interface Waiting {
  requests: (readonly ModelRequest[])[];
  batchers: ModelBatcher[];
}
type TrackedSocket = Socket & { [kWaiting]?: Waiting };

/**
 * A client that hangs up stops being worth a slot in a batch: its requests are cancelled when
 * its connection closes. One 'close' listener per connection rather than one per request (a
 * listener per response cost about 1 % of serve's CPU in a profile, a Set per connection 0.9 %).
 */
function trackUntilAnswered(socket: TrackedSocket | null, rows: readonly ModelRequest[], batcher: ModelBatcher): void {
  if (socket === null || socket.destroyed) return cancelRows(rows, batcher);
  let waiting = socket[kWaiting];
  if (waiting === undefined) {
    const tracked: Waiting = (waiting = socket[kWaiting] = { requests: [], batchers: [] });
    socket.once('close', () => {
      const batchers = tracked.batchers.splice(0);
      tracked.requests.splice(0).forEach((waitingRows, i) => {
        cancelRows(waitingRows, batchers[i]!);
      });
    });
  }
  waiting.requests.push(rows);
  waiting.batchers.push(batcher);
}

function cancelRows(rows: readonly ModelRequest[], batcher: ModelBatcher): void {
  for (const row of rows) batcher.cancel(row);
}

function forget(waiting: Waiting | undefined, rows: readonly ModelRequest[]): void {
  if (waiting === undefined) return;
  const index = waiting.requests.indexOf(rows);
  if (index < 0) return;
  if (index === 0) {
    // The usual one: answers leave in order. `shift` makes no array of what it takes out, as `splice` does.
    waiting.requests.shift();
    waiting.batchers.shift();
    return;
  }
  waiting.requests.splice(index, 1);
  waiting.batchers.splice(index, 1);
}
