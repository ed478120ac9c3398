import { writeFile } from 'node:fs/promises';
import type { CoreEvent } from '../core/event-log.js';
import { BatchlineError } from '../errors.js';
import type { SimulateOptions } from '../options/simulate.js';
import { loadSimulationInputs, prepareRun, type SimulationInputs } from './prepare.js';
import { buildReport, type SimulationReport } from './report.js';
import { runSimulation } from './run-simulation.js';
import { writeTrace } from './trace-writer.js';
import { expectedRequests } from './workload.js';

/** The most requests a run lists event by event (--events, --step): about five events each. */
const MAX_EVENT_REQUESTS = 100_000;
/** The most requests a run traces (--trace), one line each. */
const MAX_TRACE_REQUESTS = 10_000_000;

/**
 * One simulation from options, for the CLI and for other commands' views (the `--step`
 * timeline takes `events` from here). With `collect.trace` the trace is written to that path.
 */
export async function simulateOnce(
  options: SimulateOptions,
  given: ReadonlySet<string>,
  collect: { events?: boolean; trace?: string | undefined; eventsFlag?: string; maxEvents?: number } = {},
): Promise<{ report: SimulationReport; events: CoreEvent[] | undefined; inputs: SimulationInputs }> {
  const inputs = await loadSimulationInputs(options, given);
  if (collect.events === true) {
    // Every event is held until the run ends: 3 million requests took 2.9 GB, more ran out of heap.
    const expected = expectedRequests(options, given.has('requests'), inputs.arrivalTimes);
    // A limit of events (--step's) is one of requests too, each being one event at least: checked
    // here, before the run, 90,000 requests were taken, run, and refused at its end.
    if (collect.maxEvents !== undefined && expected > collect.maxEvents)
      throw new BatchlineError(
        'INVALID_OPTION',
        `${collect.eventsFlag ?? '--events'}: about ${Number.isFinite(expected) ? Math.round(expected) : 'unbounded'} requests make at least as many events, too many to step through (at most ${collect.maxEvents} events); use --requests 20 or --duration 200ms`,
      );
    if (expected > MAX_EVENT_REQUESTS)
      throw new BatchlineError(
        'INVALID_OPTION',
        `${collect.eventsFlag ?? '--events'}: about ${Number.isFinite(expected) ? Math.round(expected) : 'unbounded'} requests are too many to list event by event (at most ${MAX_EVENT_REQUESTS}); use --requests 20 or --duration 200ms`,
      );
  }
  if (collect.trace !== undefined) {
    // Every row is held until the run ends (about 140 bytes resident, as many on disk): 30 million
    // requests took 4.2 GB resident, the 100 million --requests allows ran out of heap.
    const expected = expectedRequests(options, given.has('requests'), inputs.arrivalTimes);
    if (expected > MAX_TRACE_REQUESTS)
      throw new BatchlineError(
        'INVALID_OPTION',
        `--trace: about ${Number.isFinite(expected) ? Math.round(expected) : 'unbounded'} requests are too many to trace (at most ${MAX_TRACE_REQUESTS}, about 1.4 GB of lines); set --requests or a shorter --duration`,
      );
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
