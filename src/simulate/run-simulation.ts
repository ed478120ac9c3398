import type { ArrivalProcess } from '../core/arrivals.js';
import type { Batcher } from '../core/batcher.js';
import { mailboxDepthOf, type BatcherCounts } from '../core/batcher-options.js';
import { EventOrder } from '../core/clock.js';
import { createBatcher, type BatchingConfig } from '../core/create-batcher.js';
import { EventLog, type CoreEvent } from '../core/event-log.js';
import type { Batch, BatcherObserver, Executor } from '../core/types.js';
import { VirtualClock } from '../core/virtual-clock.js';
import { FaultInjector, NO_FAULTS, type FaultPlan } from './faults.js';
import type { ServiceTime } from './latency-model.js';
import { PriorityRecorder } from './priority-recorder.js';
import { SimulationRecorder } from './recorder.js';
import { ServingPath, type ServingPathSetup } from './serving-path-model.js';
import { lateClock } from './timer-lateness.js';
import { TraceRecorder, type TraceRow } from './trace-recorder.js';

/** One simulation: a batching configuration, a workload and a service time. */
export interface SimulationSetup {
  batching: Readonly<BatchingConfig>;
  /** When requests arrive, ms from the start; the run ends when it ends or a limit is hit. */
  arrivals: ArrivalProcess;
  /** Stop after this many arrivals (Infinity for no limit). */
  maxRequests: number;
  /** Arrivals at or after this time are not offered (Infinity for no limit). */
  arrivalsEndMs: number;
  serviceTime: ServiceTime;
  /** Injected faults (`--fail-items`, `--fail-batches`, `--outage`); none by default. */
  faults?: Readonly<FaultPlan>;
  /** Keep every core event (for `--events` and the step-through timeline); small runs only. */
  collectEvents?: boolean;
  /** Keep one row per request (for `--trace`). */
  collectTrace?: boolean;
  /**
   * The rest of serve's path (the main thread reading requests and encoding answers, instances
   * sharing cores), when a profile measured it; without it, a batch's service time is all there is.
   */
  servingPath?: ServingPathSetup;
  /**
   * The priority level of arrival `index` (called once per arrival, in order); without it every
   * request takes the default level.
   */
  priorityOf?: (index: number) => number;
  /**
   * How late the batcher's timer (window closes, deadlines) fires on serve's real clock, drawn
   * per timer; on time without it.
   */
  batcherTimerLateMs?: () => number;
  /** More observers, made once the batcher exists (the HTML report's time series, a capped event log). */
  observers?: (batcher: Batcher<number, number>) => BatcherObserver<number, number>[];
}

export interface SimulationResult {
  counts: BatcherCounts;
  recorder: SimulationRecorder<number, number>;
  /** Time of the last event: the run's length in simulated ms. */
  endMs: number;
  events: CoreEvent[] | undefined;
  trace: TraceRow[] | undefined;
  /** Per priority level, when the batcher has more than one. */
  priorities: PriorityRecorder<number, number> | undefined;
}

/**
 * The virtual model: a batch of `n` occupies its instance for `serviceTime(n)` virtual ms, then
 * answers every request with its own input. An instance runs what it is given in order, as
 * serve's instance pool does: a batch handed to a busy instance's mailbox starts when the batch
 * ahead of it ends, and ends one service time after that. Completions are ordered before
 * anything else at the same instant, as "Batching semantics" in architecture.md requires.
 */
class SimulatedExecutor implements Executor<number, number> {
  /** When each instance has run everything it was given. */
  private readonly freeAtMs: number[];

  constructor(
    private readonly clock: VirtualClock,
    private readonly serviceTime: ServiceTime,
    instances: number,
    private readonly faults?: FaultInjector,
  ) {
    this.freeAtMs = new Array<number>(instances).fill(0);
  }

  start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
    const startMs = Math.max(this.clock.now(), this.freeAtMs[batch.instance] as number);
    const finishAtMs = startMs + this.serviceTime(batch.inputs.length);
    this.freeAtMs[batch.instance] = finishAtMs;
    // A failing run takes its whole time: the model ran and then failed.
    const error = this.faults?.failure(batch.inputs, startMs);
    this.clock.scheduleCall(finishAtMs, done, error ?? batch.inputs, EventOrder.completion);
  }
}

const ignoreOutcome = (): void => {};

/**
 * Request `id` reaches the batcher once serve's main thread has read it. A function of its own:
 * a closure made in the arrival loop's body made V8 allocate that body's context (and box its
 * numbers) for every arrival, over the serving path or not.
 */
