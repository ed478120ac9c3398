import { joinWindows } from './join-windows.js';
import type { BenchPlan } from './plan.js';
import type { BenchResult } from './result.js';
import {
  AGREEING_WINDOWS,
  notSettledText,
  spreadOf,
  windowsAgree,
  type StabilityPlan,
  type StableLatency,
  type WindowFigures,
  type WindowLength,
} from './stability-rule.js';

/** What the rule judges of a window: its answers a second and the chosen figure of its 2xx latency. */
export function figuresOfWindow(result: BenchResult, latency: StableLatency): WindowFigures {
  return {
    throughputRps: result.throughputRps,
    latencyMs: result.latency.count > 0 ? result.latency[latency] : undefined,
  };
}

/**
 * A window's length in the plan's terms. Counted in requests, a closed loop's window ends at its
 * N-th measured send's answer (as `-n N`); an open loop's lasts N / rate of its schedule, so it
 * schedules N sends (on average with Poisson arrivals) and keeps a planned end, which its trend
 * (`not sustained`) needs: `-n` has none.
 */
export function windowPlan(plan: BenchPlan, window: WindowLength): Pick<BenchPlan, 'durationMs' | 'maxRequests'> {
  if ('ms' in window) return { durationMs: window.ms, maxRequests: 0 };
  if (plan.mode === 'open') return { durationMs: (window.requests * 1000) / plan.rateRps, maxRequests: 0 };
  return { durationMs: plan.durationMs, maxRequests: window.requests };
}

/**
 * Runs windows of `stability.window` one after another (the warm-up before the first only)
 * until the last three agree, or `maxWindows` were run, or `stop` aborts; the result is the last
 * three windows joined, with every window's figures in its `stability`. Each window is a run of
 * its own (`runWindow`: fresh connections, its own read of the server's statistics); in open
 * loop each has the next seed, so Poisson windows are not copies of one another.
 */
export async function runStable(
  plan: BenchPlan,
  stability: StabilityPlan,
  runWindow: (plan: BenchPlan) => Promise<BenchResult>,
  onWindow: (figures: WindowFigures, index: number) => void = () => {},
  stop?: AbortSignal,
): Promise<BenchResult> {
  const results: BenchResult[] = [];
  const windows: WindowFigures[] = [];
  const stopped = (): boolean => stop?.aborted === true;
  for (let index = 0; index < stability.maxWindows; index++) {
    const result = await runWindow({
      ...plan,
      warmupMs: index === 0 ? plan.warmupMs : 0,
      ...windowPlan(plan, stability.window),
      seed: (plan.seed + index) >>> 0,
    });
    results.push(result);
    windows.push(figuresOfWindow(result, stability.latency));
    onWindow(windows.at(-1) as WindowFigures, index);
    if (stopped() || windowsAgree(windows, stability.percentage)) break;
  }
  const keptFrom = Math.max(0, results.length - AGREEING_WINDOWS);
  const kept = results.slice(keptFrom);
  const settled = windowsAgree(windows, stability.percentage);
  const joined = joinWindows(plan, kept, keptFrom + 1);
  joined.stability = {
    percentage: stability.percentage,
    windowS: 'ms' in stability.window ? stability.window.ms / 1000 : undefined,
    windowRequests: 'requests' in stability.window ? stability.window.requests : undefined,
    maxWindows: stability.maxWindows,
    latency: stability.latency,
    windows,
    kept: kept.map((_, i) => keptFrom + 1 + i),
    spread: spreadOf(windows.slice(keptFrom)),
    settled,
    stopped: !settled && stopped(),
  };
  if (!settled && !stopped()) joined.warnings.unshift(notSettledText(joined.stability));
  return joined;
}
