import { formatMs } from '../report/format.js';
import type { BenchViewProps } from './bench-view.js';

/**
 * The fields of bench's progress snapshot (`BenchProgress` in src/bench/progress.ts) the view
 * reads, restated structurally so the UI builds without the bench code.
 */
export interface BenchProgressLike {
  elapsedMs: number;
  plannedMs: number | undefined;
  phase: string;
  sent: number;
  completed: number;
  inFlight: number;
  status: Record<string, number>;
  errors: Record<string, number>;
  recentP50Ms: number;
  recentP99Ms: number;
  targetRps: number | undefined;
  achievedRps: number;
  warnings: string[];
}

export interface BenchRunFacts {
  /** `POST http://host:8080/v1/infer`. */
  target: string;
  /** For a run that ends by --requests. */
  plannedRequests?: number | undefined;
  /** For a closed loop. */
  connections?: number | undefined;
  /** Period of the progress snapshots (ms), for the latency label. */
  periodMs?: number;
  finished?: boolean;
}

/** Maps one progress snapshot (plus what the run knows about itself) onto the view's props. */
export function benchViewFromProgress(
  progress: BenchProgressLike,
  facts: BenchRunFacts,
): Omit<BenchViewProps, 'columns'> {
  const finishedSinceLast = progress.completed > 0 && progress.recentP50Ms > 0 ? 1 : 0;
  return {
    target: facts.target,
    phase: progress.phase,
    elapsedMs: progress.elapsedMs,
    plannedMs: progress.plannedMs,
    plannedRequests: facts.plannedRequests,
    sent: progress.sent,
    completed: progress.completed,
    inFlight: progress.inFlight,
    targetRps: progress.targetRps,
    connections: facts.connections,
    achievedRps: progress.achievedRps,
    latencyMs: { count: finishedSinceLast, p50: progress.recentP50Ms, p99: progress.recentP99Ms },
    latencyLabel: facts.periodMs === undefined ? 'latency (recent)' : `latency (last ${formatMs(facts.periodMs)})`,
    statusCounts: progress.status,
    errorCounts: progress.errors,
    warnings: progress.warnings,
    finished: facts.finished === true,
  };
}
