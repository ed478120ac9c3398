import { performance } from 'node:perf_hooks';
import { createWriteStream } from 'node:fs';
import { BatchlineError } from '../errors.js';
import { textOf } from '../message-text.js';

/** Where failure lines go: a stream whose `write` may say "slow down" (returns false) until 'drain'. */
export interface LogSink {
  write(text: string): boolean;
  once?(event: 'drain', listener: () => void): unknown;
}

export interface FailureLogOptions {
  /** Lines allowed per second on average (default 10). */
  linesPerSecond?: number;
  /** Lines allowed at once after a quiet spell (default 20). */
  burstLines?: number;
  /** Longest detail kept from an error, in characters (default 1000). */
  maxDetailChars?: number;
  now?: () => number;
}

/**
 * The server's failure log: one line per failure (a model that fails, a reply that cannot be
 * written, an internal error), keyed by request id, rate-limited and written off the request's
 * path. Inputs that made the model fail wrote about 1.1 KB to stderr, synchronously, per failure:
 * 143.5 MB in 10 s under load. So: at most `burstLines` at once and
 * `linesPerSecond` after that; the lines left out are counted, and a summary line says how
 * many, and of what, once a second while it lasts. Lines are gathered and written once per turn
 * of the event loop; while the sink is slow (its write returned false) new lines are counted as
 * left out too, so a stuck terminal never grows the server's memory.
 */
export class FailureLog {
  private tokens: number;
  private lastRefillMs: number;
  private readonly pending: string[] = [];
  private flushScheduled = false;
  private sinkBusy = false;
  private suppressed = 0;
  private suppressedSinceMs = 0;
  private readonly suppressedKinds = new Map<string, number>();
  private summaryTimer: NodeJS.Timeout | undefined;
  private readonly linesPerSecond: number;
  private readonly burstLines: number;
  private readonly maxDetailChars: number;
  private readonly now: () => number;

  constructor(
    private readonly sink: LogSink,
    options: FailureLogOptions = {},
  ) {
    this.linesPerSecond = options.linesPerSecond ?? 10;
    this.burstLines = options.burstLines ?? 20;
    this.maxDetailChars = options.maxDetailChars ?? 1000;
    this.now = options.now ?? (() => performance.now());
    this.tokens = this.burstLines;
    this.lastRefillMs = this.now();
  }

  /**
   * Logs `what` (a short description ending in `for request <id>`; without the id it names the
   * kind of failure in summaries) and the error's message; its stack too with `withStack` (an
   * unexpected error, where the stack says where; a model's error has only batchline's frames).
   */
  failure(what: string, error: unknown, withStack = false): void {
    this.refill();
    if (this.tokens < 1 || this.sinkBusy) {
      this.suppress(kindOf(what));
      return;
    }
    this.tokens--;
    this.pending.push(`batchline serve: ${what}: ${this.detailOf(error, withStack)}\n`);
    this.scheduleFlush();
  }

  /** Writes what is gathered now, and the summary of what was left out (at shutdown). */
  flush(): void {
    if (this.summaryTimer !== undefined) clearTimeout(this.summaryTimer);
    this.summaryTimer = undefined;
    this.writeSummary();
    this.writePending();
  }

  private refill(): void {
    const nowMs = this.now();
    this.tokens = Math.min(this.burstLines, this.tokens + ((nowMs - this.lastRefillMs) / 1000) * this.linesPerSecond);
    this.lastRefillMs = nowMs;
  }

  private suppress(kind: string): void {
    if (this.suppressed === 0) this.suppressedSinceMs = this.now();
    this.suppressed++;
    this.suppressedKinds.set(kind, (this.suppressedKinds.get(kind) ?? 0) + 1);
    if (this.summaryTimer === undefined) {
      this.summaryTimer = setTimeout(() => {
        this.summaryTimer = undefined;
        this.writeSummary();
        this.scheduleFlush();
      }, 1000);
      this.summaryTimer.unref();
    }
  }

  private writeSummary(): void {
    if (this.suppressed === 0) return;
    const kinds = [...this.suppressedKinds]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([kind, count]) => `${kind} ×${count}`)
      .join(', ');
    const seconds = ((this.now() - this.suppressedSinceMs) / 1000).toFixed(1);
    this.pending.push(
      `batchline serve: ${this.suppressed} more failure lines left out in ${seconds} s (${kinds}); at most ${this.linesPerSecond} a second are logged\n`,
    );
    this.suppressed = 0;
    this.suppressedKinds.clear();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.writePending();
    });
  }

  private writePending(): void {
    if (this.pending.length === 0 || this.sinkBusy) return;
    const text = this.pending.join('');
    this.pending.length = 0;
    if (!this.sink.write(text) && this.sink.once !== undefined) {
      this.sinkBusy = true;
      this.sink.once('drain', () => {
        this.sinkBusy = false;
        this.writePending();
      });
    }
  }

  private detailOf(error: unknown, withStack: boolean): string {
    let text: string;
    try {
      text =
        error instanceof Error
          ? withStack && !(error instanceof BatchlineError)
            ? String(error.stack ?? error.message)
            : String(error.message)
          : textOf(error);
    } catch {
      // A model's Error whose `message` or `stack` getter throws: the line is still written.
      text = 'an Error whose message cannot be read (its getter threw)';
    }
    // eslint-disable-next-line no-control-regex
    const oneLine = text.replace(/\r?\n\s*/g, ' | ').replace(/[\u0000-\u001f\u007f]/g, '?');
    return oneLine.length > this.maxDetailChars ? `${oneLine.slice(0, this.maxDetailChars)}…` : oneLine;
  }
}

/** The kind of a failure for summaries: its description without request ids. */
function kindOf(what: string): string {
  return what.replace(/ (?:for|of) request .*$/, '').slice(0, 60);
}

/** What a client is told of a failure whose detail is in the log. */
export function seeTheLog(requestId: string): string {
  return `see the server log for request ${requestId}`;
}

/**
 * stderr written asynchronously: `process.stderr` writes synchronously to files and pipes, so
 * a flood of lines blocked the event loop. A stream of its own on descriptor 2 writes through
 * libuv's thread pool; the process waits for its writes before it exits.
 */
export function stderrLogSink(): LogSink {
  return createWriteStream('', { fd: 2, autoClose: false });
}
