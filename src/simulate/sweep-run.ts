import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { BatchlineError } from '../errors.js';
import type { SimulateOptions } from '../options/simulate.js';
import { prepareRun, type SimulationInputs } from './prepare.js';
import { buildReport, type SimulationReport } from './report.js';
import { runSimulation } from './run-simulation.js';
import { applyPoint, gridPoints, type SweepAxis } from './sweep-grid.js';
import { expectedRequests } from './workload.js';

/** Runs one configuration to its report. */
export function runOneConfiguration(options: SimulateOptions, inputs: SimulationInputs): SimulationReport {
  const { setup, context } = prepareRun(options, inputs);
  return buildReport(runSimulation(setup), context);
}

/** One grid point and its report. */
export interface SweepRow {
  point: number[];
  report: SimulationReport;
}

/**
 * Runs every grid point with the same seed (so each sees the same arrivals), on up to
 * `workers` threads. Rows come back in grid order whatever the threads' timing, so the output
 * is byte-identical to a sequential run. Without a built worker script (tests run from the
 * TypeScript sources) it runs in this thread.
 */
export async function runSweep(
  base: SimulateOptions,
  axes: readonly SweepAxis[],
  inputs: SimulationInputs,
  workers: number,
): Promise<SweepRow[]> {
  checkAxesAgainstInputs(base, axes, new Set(inputs.given));
  const points = gridPoints(axes);
  const optionsList = points.map((point) => applyPoint(base, axes, point));
  // Fail on a bad combination (say a burst factor a swept rate cannot take) before any thread starts.
  for (const options of optionsList) prepareRun(options, inputs);
  const workerUrl = new URL('./sweep-worker.js', import.meta.url);
  // Threads pay off only when there is enough work: starting one costs about as much as
  // simulating tens of thousands of requests.
  const requestsGiven = inputs.given.includes('requests');
  const totalRequests = optionsList.reduce(
    (sum, options) => sum + expectedRequests(options, requestsGiven, inputs.arrivalTimes),
    0,
  );
  const threads = totalRequests < 200_000 ? 1 : Math.min(workers, optionsList.length);
  const reports =
    threads > 1 && existsSync(fileURLToPath(workerUrl))
      ? await runInWorkers(workerUrl, optionsList, inputs, threads)
      : optionsList.map((options) => runOneConfiguration(options, inputs));
  return points.map((point, i) => ({ point, report: reports[i] as SimulationReport }));
}

function runInWorkers(
  url: URL,
  optionsList: SimulateOptions[],
  inputs: SimulationInputs,
  threads: number,
): Promise<SimulationReport[]> {
  return new Promise((resolve, reject) => {
    const reports = new Array<SimulationReport>(optionsList.length);
    let next = 0;
    let finished = 0;
    let failed = false;
    const pool: Worker[] = [];
    const stopAll = (): void => {
      for (const worker of pool) void worker.terminate();
    };
    const feed = (worker: Worker): void => {
      if (next < optionsList.length) {
        const index = next++;
        worker.postMessage({ index, options: optionsList[index] });
      } else {
        worker.postMessage('stop');
      }
    };
    for (let t = 0; t < threads; t++) {
      const worker = new Worker(url, { workerData: { inputs } });
      pool.push(worker);
      worker.on('message', (message: { index: number; report?: SimulationReport; error?: string }) => {
        if (failed) return;
        if (message.error !== undefined) {
          failed = true;
          stopAll();
          reject(new BatchlineError('INTERNAL', `sweep configuration ${message.index + 1}: ${message.error}`));
          return;
        }
        reports[message.index] = message.report as SimulationReport;
        finished++;
        if (finished === optionsList.length) {
          stopAll();
          resolve(reports);
        } else {
          feed(worker);
        }
      });
      worker.on('error', (error) => {
        if (failed) return;
        failed = true;
        stopAll();
        reject(error);
      });
      feed(worker);
    }
  });
}

function checkAxesAgainstInputs(base: SimulateOptions, axes: readonly SweepAxis[], given: ReadonlySet<string>): void {
  // `--rate 5 --sweep rate=100,200` ran 100 and 200 without a word that --rate was dropped.
  for (const axis of axes) {
    if (!given.has(axis.key)) continue;
    throw new BatchlineError(
      'INVALID_OPTION',
      `--sweep: ${axis.flag} is swept (${axis.values.join(',')}) and also given as --${axis.flag} ${String(base[axis.key])}: every row would run a swept value and --${axis.flag} be ignored; give one or the other`,
    );
  }
  const swept = new Set(axes.map((axis) => axis.key));
  if (swept.has('rate') && (given.has('stages') || given.has('arrivals'))) {
    throw new BatchlineError(
      'INVALID_OPTION',
      '--sweep: rate cannot be swept with --stages or --arrivals, which set the arrivals themselves',
    );
  }
  // --model-latency-ms decides the service time over --latency-ms: the axis would be dropped, every row alike.
  if (swept.has('latencyMs') && (given.has('modelLatencyMs') || swept.has('modelLatencyMs'))) {
    throw new BatchlineError(
      'INVALID_OPTION',
      '--sweep: latency-ms cannot be swept with --model-latency-ms, which sets the service time itself; sweep model-latency-ms instead',
    );
  }
  if (swept.has('modelLatencyMs') && (given.has('latencyMs') || given.has('latency'))) {
    throw new BatchlineError(
      'INVALID_OPTION',
      '--sweep: model-latency-ms cannot be swept with --latency-ms or --latency, which set the service time themselves',
    );
  }
  if (swept.has('latencyMs') && (given.has('latency') || given.has('latencyProfile'))) {
    throw new BatchlineError(
      'INVALID_OPTION',
      '--sweep: latency-ms cannot be swept with --latency or --latency-profile, which set the service time themselves',
    );
  }
}