function arriveOverPath(
  path: ServingPath,
  batcher: Batcher<number, number>,
  id: number,
  priority: number | undefined,
): void {
  path.arrive(() => batcher.submit(String(id), id, ignoreOutcome, undefined, priority));
}

/** Arrival `index`'s time, or Infinity when the arrivals have ended or reached a limit. */
function nextArrival(arrivals: ArrivalProcess, index: number, maxRequests: number, endMs: number): number {
  const atMs = index < maxRequests ? arrivals.next() : undefined;
  return atMs !== undefined && atMs < endMs ? atMs : Number.POSITIVE_INFINITY;
}

/**
 * Runs the shared core (built by `createBatcher`, exactly as `serve` builds it) on a virtual
 * clock until every request has its outcome. Synchronous and Promise-free.
 *
 * Arrivals are not put on the event heap: the loop holds the one next arrival and submits it
 * once every event due before it, or at the same instant, has run. That is the order the heap
 * would give an arrival (`EventOrder.arrival` runs last at an instant) without a heap push per
 * request; the parity test checks the two orders agree.
 */
export function runSimulation(setup: SimulationSetup): SimulationResult {
  const { batching } = setup;
  const clock = new VirtualClock();
  const faults = new FaultInjector(setup.faults ?? NO_FAULTS);
  const active = faults.active ? faults : undefined;
  const path = setup.servingPath === undefined ? undefined : new ServingPath(clock, setup.servingPath, active);
  const batcher = createBatcher<number, number>(
    batching,
    setup.batcherTimerLateMs === undefined ? clock : lateClock(clock, setup.batcherTimerLateMs),
    path ?? new SimulatedExecutor(clock, setup.serviceTime, batching.instances, active),
  );
  // Over the serving path a request's latency runs from its arrival over HTTP, before the main
  // thread read it and the batcher saw it.
  const arrivedAtMs: number[] = [];
  const origin = path === undefined ? undefined : (id: string): number => arrivedAtMs[Number(id)] as number;
  const recorder = new SimulationRecorder<number, number>(
    batching.maxBatchSize,
    batching.instances,
    batching.targetLatencyMs,
    origin,
    path?.deliver,
    mailboxDepthOf(batching.mailbox) > 0,
  );
  batcher.addObserver(recorder);
  const log = setup.collectEvents === true ? new EventLog<number, number>(batcher) : undefined;
  if (log !== undefined) batcher.addObserver(log);
  const tracer = setup.collectTrace === true ? new TraceRecorder<number, number>(batcher.levels.count > 1) : undefined;
  if (tracer !== undefined) batcher.addObserver(tracer);
  for (const observer of setup.observers?.(batcher) ?? []) batcher.addObserver(observer);

  const levels = batcher.levels.count > 1 ? new PriorityRecorder<number, number>(batcher.levels.count) : undefined;
  if (levels !== undefined) batcher.addObserver(levels);
  // Requests are numbered only for what reads their ids (events, a trace, the serving path's
  // origins, observers given from outside). A fresh string per request went through V8's
  // number-to-string cache, which kept every one alive through a young-generation collection:
  // a run spent a sixth of its time copying and promoting them.
  const numbered = path !== undefined || log !== undefined || tracer !== undefined || setup.observers !== undefined;
  const { arrivals, maxRequests, arrivalsEndMs, priorityOf } = setup;
  let index = 0;
  // The next arrival's time, Infinity once there is none: a number only, which V8 keeps unboxed.
  let arrivalAtMs = nextArrival(arrivals, index, maxRequests, arrivalsEndMs);
  for (;;) {
    const eventAtMs = clock.nextEventAtMs();
    if (eventAtMs !== undefined && eventAtMs <= arrivalAtMs) {
      clock.step();
      continue;
    }
    if (arrivalAtMs === Number.POSITIVE_INFINITY) break;
    clock.advanceTo(arrivalAtMs);
    const priority = priorityOf?.(index);
    if (path === undefined) batcher.submit(numbered ? String(index) : '', index, ignoreOutcome, undefined, priority);
    else {
      arrivedAtMs.push(arrivalAtMs);
      arriveOverPath(path, batcher, index, priority);
    }
    index++;
    arrivalAtMs = nextArrival(arrivals, index, maxRequests, arrivalsEndMs);
  }
  return {
    counts: batcher.counts,
    recorder,
    endMs: clock.now(),
    events: log?.events,
    trace: tracer?.rows,
    priorities: levels,
  };
}
