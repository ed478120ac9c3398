import { writeFile } from 'node:fs/promises';
import { connectionsSweepJson, formatConnectionsSweep, runConnectionsSweep } from '../bench/connections-sweep.js';
import { csvReport } from '../bench/csv-report.js';
import type { BenchPlan } from '../bench/plan.js';
import { counted } from '../bench/report-text.js';
import type { BenchResult } from '../bench/result.js';
import type { RecordedRun } from '../bench/server-samples.js';
import { bestRate, formatSweep, runSweep, stepVerdict, type Slo } from '../bench/sweep.js';
import { type SweepEnd, sweepEndJson, sweepStepsJson } from '../bench/sweep-steps-json.js';
import type { SweepBy } from '../report/html/bench-page.js';
import { refuseIfNothingSucceeded, refuseIfNotSettled } from './bench-exit-codes.js';
import { stepLogPath, writeOutput, type BenchOutputs } from './bench-outputs.js';

/** What a sweep needs of the command: its outputs, where it writes, its stop and how a step is measured. */
export interface SweepContext {
  outputs: BenchOutputs;
  stdout: NodeJS.WritableStream;
  /** Where the human summary goes. */
  text: NodeJS.WritableStream;
  stop: AbortController;
  measure: (stepPlan: BenchPlan) => Promise<{ result: BenchResult; hdr: string }>;
  /** The --html page's code, loaded only with --html. */
  page: typeof import('../report/html/bench-html.js') | undefined;
  /** Each step's run and server reads, for the --html page. */
  recorded: RecordedRun[];
  commandLine: string;
}

/** What one kind of sweep says of itself; everything else a sweep does is `runSweepMode`'s. */
export interface SweepMode {
  /** Runs a plan at each step's value: aborted, the step running ends early and no later one starts. */
  runSteps: (
    base: BenchPlan,
    steps: readonly number[],
    runStep: (plan: BenchPlan) => Promise<BenchResult>,
    onStep: (result: BenchResult, index: number) => void,
    stop: AbortSignal,
  ) => Promise<BenchResult[]>;
  /** A step's part of its --hdr-log file's name (`run-100rps.hlog`, `run-c4.hlog`). */
  hdrLogName: (stepPlan: BenchPlan) => string;
  /** The progress line's figures after `step i/n: `. */
  progress: (result: BenchResult) => string;
  /** The step as the line that ends a sweep early names it. */
  stepName: (result: BenchResult) => string;
  table: (results: readonly BenchResult[], slo: Slo) => string;
  json: (results: readonly BenchResult[], slo: Slo, end: SweepEnd, stepsPlanned: number) => object;
  htmlBy: SweepBy;
}

/** --sweep: open-loop steps at each rate, and the best rate that met --slo. */
export const RATE_SWEEP: SweepMode = {
  runSteps: runSweep,
  hdrLogName: (stepPlan) => `${stepPlan.rateRps}rps`,
  progress: (result) =>
    `${result.targetRateRps} req/s target, ${result.throughputRps.toFixed(1)} answered, p99 ${result.latency.p99.toFixed(2)} ms`,
  stepName: (result) => `${result.targetRateRps} req/s`,
  table: formatSweep,
  json: (results, slo, end, stepsPlanned) => ({
    schema: 'batchline.bench-sweep/v1',
    slo: slo.text,
    ...sweepEndJson(end, stepsPlanned),
    best_rate_rps: bestRate(results, slo) ?? null,
    steps: sweepStepsJson(results, slo),
  }),
  htmlBy: 'rate',
};

/** --sweep-connections: closed-loop steps at each count of connections (perf_analyzer's --concurrency-range). */
export const CONNECTIONS_SWEEP: SweepMode = {
  runSteps: runConnectionsSweep,
  hdrLogName: (stepPlan) => `c${stepPlan.connections}`,
  progress: (result) =>
    `${counted(result.connections, 'connection')}, ${result.throughputRps.toFixed(1)} answered/s, p99 ${result.latency.count > 0 ? result.latency.p99.toFixed(2) : '-'} ms`,
  stepName: (result) => counted(result.connections, 'connection'),
  table: formatConnectionsSweep,
  json: connectionsSweepJson,
  htmlBy: 'connections',
};

/**
 * --stop-on-miss: the sweep's own stop, aborted by the user's or after the first step that does
 * not meet the objective (perf_analyzer's --latency-threshold), and the line that says why a
 * sweep ended early.
 */
function stopOnMiss(context: SweepContext, slo: Slo, mode: SweepMode) {
  const { outputs, stop } = context;
  const sweepStop = new AbortController();
  const passStop = (): void => sweepStop.abort();
  if (stop.signal.aborted) passStop();
  stop.signal.addEventListener('abort', passStop, { once: true });
  let missedStep: BenchResult | undefined;
  const judgeStep = (result: BenchResult): void => {
    if (outputs.stopOnMiss !== true || missedStep !== undefined) return;
    if (stepVerdict(result, slo) === 'met') return;
    missedStep = result;
    sweepStop.abort();
  };
  const endedLine = (done: number, total: number): string =>
    missedStep === undefined
      ? `stopped after step ${done} of ${total}\n`
      : `ended after step ${done} of ${total} (--stop-on-miss): ${mode.stepName(missedStep)} did not meet ${slo.text} (${stepVerdict(missedStep, slo)})\n`;
  // As the line says it: a sweep whose last step missed still ran every step.
  const ended = (done: number, total: number): SweepEnd =>
    done >= total ? 'all_steps' : missedStep === undefined ? 'stopped' : 'stop_on_miss';
  return { signal: sweepStop.signal, judgeStep, endedLine, ended };
}

/** Runs each step, prints its line and the sweep's table, and writes the files asked for. */
export async function runSweepMode(
  plan: BenchPlan,
  steps: number[],
  slo: Slo,
  context: SweepContext,
  mode: SweepMode,
): Promise<void> {
  const { outputs, stdout, text, measure, page, recorded, commandLine } = context;
  const { signal, judgeStep, endedLine, ended } = stopOnMiss(context, slo, mode);
  const results = await mode.runSteps(
    plan,
    steps,
    async (stepPlan) => {
      const { result, hdr } = await measure(stepPlan);
      if (outputs.hdrLog !== undefined)
        await writeOutput(stepLogPath(outputs.hdrLog, mode.hdrLogName(stepPlan)), hdr, stdout);
      return result;
    },
    (result, index) => {
      text.write(`step ${index + 1}/${steps.length}: ${mode.progress(result)}\n`);
      judgeStep(result);
    },
    signal,
  );
  if (results.length < steps.length) text.write(endedLine(results.length, steps.length));
  text.write(`\n${mode.table(results, slo)}`);
  if (outputs.json !== undefined)
    await writeOutput(
      outputs.json,
      `${JSON.stringify(mode.json(results, slo, ended(results.length, steps.length), steps.length), null, 2)}\n`,
      stdout,
    );
  if (page !== undefined && outputs.html !== undefined)
    await page.writeBenchSweepHtml(outputs.html, recorded, slo, commandLine, mode.htmlBy);
  if (outputs.csv !== undefined) await writeFile(outputs.csv, csvReport(results, slo));
  refuseIfNothingSucceeded(results);
  refuseIfNotSettled(results);
}
