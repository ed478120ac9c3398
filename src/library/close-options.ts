import { SERVE_OPTIONS } from '../options/serve.js';
import { InvalidOptionError } from './errors.js';

const DRAIN = SERVE_OPTIONS.drainTimeoutMs;

/** A first close()'s drain when it names none: `--drain-timeout-ms`'s default, 10 s. */
export const DEFAULT_DRAIN_MS = DRAIN.default;

/**
 * The drain time a `close(options)` (a batcher's or a server's) asks for, or undefined when it
 * names none, checked before anything closes, with `--drain-timeout-ms`'s range: a Node timer
 * takes at most 2^31 - 1 ms and fires at once past that (Infinity too), so an unchecked
 * `drainMs: Infinity` cut every running call off. Undefined, not the default: a first close()
 * then drains the default, but a later one asked for nothing, and must not shorten a longer
 * drain under way to it (close({ drainMs: 60000 }), then close(), ended it at 10 s).
 */
export function drainMsOf(options: unknown): number | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null)
    throw new InvalidOptionError(
      `close(options): options must be an object such as { drainMs: 1000 }, got ${options === null ? 'null' : typeof options}`,
    );
  // A misspelt drain (timeoutMs, drainTimeoutMs) would otherwise be dropped: the close waited the default.
  for (const key in options)
    if (key !== 'drainMs') throw new InvalidOptionError(`close({ ${key} }): not an option; the one option is drainMs`);
  const { drainMs } = options as { drainMs?: unknown };
  if (drainMs === undefined) return undefined;
  if (typeof drainMs !== 'number' || !(drainMs >= DRAIN.min && drainMs <= DRAIN.max))
    throw new InvalidOptionError(
      `close({ drainMs }): got ${typeof drainMs === 'string' ? `'${drainMs}'` : String(drainMs)}, expected a number of ms from ${DRAIN.min} to ${DRAIN.max}`,
    );
  return drainMs;
}
