import { lookup } from 'node:dns/promises';
import { writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { ExitWithCode } from '../errors.js';
import { checkOutputPath } from './output-path.js';
import { checkStdoutOutputs, writeOutput, type BenchOutputs } from './bench-outputs.js';
import { nothingSucceeded, notSettled, THRESHOLDS_FAILED_EXIT } from './bench-exit-codes.js';
import { trapInterrupt } from './interrupt.js';
import { measurer, type MeasureContext } from './bench-measure.js';
import { CONNECTIONS_SWEEP, RATE_SWEEP, runSweepMode, type SweepContext } from './bench-sweep-modes.js';
import { withBody } from './bench-body.js';
import { checkCertificate } from '../bench/certificate-check.js';
import type { ValidatedBench } from '../bench/plan-from-options.js';
import type { BenchPlan } from '../bench/plan.js';
import { progressLineAllowed } from '../bench/progress.js';
import { toBenchJson } from '../bench/report-json.js';
import { formatReport } from '../bench/report-text.js';
import type { RecordedRun } from '../bench/server-samples.js';
import { parseSlo, parseSweep, type Slo } from '../bench/sweep.js';
import { parseConnectionsSweep } from '../bench/connections-sweep.js';
import { csvReport } from '../bench/csv-report.js';
import { failedThresholds, formatThresholds, judgeThresholds } from '../bench/thresholds.js';

export interface BenchIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  env: NodeJS.ProcessEnv;
  /** Ends the run early when aborted; by default the first Ctrl-C (SIGINT) does. */
  stop?: AbortController;
}

/** Everything `batchline bench <url>` does after its options are valid. */
export async function benchMain(validated: ValidatedBench, outputs: BenchOutputs, io: BenchIo): Promise<void> {
  const sweepRates = outputs.sweep === undefined ? undefined : parseSweep(outputs.sweep);
  const sweepConnections =
    outputs.sweepConnections === undefined ? undefined : parseConnectionsSweep(outputs.sweepConnections);
  const slo = sweepRates === undefined && sweepConnections === undefined ? undefined : parseSlo(outputs.slo);
  checkStdoutOutputs(outputs);
  await checkOutputPath(outputs.html, '--html');
  await checkOutputPath(outputs.json, '--json');
  await checkOutputPath(outputs.hdrLog, '--hdr-log');
  await checkOutputPath(outputs.csv, '--csv');
  await checkHostResolves(validated.plan.url);
  if (validated.plan.insecureTls !== true) await checkCertificate(validated.plan.url, validated.plan.timeoutMs);
  const plan = {
    ...(await withBody(validated, io.stderr)),
    keepIntervals: outputs.hdrLog !== undefined || outputs.html !== undefined,
  };
  // Human text goes to stdout, unless stdout carries the JSON or the log.
  const text = outputs.json === '-' || outputs.hdrLog === '-' ? io.stderr : io.stdout;
  const showProgress =
    !outputs.quiet && progressLineAllowed(io.stderr, io.env) && progressLineAllowed(io.stdout, io.env);
  const { shouldUseDashboard } = await import('../ui/terminal.js');
  const dashboard = showProgress && shouldUseDashboard(io.stdout, io.env, outputs.noUi === true);

  const stop = io.stop ?? new AbortController();
  const untrap = io.stop === undefined ? trapBenchInterrupt(stop, io.stderr) : () => {};
  try {
    await runPlan(plan, {
      sweepRates,
      sweepConnections,
      slo,
      outputs,
      io,
      text,
      stop,
      dashboard,
      showProgress,
      stability: validated.stability,
    });
  } finally {
    untrap();
  }
}

/**
 * Ctrl-C ends a run the way k6 does: the first stops sending, waits for the requests in flight
 * and prints the summary of what ran; a second quits at once (exit 130). SIGTERM too (k6's
 * choice as well): it is what `timeout`, `docker stop` and a cancelled CI job send, and it
 * killed a run with all its figures.
 */
function trapBenchInterrupt(stop: AbortController, stderr: NodeJS.WritableStream): () => void {
  return trapInterrupt(stop, (signal) =>
    stderr.write(
      `\nbatchline bench: stopping${signal === 'SIGINT' ? '' : ` (${signal})`}; waiting for the requests in flight (Ctrl-C again to quit now)\n`,
    ),
  );
}

interface RunContext extends MeasureContext {
  sweepRates: number[] | undefined;
  sweepConnections: number[] | undefined;
  slo: Slo | undefined;
  outputs: BenchOutputs;
  io: BenchIo;
}

/** Runs the plan (or each step of a sweep) and writes the summary and the files asked for. */
async function runPlan(plan: BenchPlan, context: RunContext): Promise<void> {
  const { sweepRates, sweepConnections, slo, outputs, io, text, stop } = context;
  // The report page and what it reads from the server load only with --html.
  const page = outputs.html === undefined ? undefined : await import('../report/html/bench-html.js');
  const serverSamples = outputs.html === undefined ? undefined : await import('../bench/server-samples.js');
  const recorded: RecordedRun[] = [];
  const measure = measurer(context, serverSamples, recorded);
  const commandLine = outputs.commandLine ?? 'batchline bench';
  const sweepContext: SweepContext = { outputs, stdout: io.stdout, text, stop, measure, page, recorded, commandLine };

  if (sweepRates !== undefined && slo !== undefined)
    return runSweepMode(plan, sweepRates, slo, sweepContext, RATE_SWEEP);
  if (sweepConnections !== undefined && slo !== undefined)
    return runSweepMode(plan, sweepConnections, slo, sweepContext, CONNECTIONS_SWEEP);

  const { result, hdr } = await measure(plan);
  const thresholds = judgeThresholds(outputs.thresholds ?? [], result);
  text.write(formatReport(result));
  if (thresholds.length > 0) text.write(formatThresholds(thresholds));
  if (outputs.json !== undefined)
    await writeOutput(outputs.json, `${JSON.stringify(toBenchJson(result, thresholds), null, 2)}\n`, io.stdout);
  if (outputs.hdrLog !== undefined) await writeOutput(outputs.hdrLog, hdr, io.stdout);
  if (outputs.csv !== undefined) await writeFile(outputs.csv, csvReport([result]));
  const only = recorded[0];
  if (page !== undefined && outputs.html !== undefined && only !== undefined)
    await page.writeBenchHtml(outputs.html, only, commandLine);
  const nothing = nothingSucceeded(result);
  const failed = failedThresholds(thresholds);
  const unsettled = notSettled([result]);
  // A run that measured nothing, or whose windows never agreed, is 1 whatever its thresholds say:
  // the measurement, not the server's figures, failed.
  if (nothing !== undefined) throw new ExitWithCode(1, [nothing, ...failed].join('\n'));
  if (unsettled !== undefined) throw new ExitWithCode(1, [unsettled, ...failed].join('\n'));
  if (failed.length > 0) throw new ExitWithCode(THRESHOLDS_FAILED_EXIT, failed.join('\n'));
}

/**
 * A host name that does not resolve fails every request as `other` with no word of why (a 10 s
 * run of 'errors other: 24'); saying so before the run names the cause. Exit 1: nothing answered.
 */
async function checkHostResolves(urlText: string): Promise<void> {
  const host = new URL(urlText).hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0) return;
  try {
    await lookup(host);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new ExitWithCode(
      1,
      `batchline bench: cannot resolve the host '${host}'${typeof code === 'string' ? ` (${code})` : ''}; no request was sent`,
    );
  }
}
