import { writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { BatchlineError, ExitWithCode } from '../errors.js';
import type { SimulateOptions } from '../options/simulate.js';
import type { CoreEvent } from '../core/event-log.js';
import { formatEvents } from './events-text.js';
import { loadSimulationInputs, prepareRun, type SimulationInputs } from './prepare.js';
import { buildReport, type SimulationReport } from './report.js';
import { formatReport } from './report-text.js';
import { runSimulation } from './run-simulation.js';
import { figuresOf, meetsSlo, parseSlo, type Slo } from './slo.js';
import { describeResult, evaluateObjective } from '../options/objective.js';
import { parseSweep } from './sweep-grid.js';
import { analyzeSweep, formatSweep, sweepCsv, sweepJson } from './sweep-report.js';
import { runSweep } from './sweep-run.js';
import { writeTrace } from './trace-writer.js';

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
/** The step-through view is for small scenarios, like the original browser timeline (80 requests). */
const MAX_STEP_EVENTS = 5000;

export async function simulateMain(request: SimulateRequest): Promise<void> {
  const { options, given, stdout } = request;
  const slo = options.slo === undefined ? undefined : parseSlo(options.slo);
  if (options.html !== undefined) await (await import('../report/html/write-report.js')).checkReportPath(options.html);
  if (options.csv !== undefined && request.sweep === undefined)
    throw new BatchlineError('INVALID_OPTION', '--csv: applies to --sweep only; use --json for a single run');
  if (request.sweep !== undefined) {
    if (options.trace !== undefined || options.events || options.step)
      throw new BatchlineError('INVALID_OPTION', '--trace, --events and --step apply to a single run, not to --sweep');
    const axes = parseSweep(request.sweep);
    if (options.json === '-' && options.csv === '-')
      throw new BatchlineError('INVALID_OPTION', '--json - and --csv -: only one of them can go to stdout');
    const inputs = await loadSimulationInputs(options, given);
    const rows = await runSweep(options, axes, inputs, request.workers ?? availableParallelism());
    const outcome = analyzeSweep(options.seed, axes, rows, slo);
    if (options.json !== undefined) await emit(options.json, sweepJson(outcome), stdout);
    if (options.csv !== undefined) await emit(options.csv, sweepCsv(outcome), stdout);
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
    trace: options.trace,
  });
  if (options.step && events !== undefined) {
    if (events.length > MAX_STEP_EVENTS) {
      throw new BatchlineError(
        'INVALID_OPTION',
        `--step: ${events.length} events are too many to step through (at most ${MAX_STEP_EVENTS}); use --requests 20 or --duration 200ms`,
      );
    }
    const { startTimeline } = await import('../ui/timeline-view.js');
    await startTimeline({
      events,
      maxQueueSize: options.maxQueueSize,
      instances: options.instances,
      maxBatchSize: options.maxBatchSize,
      batchWindowMs: options.batchWindowMs,
    });
  } else if (events !== undefined && options.json !== '-') stdout.write(`${formatEvents(events)}\n`);
  if (options.json !== undefined) await emit(options.json, `${JSON.stringify(report, null, 2)}\n`, stdout);
  if (options.json !== '-') {
    stdout.write(formatReport(report));
    if (slo !== undefined) stdout.write(`slo         ${slo.text}: ${meetsSlo(report, slo) ? 'met' : 'MISSED'}\n`);
  }
  if (options.html !== undefined) {
    const { writeSimulationHtml } = await import('../report/html/simulate-html.js');
    await writeSimulationHtml(options.html, options, inputs, slo, request.commandLine ?? 'batchline simulate');
  }
  if (slo !== undefined && !meetsSlo(report, slo)) throw new ExitWithCode(1, describeMiss(report, slo));
}

/**
 * One simulation from options, for the CLI and for other commands' views (the `--step`
 * timeline takes `events` from here). With `collect.trace` the trace is written to that path.
 */
export async function simulateOnce(
  options: SimulateOptions,
  given: ReadonlySet<string>,
  collect: { events?: boolean; trace?: string | undefined } = {},
): Promise<{ report: SimulationReport; events: CoreEvent[] | undefined; inputs: SimulationInputs }> {
  const inputs = await loadSimulationInputs(options, given);
  if (collect.trace !== undefined) {
    // Find out before the run, not after it, that the trace cannot be written.
    await writeFile(collect.trace, '').catch((error: Error) => {
      throw new BatchlineError('INVALID_OPTION', `--trace: cannot write '${collect.trace}': ${error.message}`);
    });
  }
  const { setup, context } = prepareRun(options, inputs, {
    events: collect.events === true,
    trace: collect.trace !== undefined,
  });
  const result = runSimulation(setup);
  if (collect.trace !== undefined && result.trace !== undefined) await writeTrace(collect.trace, result.trace);
  return { report: buildReport(result, context), events: result.events, inputs };
}

function describeMiss(report: SimulationReport, slo: Slo): string {
  const misses = evaluateObjective(slo, figuresOf(report))
    .filter((r) => !r.met)
    .map((r) => `${describeResult(r)} (wanted ${r.clause.text})`);
  return `batchline: objective ${slo.text} missed: ${misses.join(', ')}`;
}

async function emit(target: string, text: string, stdout: Output): Promise<void> {
  if (target === '-') {
    stdout.write(text);
    return;
  }
  try {
    await writeFile(target, text);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `cannot write '${target}': ${(error as Error).message}`);
  }
}
