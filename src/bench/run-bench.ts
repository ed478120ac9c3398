import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { shareOf, type BenchPlan } from './plan.js';
import { PROGRESS_HZ, ProgressAggregator, type BenchProgress } from './progress.js';
import type { RecorderTick } from './recorder.js';
import { buildResult } from './build-result.js';
import type { BenchRun } from './result.js';
import { runThread } from './run-thread.js';
import { profileOf } from './schedule.js';

export interface RunHooks {
  /** Called PROGRESS_HZ times a second with a snapshot, and once at the end. */
  onProgress?: (progress: BenchProgress) => void;
  /** Built worker entry; by default the bench-worker.js next to this module. */
  workerUrl?: URL;
  /**
   * Aborted to end the run before its planned end (Ctrl-C, `q`): sending stops, requests in
   * flight are waited for, and the result covers the part that ran.
   */
  stop?: AbortSignal;
  /**
   * Told when the run's clock starts (epoch ms), its warm-up ending `plan.warmupMs` later: at
   * once on this thread, later on worker threads, which start together once all are ready.
   */
  onStart?: (startEpochMs: number) => void;
}

/**
 * Runs a plan (in this thread, or on worker threads for --workers > 1) and merges the result.
 */
export async function runBench(plan: BenchPlan, hooks: RunHooks = {}): Promise<BenchRun> {
  const aggregator = new ProgressAggregator(progressContext(plan));
  const startMs = performance.now();
  const cpuAtStart = process.cpuUsage();
  const onProgress = hooks.onProgress;
  const stop = hooks.stop;
  // When the user stopped, as epoch ms: worker threads start later than this thread, at a
  // shared instant they report, and the stop is measured from the run's own start.
  let stoppedAtEpochMs: number | undefined;
  const noteStop = (): void => void (stoppedAtEpochMs ??= performance.timeOrigin + performance.now());
  const stoppedAfter = (startEpochMs: number): number | undefined =>
    stoppedAtEpochMs === undefined ? undefined : Math.max(0, stoppedAtEpochMs - startEpochMs);
  if (stop?.aborted === true) noteStop();
  stop?.addEventListener('abort', noteStop, { once: true });
  const emitter =
    onProgress === undefined
      ? undefined
      : setInterval(() => onProgress(aggregator.snapshot(performance.now() - startMs)), 1000 / PROGRESS_HZ);
  try {
    if (plan.workers <= 1) {
      const onTick =
        onProgress === undefined
          ? undefined
          : (tick: RecorderTick): void => aggregator.accept(0, tick, performance.now() - startMs);
      hooks.onStart?.(performance.timeOrigin + startMs);
      const outcome = await runThread(shareOf(plan, 0, 1), { startAtMs: startMs, onTick, stop });
      return withCpu(buildResult(plan, [outcome], stoppedAfter(outcome.startEpochMs)), cpuAtStart, [
        outcome.recording.counts.sentAll,
      ]);
    }
    const workerUrl = hooks.workerUrl ?? new URL('./bench-worker.js', import.meta.url);
    if (!existsSync(fileURLToPath(workerUrl)))
      throw new Error(`--workers needs the built worker at ${fileURLToPath(workerUrl)} (run npm run build)`);
    const { runOnWorkers } = await import('./worker-pool.js');
    const { outcomes, startEpochMs } = await runOnWorkers(
      plan,
      workerUrl,
      onProgress !== undefined,
      (thread, tick) => aggregator.accept(thread, tick, performance.now() - startMs),
      stop,
      hooks.onStart,
    );
    return withCpu(
      buildResult(plan, outcomes, stoppedAfter(startEpochMs)),
      cpuAtStart,
      outcomes.map((o) => o.recording.counts.sentAll),
    );
  } finally {
    stop?.removeEventListener('abort', noteStop);
    if (emitter !== undefined) clearInterval(emitter);
    onProgress?.(aggregator.snapshot(performance.now() - startMs, true));
    aggregator.destroy();
  }
}

/** The generator's CPU (this process, every thread) per request it sent, warm-up included. */
function withCpu(run: BenchRun, cpuAtStart: NodeJS.CpuUsage, sent: readonly number[]): BenchRun {
  const used = process.cpuUsage(cpuAtStart);
  const requests = sent.reduce((sum, n) => sum + n, 0);
  if (requests > 0) run.result.generator.cpuMsPerRequest = (used.user + used.system) / 1000 / requests;
  return run;
}

function progressContext(plan: BenchPlan): ConstructorParameters<typeof ProgressAggregator>[0] {
  if (plan.mode === 'closed') {
    return {
      plannedMs: plan.maxRequests > 0 ? undefined : plan.warmupMs + plan.durationMs,
      warmupMs: plan.warmupMs,
      targetRpsAt: undefined,
    };
  }
  const profile = profileOf(plan);
  return {
    plannedMs: Number.isFinite(profile.totalMs) ? profile.totalMs : undefined,
    warmupMs: plan.warmupMs,
    targetRpsAt: (ms) => profile.rateAt(ms),
  };
}
