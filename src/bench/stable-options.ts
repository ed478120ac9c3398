import type { BenchOptionValues } from '../options/bench.js';
import { textGiven } from '../options/given.js';
import { invalidOptionValue as invalid } from '../options/invalid-option-value.js';
import { durationText, parseDurationMs } from '../options/schema.js';
import {
  DEFAULT_MAX_WINDOWS,
  DEFAULT_STABLE_LATENCY,
  DEFAULT_WINDOW_MS,
  type StabilityPlan,
  type StableLatency,
  type WindowLength,
} from './stability-rule.js';

/**
 * `--stable PCT` and the three options that shape it. Each window is --window long, so --duration
 * and --requests (which set one window's length) are refused beside it, as are stages (a ramp's
 * windows differ by design). --hdr-log and --html hold the kept windows joined (join-recordings.ts).
 */
export function stabilityOf(
  o: BenchOptionValues,
  durationGiven: boolean,
  withStages: boolean,
  workers: number,
): StabilityPlan | undefined {
  const pct = o.stable;
  if (pct === undefined) {
    const alone = 'with --stable PCT (windows until three agree)';
    if (o.window !== undefined) invalid('--window', o.window, `${alone}: a single run lasts -d/--duration`);
    if (o.maxWindows !== undefined) invalid('--max-windows', String(o.maxWindows), alone);
    if (o.stableLatency !== undefined) invalid('--stable-latency', o.stableLatency, alone);
    return undefined;
  }
  const why = (what: string) =>
    `${what} with --stable: each window lasts --window (default ${DEFAULT_WINDOW_MS / 1000}s), up to --max-windows`;
  // Quoted as typed (`5s`), as the other refusals quote their values.
  if (durationGiven)
    invalid('--duration', textGiven(o, 'duration') ?? durationText(o.duration), why('no -d/--duration'));
  if (o.requests > 0) invalid('--requests', String(o.requests), why('no -n/--requests'));
  if (withStages)
    invalid('--stages', o.stages as string, "no --stages with --stable: a ramp's windows differ by design");
  const window = o.window === undefined ? { ms: DEFAULT_WINDOW_MS } : parseWindow(o.window);
  // A closed loop's window of N requests shares them among the threads, as -n does.
  if ('requests' in window && window.requests < workers)
    invalid('--window', o.window as string, `at least --workers (${workers}) requests: each thread needs a share`);
  const latency = o.stableLatency === 'avg' ? 'mean' : ((o.stableLatency ?? DEFAULT_STABLE_LATENCY) as StableLatency);
  return { percentage: pct, window, maxWindows: o.maxWindows ?? DEFAULT_MAX_WINDOWS, latency };
}

/** Most requests a window may count, as -n's bound. */
const MAX_WINDOW_REQUESTS = 1_000_000_000;
/** Longest window of time. */
const MAX_WINDOW_MS = 3_600_000;

/**
 * `--window`: a time (`5s`, `500ms`, a bare number is seconds) or a count of measured requests
 * (`500req`, perf_analyzer's count_windows), in one flag as bench's other lengths are.
 */
function parseWindow(text: string): WindowLength {
  const allowed = `a time such as 500ms, 5s or 1m (from 1 ms to ${MAX_WINDOW_MS / 60_000} min) or a count of measured requests such as 500req (from 1 to ${MAX_WINDOW_REQUESTS})`;
  const counted = /^\s*(\d+)\s*(?:req|reqs|requests?)\s*$/i.exec(text);
  if (counted !== null) {
    const requests = Number(counted[1]);
    if (!(requests >= 1 && requests <= MAX_WINDOW_REQUESTS)) invalid('--window', text, allowed);
    return { requests };
  }
  const ms = parseDurationMs(text);
  if (ms === undefined || !(ms >= 1 && ms <= MAX_WINDOW_MS)) invalid('--window', text, allowed);
  return { ms };
}
