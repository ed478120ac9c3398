import { performance } from 'node:perf_hooks';
import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';
import type { BatchlineError } from '../errors.js';
import type { Answer } from './answer.js';

const kRetryAt = Symbol('batchline.retryAt');
/** The bytes read off the connection when its last unheld 429 had been written out (undefined until then). */
const kReadWhenRefused = Symbol('batchline.readWhenRefused');
type RefusedSocket = Socket & { [kRetryAt]?: number; [kReadWhenRefused]?: number };

/**
 * Answers a 429 (the queue is full, or the request would miss its deadline) and holds the next
 * one on the same connection until the Retry-After it was given has passed. A client that
 * retries at once (a closed loop: bench, wrk and k6 do not read Retry-After) then gets one
 * refusal a second on each connection instead of thousands: 56 such clients beyond a queue of
 * 128 sent 2,400–3,600 requests a second to be refused, and the main thread and the load they
 * drew took the CPU and the batch hand-offs the model needed (see docs/architecture.md). A held
 * refusal keeps no place in the queue and no body; a client that waits as told is never held.
 */
export function answerRefusal(
  request: FastifyRequest,
  answer: Answer,
  error: BatchlineError,
  hold: boolean,
  held?: HeldRefusals,
): void {
  const socket = request.raw.socket as RefusedSocket | null;
  const retryAfterS = error.retryAfterS;
  if (!hold || socket === null || error.httpStatus !== 429 || retryAfterS === undefined) {
    answer.refuse(error);
    return;
  }
  const nowMs = performance.now();
  const retryAtMs = socket[kRetryAt];
  if (retryAtMs === undefined || retryAtMs <= nowMs) {
    socket[kRetryAt] = nowMs + retryAfterS * 1000;
    socket[kReadWhenRefused] = undefined;
    answer.reply.raw.once('finish', () => {
      socket[kReadWhenRefused] = socket.bytesRead;
    });
    answer.refuse(error);
    return;
  }
  // Read before that 429 was written out (pipelined behind the request refused): its client
  // could not have read the Retry-After, so it is no retry. Held, a burst of 30 pipelined
  // requests took 29 s to be refused, one a second.
  const readWhenRefused = socket[kReadWhenRefused];
  if (readWhenRefused === undefined || socket.bytesRead <= readWhenRefused) {
    answer.refuse(error);
    return;
  }
  // Retried before its Retry-After: answered when it has passed, the body let go meanwhile.
  (request as { body: unknown }).body = undefined;
  socket[kRetryAt] = retryAtMs + retryAfterS * 1000;
  if (held === undefined) setTimeout(() => answer.refuse(error), retryAtMs - nowMs);
  else held.hold(() => answer.refuse(error), retryAtMs - nowMs);
}

/**
 * The refusals a server holds until their Retry-After. When it drains they are answered at once
 * (and none is held from then on): on timers of their own, a stopping server waited up to its
 * drain time for them with nothing queued or running, then cut their connections unanswered.
 */
export class HeldRefusals {
  private readonly held = new Map<ReturnType<typeof setTimeout>, () => void>();
  private released = false;

  /** Calls `answerNow` in `delayMs`, or at once when the server drains first. */
  hold(answerNow: () => void, delayMs: number): void {
    if (this.released) return answerNow();
    const timer = setTimeout(() => {
      this.held.delete(timer);
      answerNow();
    }, delayMs);
    this.held.set(timer, answerNow);
  }

  /** The server drains: every held refusal is answered now. */
  releaseAll(): void {
    this.released = true;
    const all = [...this.held];
    this.held.clear();
    for (const [timer, answerNow] of all) {
      clearTimeout(timer);
      answerNow();
    }
  }
}

/** A connection whose request was admitted is no longer one that retries too early. */
export function admittedOn(request: FastifyRequest): void {
  const socket = request.raw.socket as RefusedSocket | null;
  if (socket !== null && socket[kRetryAt] !== undefined) socket[kRetryAt] = undefined;
}
