import { EventOrder } from '../core/clock.js';
import type { Batch, Executor } from '../core/types.js';
import type { VirtualClock } from '../core/virtual-clock.js';
import { CpuPool, FifoThread } from './cpu-pool.js';
import type { FaultInjector } from './faults.js';
import type { ServiceTime } from './latency-model.js';

/**
 * A request's way through serve beyond the batcher, as `profile` measured it: the main thread
 * reads and checks each request before the batcher sees it and encodes each answer after its
 * batch; an instance's thread (or, inline, the main thread) runs the batch; all of them share
 * the host's cores.
 */
export interface ServingPathSetup {
  execution: 'inline' | 'worker';
  /** Main thread, per request, before it reaches the batcher: reading and checking it (ms of CPU). */
  admitMs: number;
  /** Main thread, per item, when its batch is back: encoding its answer (ms of CPU). */
  answerMs: number;
  /** CPU an instance spends on a batch of n: the worker's round trip, or the inline run (ms, jittered). */
  batchWorkMs: ServiceTime;
  /** Time a batch waits before its run, using no CPU: serve's MODEL_LATENCY_MS (--model-latency-ms). */
  batchDelayMs: (batchSize: number) => number;
  /** Cores shared by the main thread and the instances (Infinity: one each). */
  cores: number;
}

/** Thread 0 is the main thread; instance i runs on thread i + 1. */
const MAIN_THREAD = 0;

/**
 * Runs batches as serve does over the serving path: the batch's delay (no CPU), then its run on
 * its instance's thread, then its answers encoded on the main thread, behind whatever that
 * thread has queued (as the worker's reply waits its turn in the event loop); only then does
 * the instance take its next batch, as in serve, where the batch completes in that reply.
 */
export class ServingPath implements Executor<number, number> {
  private readonly pool: CpuPool;
  readonly main: FifoThread;

  constructor(
    private readonly clock: VirtualClock,
    private readonly setup: ServingPathSetup,
    /** Simulated failures (--fail-items, --fail-batches, --outage), decided when a batch starts. */
    private readonly faults?: FaultInjector,
  ) {
    this.pool = new CpuPool(clock, setup.cores);
    this.main = new FifoThread(this.pool, MAIN_THREAD);
  }

  /** A request arrives over HTTP: the main thread reads and checks it, then `admit` submits it. */
  arrive(admit: () => void): void {
    this.main.enqueue(this.setup.admitMs, admit);
  }

  start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
    const n = batch.inputs.length;
    // A failing run takes its whole time: the model ran and then failed.
    const error = this.faults?.failure(batch.inputs, this.clock.now());
    const answer = (): void => done(error ?? batch.inputs);
    const run = (): void => {
      const workMs = this.setup.batchWorkMs(n);
      if (this.setup.execution === 'inline') {
        this.main.enqueue(workMs + n * this.setup.answerMs, answer);
        return;
      }
      this.pool.run(batch.instance + 1, workMs, () => this.main.enqueue(n * this.setup.answerMs, answer));
    };
    const delayMs = this.setup.batchDelayMs(n);
    if (delayMs > 0) this.clock.schedule(this.clock.now() + delayMs, run, EventOrder.completion);
    else run();
  }
}

/**
 * Most a configuration can serve over the serving path, in req/s, with full batches of `maxBatch`:
 * the least of what the main thread, the instances and the cores can each carry.
 */
export function pathCapacityRps(setup: ServingPathSetup, instances: number, maxBatch: number, meanWorkMs: (n: number) => number): number {
  const work = meanWorkMs(maxBatch);
  const mainPerRequest = setup.admitMs + setup.answerMs + (setup.execution === 'inline' ? work / maxBatch : 0);
  const instanceBusyMs = setup.batchDelayMs(maxBatch) + work;
  const cpuPerRequest = mainPerRequest + (setup.execution === 'worker' ? work / maxBatch : 0);
  const limits = [
    mainPerRequest > 0 ? 1000 / mainPerRequest : Number.POSITIVE_INFINITY,
    instanceBusyMs > 0 ? (instances * maxBatch * 1000) / instanceBusyMs : Number.POSITIVE_INFINITY,
    cpuPerRequest > 0 ? (setup.cores * 1000) / cpuPerRequest : Number.POSITIVE_INFINITY,
  ];
  return Math.min(...limits);
}
