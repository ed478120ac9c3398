/** Windows that must agree, as perf_analyzer's stability window of three measurements. */
export const AGREEING_WINDOWS = 3;
/** perf_analyzer's --measurement-interval default. */
export const DEFAULT_WINDOW_MS = 5000;
/** perf_analyzer's --max-trials default. */
export const DEFAULT_MAX_WINDOWS = 10;

/**
 * The 2xx latency figure the rule judges (`--stable-latency`): perf_analyzer judges the mean
 * unless `--percentile=N` is given, so the mean is the default.
 */
export const STABLE_LATENCIES = ['mean', 'p50', 'p90', 'p95', 'p99'] as const;
export type StableLatency = (typeof STABLE_LATENCIES)[number];
export const DEFAULT_STABLE_LATENCY: StableLatency = 'mean';

/**
 * One window's length: a time (`--window 5s`, perf_analyzer's time_windows) or a count of
 * measured requests (`--window 500req`, its count_windows with --measurement-request-count).
 */
export type WindowLength = { ms: number } | { requests: number };

/** `--stable PCT`: windows of `window` until the last three agree within `percentage` %, up to `maxWindows`. */
export interface StabilityPlan {
  percentage: number;
  window: WindowLength;
  maxWindows: number;
  latency: StableLatency;
}

/** What one window measured that the rule judges. */
export interface WindowFigures {
  /** Answers (any status) inside the window, per second of it. */
  throughputRps: number;
  /** The judged figure of the 2xx latency (`Stability.latency`), ms; undefined when the window had no 2xx answer. */
  latencyMs: number | undefined;
}

/** How far apart the kept windows lie: each figure's largest over its smallest, in % above 1 (perf_analyzer's measure). */
export interface WindowSpread {
  throughputPct: number;
  /** Infinity when a kept window had no 2xx answer (no latency to agree on). */
  latencyPct: number;
}

/** Every window measured, which were kept, and whether they agreed: a result's `stability`. */
export interface Stability {
  percentage: number;
  /** A window's length in seconds; undefined for windows counted in requests. */
  windowS: number | undefined;
  /** A window's measured requests (`--window 500req`); undefined for windows of time. */
  windowRequests: number | undefined;
  maxWindows: number;
  /** The latency figure judged. */
  latency: StableLatency;
  windows: WindowFigures[];
  /** 1-based numbers of the windows the figures are of: the last three (fewer when stopped early). */
  kept: number[];
  spread: WindowSpread;
  settled: boolean;
  /** The user stopped the run before the windows agreed (not a failure to settle). */
  stopped: boolean;
}

/**
 * Each figure's largest over its smallest, in % above 1: perf_analyzer's measure (its
 * `--stability-percentage`: "the ratio of max / min from the recent 3 measurements"). Measured
 * from the three's mean, as bench first did, 91 and 109 req/s agreed at 10 %; by perf_analyzer's
 * rule they are 19.8 % apart.
 */
export function spreadOf(windows: readonly WindowFigures[]): WindowSpread {
  const spread = (values: readonly (number | undefined)[]): number => {
    if (values.some((v) => v === undefined)) return Number.POSITIVE_INFINITY;
    const numbers = values as number[];
    const smallest = Math.min(...numbers);
    if (!(smallest > 0)) return Number.POSITIVE_INFINITY;
    return (Math.max(...numbers) / smallest - 1) * 100;
  };
  return {
    throughputPct: spread(windows.map((w) => w.throughputRps)),
    latencyPct: spread(windows.map((w) => w.latencyMs)),
  };
}

/**
 * perf_analyzer's rule: the last three windows agree when the largest of their throughputs over
 * the smallest, and the same of their latencies, are within 1 + `percentage`/100, and none
 * answered nothing.
 */
export function windowsAgree(windows: readonly WindowFigures[], percentage: number): boolean {
  if (windows.length < AGREEING_WINDOWS) return false;
  const last = windows.slice(-AGREEING_WINDOWS);
  if (last.some((w) => !(w.throughputRps > 0))) return false;
  // The ratios themselves, as perf_analyzer compares them: 11 over 10 is within 10 %, where the
  // percentage made of it (10.000000000000009) was not.
  const within = (values: readonly (number | undefined)[]): boolean => {
    if (values.some((v) => v === undefined)) return false;
    const numbers = values as number[];
    return Math.max(...numbers) / Math.min(...numbers) <= 1 + percentage / 100;
  };
  return within(last.map((w) => w.throughputRps)) && within(last.map((w) => w.latencyMs));
}

/** perf_analyzer's "Failed to obtain stable measurement", with how far apart the last windows were. */
export function notSettledText(s: Stability): string {
  const pct = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(1)}%` : 'no 2xx answer');
  return `did not settle: the last ${s.kept.length} of ${s.windows.length} windows of ${windowText(s)} lie up to ${pct(s.spread.throughputPct)} (req/s) and ${pct(s.spread.latencyPct)} (${s.latency}) apart (largest over smallest), over the ${s.percentage}% --stable allows; the figures are those windows', not a stable measurement: try a longer --window or more --max-windows`;
}

/** A window's length as the reports name it: `5 s` or `500 requests`. */
export function windowText(s: Pick<Stability, 'windowS' | 'windowRequests'>): string {
  return s.windowRequests === undefined ? `${s.windowS} s` : `${s.windowRequests} requests`;
}
