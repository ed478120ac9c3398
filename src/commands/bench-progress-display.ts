import type { BenchPlan } from '../bench/plan.js';
import type { BenchProgress, ProgressLine } from '../bench/progress.js';
import { quitAtOnce } from './interrupt.js';

/** What a run shows while it runs: a plain progress line, or the live dashboard. */
export interface ProgressDisplay {
  draw: (progress: BenchProgress) => void;
  end: () => void;
}

export function lineDisplay(line: ProgressLine): ProgressDisplay {
  return { draw: (p) => line.draw(p), end: () => line.end() };
}

/**
 * The live Ink view of a run; the plain summary is printed after its last frame. `q` (or
 * Ctrl-C, which Ink's raw mode turns into a key) stops the run as a first Ctrl-C does without a
 * dashboard: the summary covers what ran; a second one quits at once.
 */
export async function startDashboardDisplay(
  plan: BenchPlan,
  stdout: NodeJS.WriteStream,
  stop: AbortController,
): Promise<ProgressDisplay> {
  const { startBenchDashboard, benchViewFromProgress } = await import('../ui/bench-dashboard.js');
  const dashboard = startBenchDashboard({
    stdout,
    onStop: () => {
      if (!stop.signal.aborted) return void stop.abort();
      dashboard.stop();
      quitAtOnce('SIGINT');
    },
  });
  const facts = {
    target: `${plan.method} ${plan.url}`,
    plannedRequests: plan.maxRequests > 0 ? plan.maxRequests : undefined,
    connections: plan.mode === 'closed' ? plan.connections : undefined,
  };
  return {
    draw: (p) => dashboard.update(benchViewFromProgress(p, facts)),
    end: () => dashboard.stop(),
  };
}
