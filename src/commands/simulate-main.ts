import { availableCores } from '../model/cpu-cores.js';
import { writeFile } from 'node:fs/promises';
import { BatchlineError, ExitWithCode } from '../errors.js';
import { checkOutputPath } from './output-path.js';
import type { SimulateOptions } from '../options/simulate.js';
import { formatEvents } from '../simulate/events-text.js';
import { loadSimulationInputs } from '../simulate/prepare.js';
import type { SimulationReport } from '../simulate/report.js';
import { formatReport } from '../simulate/report-text.js';
import { figuresOf, meetsSlo, parseSlo, type Slo } from '../simulate/slo.js';
import { describeResult, evaluateObjective } from '../options/objective.js';
import { parseSweep } from '../simulate/sweep-grid.js';
import { analyzeSweep, formatSweep, sweepCsv, sweepJson } from '../simulate/sweep-report.js';
import { runSweep } from '../simulate/sweep-run.js';
import { simulateOnce } from '../simulate/simulate-once.js';

/** Where a command's output goes; stdout in the CLI, a string sink in tests. */
export interface Output {
  write(text: string): unknown;
}

export interface SimulateRequest {
  options: SimulateOptions;
  /** Option keys the user set. */
  given: ReadonlySet<string>;
  /** `--sweep` axes as typed, if any. */
  sweep: readonly string[] | undefined;
  stdout: Output;
  /** Where the events go when stdout is the JSON's (`--json -`); default the process's stderr. */
  stderr?: Output;
  /** Threads a sweep may use (default: the machine's parallelism). */
  workers?: number;
  /** The command as typed, for the footer of an --html report. */
  commandLine?: string;
}

/**
 * The body of `batchline simulate`: one run (report, JSON, trace, events) or a sweep (table,
 * CSV, JSON, recommendation). Throws BatchlineError on bad options and ExitWithCode(1) when an
 * objective given with `--slo` is missed.
 */
/** The step-through view is for scenarios small enough to follow event by event. */
const MAX_STEP_EVENTS = 5000;

