import { EventLog, type CoreEvent } from '../../core/event-log.js';
import { createLatencyHistogram } from '../../core/latency-histogram.js';
import type { BatcherObserver } from '../../core/types.js';
import type { SimulateOptions } from '../../options/simulate.js';
import type { LatencyTally } from '../../simulate/latency-tally.js';
import { checkSimulateOptions, prepareRun, type SimulationInputs } from '../../simulate/prepare.js';
import { buildReport, type SimulationReport } from '../../simulate/report.js';
import { runSimulation } from '../../simulate/run-simulation.js';
import { percentileDistribution, type PercentilePoint } from './percentile-distribution.js';
import { niceIntervalMs, SimulationSeries } from './simulation-series.js';

/** One simulation with what its report page draws. */
export interface PageSimulation {
  report: SimulationReport;
  series: SimulationSeries;
  latency: PercentilePoint[];
  /** The first events of the run, when asked for (the step-through timeline). */
  events: CoreEvent[] | undefined;
  /** True when the run had more events than were kept. */
  eventsTruncated: boolean;
}

/**
 * Runs one simulation exactly as `batchline simulate` does (the same checks, `prepareRun`,
 * `runSimulation` and `buildReport`), recording its time series and, with `eventLimit`, its
 * first events. No I/O: the CLI runs it for `--html`, the page runs it (bundled) on its form.
 */
export function simulateForPage(
  options: SimulateOptions,
  inputs: SimulationInputs,
  eventLimit?: number,
): PageSimulation {
  checkSimulateOptions(options, new Set(inputs.given));
  const series = new SimulationSeries(niceIntervalMs(arrivalSpanMs(options, inputs)));
  let log: CappedEvents | undefined;
  const { setup, context } = prepareRun(options, inputs);
  setup.observers = (batcher) => {
    series.policy = batcher.batchPolicy;
    const observers: BatcherObserver<number, number>[] = [series];
    if (eventLimit !== undefined) {
      log = cappedEventLog(new EventLog<number, number>(batcher), eventLimit);
      observers.push(log.observer);
    }
    return observers;
  };
  const result = runSimulation(setup);
  series.finish(result.endMs);
  const report = buildReport(result, context);
  return {
    report,
    series,
    latency: percentileDistribution(hdrOf(result.recorder.latency), result.recorder.latencyMaxMs),
    events: log?.events,
    eventsTruncated: log?.truncated() ?? false,
  };
}

/** An HDR histogram with the same counts in the same buckets, for the library's percentile distribution. */
function hdrOf(histogram: LatencyTally): ReturnType<typeof createLatencyHistogram> {
  const hdr = createLatencyHistogram();
  for (const [lowestUs, count] of histogram.buckets()) hdr.recordValueWithCount(lowestUs, count);
  return hdr;
}

/** When the last request arrives: the same arrivals the run will see, replayed on their own. */
function arrivalSpanMs(options: SimulateOptions, inputs: SimulationInputs): number {
  const { setup } = prepareRun(options, inputs);
  let lastMs = 0;
  for (let count = 0; count < setup.maxRequests; count++) {
    const atMs = setup.arrivals.next();
    if (atMs === undefined || !(atMs < setup.arrivalsEndMs)) break;
    lastMs = atMs;
  }
  return lastMs;
}

interface CappedEvents {
  observer: BatcherObserver<number, number>;
  events: CoreEvent[];
  truncated(): boolean;
}

/**
 * The core's own EventLog, stopped after `limit` events: every observer call is passed on
 * while there is room (whatever methods the log has), so the events kept are exactly the
 * first `limit` lines of `simulate --events`.
 */
function cappedEventLog(log: EventLog<number, number>, limit: number): CappedEvents {
  let dropped = false;
  const observer = new Proxy(log, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || property === 'constructor') return value;
      return (...args: unknown[]) => {
        if (target.events.length < limit) return (value as (...a: unknown[]) => unknown).apply(target, args);
        dropped = true;
        return undefined;
      };
    },
  }) as BatcherObserver<number, number>;
  return { observer, events: log.events, truncated: () => dropped };
}
