import type { Dispatcher } from 'undici';
import type { Drain } from './drain.js';
import { classifyError, DRAIN_CAUSE, socketError } from './error-kind.js';
import type { BenchRecorder } from './recorder.js';

/** Where a finished request reports; the run loop implements it. */
export interface RequestSink {
  /** `status`: the HTTP status, or the gRPC status code's name (`OK`, `UNAVAILABLE`, …). */
  complete(request: TimedRequest, status: number | string, endMs: number): void;
  fail(request: TimedRequest, error: Error, endMs: number): void;
  /** --timeout: the whole answer must be in this long after the write. */
  readonly timeoutMs?: number;
}

/**
 * One request in flight, as an undici dispatch handler. It stamps the moment undici writes it
 * to a socket (`onConnect` runs just before the write), so service time excludes time spent
 * waiting for a free connection, while latency counts from the intended send.
 *
 * It uses undici's raw handler callbacks rather than the newer controller API: the newer one
 * wraps every request in two more objects and parses every response's headers into an object,
 * which a load generator pays for on every request and never reads.
 */
export class TimedRequest implements Dispatcher.DispatchHandler {
  /** When the request hit the socket (ms, same clock as intendedMs); NaN until then. */
  writtenMs = Number.NaN;
  private status = 0;
  private abort: ((reason?: Error) => void) | undefined;

  constructor(
    private readonly sink: RequestSink,
    private readonly now: () => number,
    /** Intended send time (open loop) or actual hand-off time (closed loop), in ms. */
    readonly intendedMs: number,
    readonly measured: boolean,
    /** Closed loop: the sender that sends again when this one ends. */
    readonly sender = 0,
  ) {}

  onConnect(abort?: (reason?: Error) => void): void {
    this.writtenMs = this.now();
    this.abort = abort;
  }

  onHeaders(statusCode: number): boolean {
    // 1xx informational heads come first; the final status is the last one seen.
    this.status = statusCode;
    return true;
  }

  /**
   * undici's body timeout bounds each pause, not the answer: a body of a byte every few ms held
   * a request forever (and a --requests run, with no end to drain at, never ended). A chunk that
   * comes past --timeout after the write ends it as a timeout; a body that pauses instead meets
   * undici's own bodyTimeout. No timer per request: one comparison per chunk.
   */
  onData(): boolean {
    const timeoutMs = this.sink.timeoutMs;
    if (timeoutMs !== undefined && this.now() - this.writtenMs > timeoutMs) {
      this.abort?.(socketError(`no complete answer within ${timeoutMs} ms`, 'ETIMEDOUT'));
      return false;
    }
    return true;
  }

  onComplete(): void {
    this.sink.complete(this, this.status, this.now());
  }

  onError(error: Error): void {
    this.sink.fail(this, error, this.now());
  }

  /** An answer that did not come over HTTP: a gRPC status, by name. */
  answered(status: string): void {
    this.sink.complete(this, status, this.now());
  }
}

/**
 * Records a request's answer, for both loops: its latency from the intended send, its service
 * time from when it reached a socket (from the intended send when that was never stamped).
 */
export function recordAnswer(
  recorder: BenchRecorder,
  request: TimedRequest,
  status: number | string,
  endMs: number,
): void {
  const serviceFromMs = Number.isNaN(request.writtenMs) ? request.intendedMs : request.writtenMs;
  recorder.recordResponse(status, endMs - request.intendedMs, endMs - serviceFromMs, endMs, request.measured);
}

/** Records a request's failure, for both loops: one the drain caused (its grace ran out) is a timeout. */
export function recordFailure(
  recorder: BenchRecorder,
  request: TimedRequest,
  error: Error,
  endMs: number,
  drain: Drain | undefined,
): void {
  const drained = drain?.expired === true;
  recorder.recordError(
    drained ? 'timeout' : classifyError(error),
    drained ? DRAIN_CAUSE : error,
    endMs,
    request.measured,
  );
}