export async function simulateMain(request: SimulateRequest): Promise<void> {
  const { options, given, stdout } = request;
  const slo = options.slo === undefined ? undefined : parseSlo(options.slo);
  // Files are checked before the run: a failed write after it lost the report (a sweep's minutes).
  await checkOutputPath(options.html, '--html');
  await checkOutputPath(options.json, '--json');
  if (options.csv !== undefined && request.sweep === undefined)
    throw new BatchlineError('INVALID_OPTION', '--csv: applies to --sweep only; use --json for a single run');
  await checkOutputPath(options.csv, '--csv');
  if (request.sweep !== undefined) {
    if (options.trace !== undefined || options.events || options.step)
      throw new BatchlineError('INVALID_OPTION', '--trace, --events and --step apply to a single run, not to --sweep');
    const axes = parseSweep(request.sweep);
    if (options.json === '-' && options.csv === '-')
      throw new BatchlineError('INVALID_OPTION', '--json - and --csv -: only one of them can go to stdout');
    const inputs = await loadSimulationInputs(options, given);
    const rows = await runSweep(options, axes, inputs, request.workers ?? availableCores());
    // One configuration with arrivals is a sweep to compare; none, the single run's mistake.
    if (rows.every((row) => row.report.requests.arrived === 0)) refuseEmptyRun(options, rows[0]!.report);
    const outcome = analyzeSweep(options.seed, axes, rows, slo);
    if (options.json !== undefined) await emit('--json', options.json, sweepJson(outcome), stdout);
    if (options.csv !== undefined) await emit('--csv', options.csv, sweepCsv(outcome), stdout);
    if (options.json !== '-' && options.csv !== '-') stdout.write(formatSweep(outcome));
    if (options.html !== undefined) {
      const { writeSweepHtml } = await import('../report/html/simulate-html.js');
      await writeSweepHtml(options.html, options, axes, inputs, outcome, request.commandLine ?? 'batchline simulate');
    }
    if (outcome.choice !== undefined && outcome.choice.best === undefined) throw new ExitWithCode(1);
    return;
  }
  const { report, events, inputs } = await simulateOnce(options, given, {
    events: options.events || options.step,
    eventsFlag: options.step ? '--step' : '--events',
    ...(options.step ? { maxEvents: MAX_STEP_EVENTS } : {}),
    trace: options.trace,
  });
  if (report.requests.arrived === 0) refuseEmptyRun(options, report);
  if (options.step && events !== undefined) {
    if (events.length > MAX_STEP_EVENTS) {
      throw new BatchlineError(
        'INVALID_OPTION',
        `--step: ${events.length} events are too many to step through (at most ${MAX_STEP_EVENTS} events); use --requests 20 or --duration 200ms`,
      );
    }
    const { startTimeline } = await import('../ui/timeline-view.js');
    await startTimeline({
      // With --json -, stdout is the JSON's alone: off a terminal the listing went before it, and the JSON did not parse.
      ...(options.json === '-' ? { stdout: process.stderr } : {}),
      events,
      maxQueueSize: options.maxQueueSize,
      instances: options.instances,
      maxBatchSize: options.maxBatchSize,
      batchWindowMs: options.batchWindowMs,
    });
  } else if (events !== undefined)
    // With --json -, to stderr: they were dropped, on neither stream.
    (options.json === '-' ? (request.stderr ?? process.stderr) : stdout).write(`${formatEvents(events)}\n`);
  // With --slo, the verdict as a sweep's rows carry it (slo, meets_slo): the JSON had none, only the exit code.
  const json = slo === undefined ? report : { ...report, slo: slo.text, meets_slo: meetsSlo(report, slo) };
  if (options.json !== undefined) await emit('--json', options.json, `${JSON.stringify(json, null, 2)}\n`, stdout);
  if (options.json !== '-') {
    stdout.write(formatReport(report, { targetGiven: given.has('targetLatencyMs') }));
    if (slo !== undefined) stdout.write(`slo         ${slo.text}: ${meetsSlo(report, slo) ? 'met' : 'MISSED'}\n`);
  }
  if (options.html !== undefined) {
    const { writeSimulationHtml } = await import('../report/html/simulate-html.js');
    await writeSimulationHtml(options.html, options, inputs, slo, request.commandLine ?? 'batchline simulate');
  }
  if (slo !== undefined && !meetsSlo(report, slo)) throw new ExitWithCode(1, describeMiss(report, slo));
}

/**
 * A run in which nothing arrived (a --duration shorter than the first arrival, stages of a rate
 * too low) printed a report of zeros and exited 0: there is nothing to report on (nor in a sweep
 * none of whose configurations had an arrival).
 */
function refuseEmptyRun(options: SimulateOptions, report: SimulationReport): never {
  const flag = options.stages !== undefined ? '--stages' : options.duration !== undefined ? '--duration' : '--arrivals';
  const remedy =
    flag === '--stages'
      ? 'give the stages more time or a higher rate'
      : flag === '--duration'
        ? 'lengthen --duration or raise --rate'
        : 'give a file with arrival times in the run';
  throw new BatchlineError(
    'INVALID_OPTION',
    `${flag}: no request arrived in the run (${report.config.arrivals}): nothing to report; ${remedy}`,
  );
}

function describeMiss(report: SimulationReport, slo: Slo): string {
  const misses = evaluateObjective(slo, figuresOf(report))
    .filter((r) => !r.met)
    .map((r) => `${describeResult(r)} (wanted ${r.clause.text})`);
  return `batchline: objective ${slo.text} missed: ${misses.join(', ')}`;
}

async function emit(flag: string, target: string, text: string, stdout: Output): Promise<void> {
  if (target === '-') {
    stdout.write(text);
    return;
  }
  try {
    await writeFile(target, text);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `${flag}: cannot write '${target}': ${(error as Error).message}`);
  }
}
