import { performance } from 'node:perf_hooks';
import { runClosedLoop } from './closed-loop.js';
import { runOpenLoop } from './open-loop.js';
import { scheduledEndMsOf, type PlanShare } from './plan.js';
import { BenchRecorder, type EncodedRecording, type RecorderTick } from './recorder.js';
import { EventLoopMonitor, type EventLoopStats } from './self-monitor.js';

/** Progress ticks per second a thread reports (the dashboard's frame rate is set elsewhere). */
const TICK_MS = 250;

/** Everything one thread measured, in a form that can cross a worker boundary. */
export interface ThreadOutcome {
  recording: EncodedRecording;
  eventLoop: EventLoopStats;
  /** Wall-clock time of the run's t = 0, ms since the epoch. */
  startEpochMs: number;
}

export interface ThreadHooks {
  /** performance.now() value at which to start (default: now); threads share one start. */
  startAtMs?: number;
  onTick?: (tick: RecorderTick) => void;
  /** Aborted to end the run early (Ctrl-C, `q`): no new sends; requests in flight finish. */
  stop?: AbortSignal;
}

/** Runs one thread's share of a plan in this thread's event loop. */
export async function runThread(share: PlanShare, hooks: ThreadHooks = {}): Promise<ThreadOutcome> {
  const startAtMs = hooks.startAtMs ?? performance.now();
  const waitMs = startAtMs - performance.now();
  if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
  const recorder = new BenchRecorder(share.plan.keepIntervals, hooks.onTick !== undefined, {
    startMs: share.plan.warmupMs,
    endMs: scheduledEndMsOf(share.plan),
  });
  const monitor = new EventLoopMonitor();
  const clock = (): number => performance.now() - startAtMs;
  const ticker = hooks.onTick === undefined ? undefined : setInterval(() => hooks.onTick?.(recorder.tick()), TICK_MS);
  monitor.start();
  // The generator's self-check covers the measured part only, not its own cold start.
  const warmupEnd = share.plan.warmupMs > 0 ? setTimeout(() => monitor.reset(), share.plan.warmupMs) : undefined;
  try {
    if (share.plan.mode === 'open') await runOpenLoop(share, recorder, clock, hooks.stop);
    else await runClosedLoop(share, recorder, clock, hooks.stop);
  } finally {
    if (ticker !== undefined) clearInterval(ticker);
    if (warmupEnd !== undefined) clearTimeout(warmupEnd);
  }
  const eventLoop = monitor.stop();
  hooks.onTick?.(recorder.tick());
  const recording = recorder.finish();
  recorder.destroy();
  return { recording, eventLoop, startEpochMs: performance.timeOrigin + startAtMs };
}
