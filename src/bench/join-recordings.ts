import { LOG_INTERVAL_MS, type EncodedInterval } from './recorder.js';
import type { BenchResult, BenchRun, WindowSpan } from './result.js';

/**
 * `--stable`'s kept windows as one run for `--hdr-log` and `--html`: the joined result (the
 * report's figures) with the windows' per-second intervals on the first kept window's clock.
 * Each window's seconds move by its start's offset, rounded to a whole interval (the log's
 * and the page's seconds are whole): the pause between two windows (tens of ms) falls
 * inside a second, whose counts then hold both windows' answers. Nothing is dropped or counted
 * twice, so the log's and the page's counts add up to the report's. `firstNumber` is the first
 * kept window's 1-based number.
 */
export function joinRecordings(windows: readonly BenchRun[], joined: BenchResult, firstNumber: number): BenchRun {
  const first = windows[0];
  if (first === undefined) throw new Error('joinRecordings: no window');
  const intervals: EncodedInterval[][] = [];
  const spans: WindowSpan[] = [];
  for (const [i, window] of windows.entries()) {
    const offsetMs = window.startEpochMs - first.startEpochMs;
    const shift = Math.round(offsetMs / LOG_INTERVAL_MS);
    for (const thread of window.intervals) intervals.push(thread.map((it) => ({ ...it, index: it.index + shift })));
    const startS = offsetMs / 1000 + window.result.warmupS;
    spans.push({ number: firstNumber + i, startS, endS: startS + window.result.durationS });
  }
  return { result: joined, intervals, startEpochMs: first.startEpochMs, windows: spans };
}
