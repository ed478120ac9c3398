import { formatHdrLog } from '../bench/hdr-log.js';
import { joinRecordings } from '../bench/join-recordings.js';
import type { BenchPlan } from '../bench/plan.js';
import { ProgressLine } from '../bench/progress.js';
import type { BenchResult, BenchRun } from '../bench/result.js';
import { fmtMs, fmtRate } from '../bench/report-text.js';
import { runBench } from '../bench/run-bench.js';
import type { RecordedRun, ServerSamples } from '../bench/server-samples.js';
import { sideReadsOf } from '../bench/side-reads.js';
import type { StabilityPlan } from '../bench/stability-rule.js';
import { runStable } from '../bench/stable-windows.js';
import { lineDisplay, startDashboardDisplay } from './bench-progress-display.js';
import { startServerStatistics } from './bench-server-statistics.js';

/** What measuring a run needs of the command: where it writes, its stop and its --stable plan. */
export interface MeasureContext {
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream };
  /** Where the human summary goes. */
  text: NodeJS.WritableStream;
  stop: AbortController;
  dashboard: boolean;
  showProgress: boolean;
  /** --stable: each run (or sweep step) is windows until three agree. */
  stability: StabilityPlan | undefined;
}

/** One measured run (or `--stable`'s kept windows joined) and, with --html, the server's reads while it ran. */
interface MeasuredRun {
  run: BenchRun;
  plan: BenchPlan;
  samples: ServerSamples | undefined;
}

/**
 * How each run (or sweep step) is measured: with its display, the server's statistics and, with
 * --html, its reads; with --stable as windows joined. Each measure gives the run's result and its
 * HdrHistogram log, and adds what --html draws to `recorded`.
 */
export function measurer(
  context: MeasureContext,
  serverSamples: typeof import('../bench/server-samples.js') | undefined,
  recorded: RecordedRun[],
): (stepPlan: BenchPlan) => Promise<{ result: BenchResult; hdr: string }> {
  const { io, text, stop } = context;
  const runOne = async (stepPlan: BenchPlan): Promise<MeasuredRun> => {
    const display = context.dashboard
      ? await startDashboardDisplay(stepPlan, io.stdout as NodeJS.WriteStream, stop)
      : context.showProgress
        ? lineDisplay(new ProgressLine(io.stderr))
        : undefined;
    const server = serverSamples?.startServerSamples(stepPlan.url, sideReadsOf(stepPlan));
    // The server's own split of the time, read at the window's start and end (perf_analyzer's "Server:").
    const statistics = startServerStatistics(stepPlan);
    // Stopped once, whether the run ended or threw.
    let reads: Promise<ServerSamples | undefined> | undefined;
    const stopReads = (): Promise<ServerSamples | undefined> =>
      (reads ??= server?.stop() ?? Promise.resolve(undefined));
    try {
      if (stepPlan.warmupMs === 0) await statistics.first;
      const run = await runBench(stepPlan, {
        stop: stop.signal,
        onStart: (startEpochMs) => statistics.clockStarted(startEpochMs),
        ...(display === undefined ? {} : { onProgress: display.draw }),
      });
      const reading = await statistics.stop();
      run.result.server = reading.server;
      if (reading.warning !== undefined) run.result.warnings.push(reading.warning);
      return { run, plan: stepPlan, samples: await stopReads() };
    } finally {
      await statistics.stop();
      display?.end();
      await stopReads();
    }
  };
  const stability = context.stability;
  // With --stable a run (or a sweep's step) is windows until the last three agree, joined: the
  // report, its log and its page are of the kept windows.
  const measureRun = async (stepPlan: BenchPlan): Promise<MeasuredRun> => {
    if (stability === undefined) return runOne(stepPlan);
    const windows: MeasuredRun[] = [];
    const result = await runStable(
      stepPlan,
      stability,
      async (windowPlan) => {
        const window = await runOne(windowPlan);
        windows.push(window);
        return window.run.result;
      },
      (figures, index) =>
        text.write(
          `window ${index + 1}/${stability.maxWindows}: ${fmtRate(figures.throughputRps)} answered/s, ${stability.latency} ${figures.latencyMs === undefined ? '-' : fmtMs(figures.latencyMs)} ms\n`,
        ),
      stop.signal,
    );
    const keptNumbers = result.stability?.kept ?? [];
    const kept = windows.filter((_, i) => keptNumbers.includes(i + 1));
    const firstNumber = keptNumbers[0] ?? 1;
    return {
      run: joinRecordings(
        kept.map((w) => w.run),
        result,
        firstNumber,
      ),
      plan: stepPlan,
      samples:
        serverSamples === undefined
          ? undefined
          : serverSamples.joinServerSamples(kept.map((w) => w.samples as ServerSamples)),
    };
  };
  const measure = async (stepPlan: BenchPlan): Promise<{ result: BenchResult; hdr: string }> => {
    const measured = await measureRun(stepPlan);
    const { run } = measured;
    if (measured.samples !== undefined) recorded.push({ run, plan: stepPlan, samples: measured.samples });
    const spans = run.windows;
    const kept = spans === undefined ? '' : ` windows ${spans[0]?.number}-${spans.at(-1)?.number} joined (--stable)`;
    const hdr = formatHdrLog(
      run.intervals,
      run.startEpochMs,
      // The seed only where it plays a part, as the --json report has it: an open loop's arrivals.
      `batchline bench ${stepPlan.method} ${stepPlan.url}${stepPlan.mode === 'open' ? ` seed ${stepPlan.seed}` : ''}${kept}`,
    );
    return { result: run.result, hdr };
  };
  return measure;
}
