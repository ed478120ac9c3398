import { writeFile } from 'node:fs/promises';
import { connectionsSweepJson, formatConnectionsSweep, runConnectionsSweep } from '../bench/connections-sweep.js';
import { csvReport } from '../bench/csv-report.js';
import type { BenchPlan } from '../bench/plan.js';
import { counted } from '../bench/report-text.js';
import type { BenchResult } from '../bench/result.js';
import type { RecordedRun } from '../bench/server-samples.js';
import { bestRate, formatSweep, runSweep, stepVerdict, type Slo } from '../bench/sweep.js';
import { type SweepEnd, sweepEndJson, sweepStepsJson } from '../bench/sweep-steps-json.js';
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

/**
 * --stop-on-miss: the sweep's own stop, aborted by the user's or after the first step that does
 * not meet the objective (perf_analyzer's --latency-threshold), and the line that says why a
 * sweep ended early.
 */
function stopOnMiss(context: SweepContext, slo: Slo) {
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
  const endedLine = (done: number, total: number, step: string): string =>
    missedStep === undefined
      ? `stopped after step ${done} of ${total}\n`
      : `ended after step ${done} of ${total} (--stop-on-miss): ${step} did not meet ${slo.text} (${stepVerdict(missedStep, slo)})\n`;
  // As the line says it: a sweep whose last step missed still ran every step.
  const ended = (done: number, total: number): SweepEnd =>
    done >= total ? 'all_steps' : missedStep === undefined ? 'stopped' : 'stop_on_miss';
  return { signal: sweepStop.signal, judgeStep, endedLine, ended, missedStep: () => missedStep };
}

/** --sweep: open-loop steps at each rate, their table, the best rate that met --slo, and the files asked for. */
export async function runRateSweep(
  plan: BenchPlan,
  sweepRates: number[],
  slo: Slo,
  context: SweepContext,
): Promise<void> {
  const { outputs, stdout, text, measure, page, recorded, commandLine } = context;
  const { signal, judgeStep, endedLine, ended, missedStep } = stopOnMiss(context, slo);
  const results = await runSweep(
    plan,
    sweepRates,
    async (stepPlan) => {
      const { result, hdr } = await measure(stepPlan);
      if (outputs.hdrLog !== undefined)
        await writeOutput(stepLogPath(outputs.hdrLog, `${stepPlan.rateRps}rps`), hdr, stdout);
      return result;
    },
    (result, index) => {
      text.write(
        `step ${index + 1}/${sweepRates.length}: ${result.targetRateRps} req/s target, ${result.throughputRps.toFixed(1)} answered, p99 ${result.latency.p99.toFixed(2)} ms\n`,
      );
      judgeStep(result);
    },
    signal,
  );
  if (results.length < sweepRates.length)
    text.write(endedLine(results.length, sweepRates.length, `${missedStep()?.targetRateRps} req/s`));
  text.write(`\n${formatSweep(results, slo)}`);
  if (outputs.json !== undefined) {
    const best = bestRate(results, slo);
    await writeOutput(
      outputs.json,
      `${JSON.stringify({ schema: 'batchline.bench-sweep/v1', slo: slo.text, ...sweepEndJson(ended(results.length, sweepRates.length), sweepRates.length), best_rate_rps: best ?? null, steps: sweepStepsJson(results, slo) }, null, 2)}\n`,
      stdout,
    );
  }
  if (page !== undefined && outputs.html !== undefined)
    await page.writeBenchSweepHtml(outputs.html, recorded, slo, commandLine);
  if (outputs.csv !== undefined) await writeFile(outputs.csv, csvReport(results, slo));
  refuseIfNothingSucceeded(results);
  refuseIfNotSettled(results);
}

/** --sweep-connections: closed-loop steps at each count of connections, their table, and the files asked for. */
export async function runConnectionsSweepMode(
  plan: BenchPlan,
  sweepConnections: number[],
  slo: Slo,
  context: SweepContext,
): Promise<void> {
  const { outputs, stdout, text, measure, page, recorded, commandLine } = context;
  const { signal, judgeStep, endedLine, ended, missedStep } = stopOnMiss(context, slo);
  const results = await runConnectionsSweep(
    plan,
    sweepConnections,
    async (stepPlan) => {
      const { result, hdr } = await measure(stepPlan);
      if (outputs.hdrLog !== undefined)
        await writeOutput(stepLogPath(outputs.hdrLog, `c${stepPlan.connections}`), hdr, stdout);
      return result;
    },
    (result, index) => {
      text.write(
        `step ${index + 1}/${sweepConnections.length}: ${counted(result.connections, 'connection')}, ${result.throughputRps.toFixed(1)} answered/s, p99 ${result.latency.count > 0 ? result.latency.p99.toFixed(2) : '-'} ms\n`,
      );
      judgeStep(result);
    },
    signal,
  );
  if (results.length < sweepConnections.length)
    text.write(
      endedLine(results.length, sweepConnections.length, counted(missedStep()?.connections ?? 0, 'connection')),
    );
  text.write(`\n${formatConnectionsSweep(results, slo)}`);
  if (outputs.json !== undefined)
    await writeOutput(
      outputs.json,
      `${JSON.stringify(connectionsSweepJson(results, slo, ended(results.length, sweepConnections.length), sweepConnections.length), null, 2)}\n`,
      stdout,
    );
  if (page !== undefined && outputs.html !== undefined)
    await page.writeBenchSweepHtml(outputs.html, recorded, slo, commandLine, 'connections');
  if (outputs.csv !== undefined) await writeFile(outputs.csv, csvReport(results, slo));
  refuseIfNothingSucceeded(results);
  refuseIfNotSettled(results);
}
