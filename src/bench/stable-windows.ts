import { joinWindows } from './join-windows.js';
import type { BenchPlan } from './plan.js';
import type { BenchResult } from './result.js';
import {
  AGREEING_WINDOWS,
  notSettledText,
  spreadOf,
  windowsAgree,
  type StabilityPlan,
  type WindowFigures,
} from './stability-rule.js';

/** What the rule judges of a window: its answers a second and its 2xx latency's p99. */
export function figuresOfWindow(result: BenchResult): WindowFigures {
  return {
    throughputRps: result.throughputRps,
    p99Ms: result.latency.count > 0 ? result.latency.p99 : undefined,
  };
}

/**
 * Runs windows of `stability.windowMs` one after another (the warm-up before the first only)
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
      durationMs: stability.windowMs,
      maxRequests: 0,
      seed: (plan.seed + index) >>> 0,
    });
    results.push(result);
    windows.push(figuresOfWindow(result));
    onWindow(windows.at(-1) as WindowFigures, index);
    if (stopped() || windowsAgree(windows, stability.percentage)) break;
  }
  const keptFrom = Math.max(0, results.length - AGREEING_WINDOWS);
  const kept = results.slice(keptFrom);
  const settled = windowsAgree(windows, stability.percentage);
  const joined = joinWindows(plan, kept, keptFrom + 1);
  joined.stability = {
    percentage: stability.percentage,
    windowS: stability.windowMs / 1000,
    maxWindows: stability.maxWindows,
    windows,
    kept: kept.map((_, i) => keptFrom + 1 + i),
    spread: spreadOf(windows.slice(keptFrom)),
    settled,
    stopped: !settled && stopped(),
  };
  if (!settled && !stopped()) joined.warnings.unshift(notSettledText(joined.stability));
  return joined;
}
