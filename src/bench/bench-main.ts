import { readFile, writeFile } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';
import { parseDurationMs } from '../options/schema.js';
import { probeTarget, TOY_MODEL_BODY } from './default-body.js';
import { formatHdrLog } from './hdr-log.js';
import type { ValidatedBench } from './plan-from-options.js';
import type { BenchPlan } from './plan.js';
import { ProgressLine, progressLineAllowed, type BenchProgress } from './progress.js';
import { toBenchJson } from './report-json.js';
import { formatReport } from './report-text.js';
import type { BenchResult } from './result.js';
import { runBench } from './run-bench.js';
import { bestRate, formatSweep, parseSlo, parseSweep, runSweep } from './sweep.js';

export interface BenchOutputs {
  json: string | undefined;
  hdrLog: string | undefined;
  sweep: string | undefined;
  slo: string;
  quiet: boolean;
  /** --no-ui: the plain progress line even on a terminal. */
  noUi?: boolean;
}

export interface BenchIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  env: NodeJS.ProcessEnv;
}

/** Everything `batchline bench <url>` does after its options are valid. */
export async function benchMain(validated: ValidatedBench, outputs: BenchOutputs, io: BenchIo): Promise<void> {
  const sweepRates = outputs.sweep === undefined ? undefined : parseSweep(outputs.sweep);
  const slo = sweepRates === undefined ? undefined : parseSlo(outputs.slo, parseDurationMs);
  const plan = { ...(await withBody(validated, io)), keepIntervals: outputs.hdrLog !== undefined };
  // Human text goes to stdout, unless stdout carries the JSON.
  const text = outputs.json === '-' ? io.stderr : io.stdout;
  const showProgress = !outputs.quiet && progressLineAllowed(io.stderr, io.env) && progressLineAllowed(io.stdout, io.env);
  const { shouldUseDashboard } = await import('../ui/terminal.js');
  const dashboard = showProgress && shouldUseDashboard(io.stdout, io.env, outputs.noUi === true);

  const runOne = async (stepPlan: BenchPlan): Promise<{ result: BenchResult; hdr: string }> => {
    const display = dashboard ? await startDashboardDisplay(stepPlan, io.stdout as NodeJS.WriteStream) : showProgress ? lineDisplay(new ProgressLine(io.stderr)) : undefined;
    try {
      const run = await runBench(stepPlan, display === undefined ? {} : { onProgress: display.draw });
      const hdr = formatHdrLog(run.intervals, run.startEpochMs, `batchline bench ${stepPlan.method} ${stepPlan.url} seed ${stepPlan.seed}`);
      return { result: run.result, hdr };
    } finally {
      display?.end();
    }
  };

  if (sweepRates !== undefined && slo !== undefined) {
    const results = await runSweep(
      plan,
      sweepRates,
      async (stepPlan) => {
        const { result, hdr } = await runOne(stepPlan);
        if (outputs.hdrLog !== undefined) await writeOutput(stepLogPath(outputs.hdrLog, stepPlan.rateRps), hdr, io);
        return result;
      },
      (result, index) => text.write(`step ${index + 1}/${sweepRates.length}: ${result.targetRateRps} req/s target, ${result.throughputRps.toFixed(1)} answered, p99 ${result.latency.p99.toFixed(2)} ms\n`),
    );
    text.write(`\n${formatSweep(results, slo)}`);
    if (outputs.json !== undefined) {
      const best = bestRate(results, slo);
      await writeOutput(outputs.json, `${JSON.stringify({ schema: 'batchline.bench-sweep/v1', slo: slo.text, best_rate_rps: best ?? null, steps: results.map(toBenchJson) }, null, 2)}\n`, io);
    }
    return;
  }

  const { result, hdr } = await runOne(plan);
  text.write(formatReport(result));
  if (outputs.json !== undefined) await writeOutput(outputs.json, `${JSON.stringify(toBenchJson(result), null, 2)}\n`, io);
  if (outputs.hdrLog !== undefined) await writeOutput(outputs.hdrLog, hdr, io);
}

interface ProgressDisplay {
  draw: (progress: BenchProgress) => void;
  end: () => void;
}

function lineDisplay(line: ProgressLine): ProgressDisplay {
  return { draw: (p) => line.draw(p), end: () => line.end() };
}

/**
 * The live Ink view of a run; the plain summary is printed after its last frame. `q` or
 * Ctrl-C interrupts bench as Ctrl-C does without a dashboard (no summary).
 */
async function startDashboardDisplay(plan: BenchPlan, stdout: NodeJS.WriteStream): Promise<ProgressDisplay> {
  const { startBenchDashboard, benchViewFromProgress } = await import('../ui/bench-dashboard.js');
  const dashboard = startBenchDashboard({
    stdout,
    onStop: () => {
      dashboard.stop();
      process.kill(process.pid, 'SIGINT');
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

/** With --sweep, one HdrHistogram log per step: `run.hlog` becomes `run-500rps.hlog`. */
export function stepLogPath(path: string, rateRps: number): string {
  const dot = path.lastIndexOf('.');
  const slash = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
  const stem = dot > slash + 1 ? path.slice(0, dot) : path;
  const ext = dot > slash + 1 ? path.slice(dot) : '';
  return `${stem}-${rateRps}rps${ext}`;
}

/** Reads --body (inline or @file), or finds one that fits a batchline server's model. */
async function withBody(v: ValidatedBench, io: BenchIo): Promise<BenchPlan> {
  const plan = v.plan;
  let bodyText: string | Buffer | undefined;
  if (v.bodySource.kind === 'inline') bodyText = v.bodySource.text;
  else if (v.bodySource.kind === 'file') {
    try {
      bodyText = await readFile(v.bodySource.path);
    } catch (error) {
      throw new BatchlineError('INVALID_OPTION', `--body: cannot read @${v.bodySource.path}: ${(error as Error).message}`);
    }
  } else if (!v.methodGiven || ['POST', 'PUT', 'PATCH'].includes(plan.method)) {
    const target = await probeTarget(plan.url);
    if (target.kind === 'toy-model') {
      bodyText = TOY_MODEL_BODY;
      io.stderr.write(`batchline bench: the target is a batchline server with toy-logistic-v1; sending ${TOY_MODEL_BODY}\n`);
    } else if (v.methodGiven) {
      const why = target.kind === 'batchline-other-model' ? `the batchline server's model ${target.version} needs an input only you can give` : 'no body was given';
      throw new BatchlineError('INVALID_OPTION', `--body: missing for ${plan.method}: ${why}; pass --body '<json>' or --body @file`);
    }
  }
  if (bodyText === undefined) return plan;
  const body = typeof bodyText === 'string' ? Buffer.from(bodyText) : bodyText;
  const headers = v.contentTypeGiven ? plan.headers : { ...plan.headers, 'content-type': 'application/json' };
  return { ...plan, body, headers, method: v.methodGiven ? plan.method : 'POST' };
}

async function writeOutput(target: string, content: string, io: BenchIo): Promise<void> {
  if (target === '-') {
    io.stdout.write(content);
    return;
  }
  await writeFile(target, content);
}
