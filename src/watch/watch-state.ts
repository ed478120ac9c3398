import { formatMs } from '../report/format.js';
import type { StatsAnswer } from '../stats-contract/server-stats.js';
import type { StatsRead } from '../stats-contract/stats-poller.js';

/** What `watch` knows about the remote server after a series of reads. */
export interface WatchState {
  /** The last read that succeeded, and when (reader's monotonic ms). */
  lastGood: { stats: StatsAnswer; atMs: number } | undefined;
  /** Set while reads fail: the latest reason, since when, how many in a row. */
  failure: { error: string; sinceMs: number; count: number } | undefined;
}

export const INITIAL_WATCH_STATE: WatchState = Object.freeze({ lastGood: undefined, failure: undefined });

/** Folds one read into the state. */
export function applyRead(state: WatchState, read: StatsRead): WatchState {
  if (read.ok) return { lastGood: { stats: read.stats, atMs: read.atMs }, failure: undefined };
  const failure =
    state.failure === undefined
      ? { error: read.error, sinceMs: read.atMs, count: 1 }
      : { error: read.error, sinceMs: state.failure.sinceMs, count: state.failure.count + 1 };
  return { lastGood: state.lastGood, failure };
}

export type ConnectionTone = 'connecting' | 'live' | 'unreachable';

/** The line watch shows under its header: how fresh the figures are, or why they are not. */
export function describeConnection(
  state: WatchState,
  nowMs: number,
  intervalMs: number,
): { tone: ConnectionTone; text: string } {
  const retry = `retrying every ${formatMs(intervalMs)}`;
  if (state.failure !== undefined) {
    const downFor = ageText(nowMs - state.failure.sinceMs);
    if (state.lastGood === undefined) {
      return { tone: 'unreachable', text: `unreachable (${state.failure.error}) for ${downFor}, ${retry}` };
    }
    // Short enough for 80 columns: the header already says "unreachable".
    const age = ageText(nowMs - state.lastGood.atMs);
    return { tone: 'unreachable', text: `${state.failure.error} for ${downFor} · ${retry} · figures ${age} old` };
  }
  if (state.lastGood === undefined) return { tone: 'connecting', text: 'connecting…' };
  return { tone: 'live', text: `last good read ${ageText(nowMs - state.lastGood.atMs)} ago` };
}

/** Ages to a tenth of a second (`0.3 s`, `12.0 s`), then as durations (`2m05s`): steady as they tick. */
function ageText(ms: number): string {
  const clamped = Math.max(0, ms);
  return clamped < 60_000 ? `${(clamped / 1000).toFixed(1)} s` : formatMs(clamped);
}
