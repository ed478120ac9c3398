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
  /**
   * Time a batch of n spends in the hand-over to its instance and back beyond its isolated round
   * trip, using no CPU of its own (waiting for the other side's turn), as a real serve showed it
   * under load; 0 when nothing measured it.
   */
  handoverWaitMs: (batchSize: number) => number;
  /**
   * The main thread's garbage-collection pauses that come with a request (ms of its CPU, drawn per
   * request; 0: none): while one lasts the main thread reads, hands over and answers nothing.
   * Their mean is not in `admitMs`. Absent: none modelled.
   */
  mainPauseMs?: () => number;
  /** Their mean per request (the report's list of costs gives it). */
  meanMainPauseMs?: number;
  /** CPU per request off the request's way, on other threads: serve's GC and libuv helpers (ms). */
  helpersMs: number;
  /**
   * The helpers' CPU that comes with one request, drawn (mean `helpersMs`): V8 marks the heap
   * concurrently through a major collection, so their work comes in bursts that hold a core for
   * milliseconds. Absent: `helpersMs` with every request.
   */
  helperBurstMs?: () => number;
  /** CPU per request of a load generator on the same host, which shares the cores (ms). */
  generatorMs: number;
  /** Cores shared by the main thread and the instances (Infinity: one each). */
  cores: number;
  /**
   * Inline, with serve's --inline-mailbox: the runs handed over before the main thread comes to
   * them run back to back, and their answers are encoded and written after the last of them
   * (serve/answers-after-runs.ts). Without it an inline batch's answers follow its own run.
   */
  answersAfterRuns?: boolean;
}

/** Thread 0 is the main thread; instance i runs on thread i + 1; helpers and the generator have their own. */
const MAIN_THREAD = 0;
const HELPER_THREAD = -1;
const GENERATOR_THREAD = -2;

/**
 * Runs batches as serve does over the serving path: the batch's delay (no CPU), then its run on
 * its instance's thread, then its answers encoded on the main thread after the work already
 * waiting there (the worker's reply is handled in a later turn of the event loop than the reads
 * already due); only then does the instance take its next batch, as in serve, where the batch
 * completes in that reply.
 */
export class ServingPath implements Executor<number, number> {
  private readonly pool: CpuPool;
  readonly main: FifoThread;
  private readonly helpers: FifoThread;
  private readonly generator: FifoThread;
  /**
   * Each instance's thread takes its batches in the order they were handed over: a batch in its
   * mailbox (serve's --pipeline) was posted while the one ahead ran, and starts when that run ends.
   */
  private readonly instances: FifoThread[] = [];
  /** Per instance, when its last reply reaches the main thread's queue (ms). */
  private readonly lastReplyAtMs: number[] = [];
  /**
   * With answersAfterRuns: the inline runs handed over since the main thread last came to its
   * check phase, which run in the next one (undefined: none yet; that phase is not queued).
   */
  private nextPhase: { n: number; answer: () => void }[] | undefined;
  /** With answersAfterRuns: answers ended by a run of the phase in progress, written after its last run. */
  private held: ((atMs: number) => void)[] | undefined;

  constructor(
    private readonly clock: VirtualClock,
    private readonly setup: ServingPathSetup,
    /** Simulated failures (--fail-items, --fail-batches, --outage), decided when a batch starts. */
    private readonly faults?: FaultInjector,
  ) {
    this.pool = new CpuPool(clock, setup.cores);
    this.main = new FifoThread(this.pool, MAIN_THREAD);
    this.helpers = new FifoThread(this.pool, HELPER_THREAD);
    this.generator = new FifoThread(this.pool, GENERATOR_THREAD);
    const readMs = setup.generatorMs / 2;
    const read: ((record: (atMs: number) => void) => void) | undefined =
      readMs > 0 ? (record) => this.generator.enqueue(readMs, () => record(clock.now())) : undefined;
    this.readAnswer = read;
    this.deliver =
      setup.answersAfterRuns === true && setup.execution === 'inline'
        ? (record) => {
            if (this.held !== undefined) this.held.push(record);
            else if (read !== undefined) read(record);
            else record(clock.now());
          }
        : read;
  }

  /** The generator reading an answer, when there is one on the host. */
  private readonly readAnswer: ((record: (atMs: number) => void) => void) | undefined;

  /**
   * A request arrives over HTTP: the main thread reads and checks it, then `admit` submits it.
   * Its sender's CPU and serve's helpers' (collecting its garbage) compete for the cores.
   */
  arrive(admit: () => void): void {
    const helpersMs = this.setup.helperBurstMs?.() ?? this.setup.helpersMs;
    if (helpersMs > 0) this.helpers.enqueue(helpersMs, ignore);
    // The generator's thread writes the request (half its work) before serve can read it: when
    // the cores are taken it waits for its turn, and that wait is in the latency it measures.
    if (this.setup.generatorMs > 0) this.generator.enqueue(this.setup.generatorMs / 2, () => this.read(admit));
    else this.read(admit);
  }

  /**
   * The generator's thread reads an answer (the other half of its work); the latency it reports
   * ends then. Undefined without a generator on the host: the latency ends with serve's answer.
   */
  readonly deliver: ((record: (atMs: number) => void) => void) | undefined;

  private read(admit: () => void): void {
    // A collection starts while the request is read (its body filled the heap): it is read after.
    this.main.enqueue(this.setup.admitMs + (this.setup.mainPauseMs?.() ?? 0), admit);
  }

  start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
    const n = batch.inputs.length;
    // A failing run takes its whole time: the model ran and then failed.
    const error = this.faults?.failure(batch.inputs, this.clock.now());
    const answer = (): void => done(error ?? batch.inputs);
    const run = (): void => {
      if (this.setup.execution === 'inline' && this.setup.answersAfterRuns === true) {
        this.runInCheckPhase(n, answer);
        return;
      }
      const workMs = this.setup.batchWorkMs(n);
      if (this.setup.execution === 'inline') {
        this.main.enqueue(workMs + n * this.setup.answerMs, answer);
        return;
      }
      const back = (): void => this.main.enqueue(n * this.setup.answerMs, answer);
      const waitMs = this.setup.handoverWaitMs(n);
      this.instanceThread(batch.instance).enqueue(workMs, () => this.replyInOrder(batch.instance, waitMs, back));
    };
    const delayMs = this.setup.batchDelayMs(n);
    const begin =
      delayMs > 0 ? () => void this.clock.schedule(this.clock.now() + delayMs, run, EventOrder.completion) : run;
    // A window closes in a timer of serve's event loop, which runs once the main thread has done
    // the work already due (the reads, the replies), as a worker's reply does. A batch that fills
    // up is dispatched while a request is read, and the next one while a reply is handled: both
    // on the main thread already.
    if (batch.trigger === 'window' && this.setup.execution !== 'inline') this.main.enqueue(0, begin);
    else begin();
  }

  /**
   * An inline onnxruntime run waits for an immediate of its own (serve's --inline-mailbox): the
   * runs handed over before the main thread comes to its check phase run there back to back, the
   * reads queued meanwhile after them. A run handed over while one of them completes (its slot
   * freed, the next batch taken) falls in the next check phase.
   */
  private runInCheckPhase(n: number, answer: () => void): void {
    if (this.nextPhase === undefined) {
      this.nextPhase = [];
      this.main.enqueue(0, this.checkPhase);
    }
    this.nextPhase.push({ n, answer });
  }

  /**
   * The check phase: each run, its batch ended as it returns (the batcher frees its slot, starts
   * the next batch in the mailbox); the answers the runs ended are encoded and written after the
   * last run (serve/answers-after-runs.ts), and reach their clients only then.
   */
  private readonly checkPhase = (): void => {
    const runs = this.nextPhase as { n: number; answer: () => void }[];
    this.nextPhase = undefined;
    const held: ((atMs: number) => void)[] = [];
    this.held = held;
    let items = 0;
    for (const { n, answer } of runs) {
      items += n;
      this.main.enqueueNext(this.setup.batchWorkMs(n), answer);
    }
    this.main.enqueueNext(items * this.setup.answerMs, () => {
      this.held = undefined;
      const nowMs = this.clock.now();
      for (const record of held) {
        if (this.readAnswer !== undefined) this.readAnswer(record);
        else record(nowMs);
      }
    });
  };

  /**
   * A worker posts its replies on one channel (a process, on one pipe), so they reach the main
   * thread in the order it ran its batches: a reply whose drawn wait is shorter than the one
   * still crossing ahead of it comes right after that one, not before (it would otherwise end a
   * mailbox batch before the batch ahead of it, and count the instance busy twice over).
   */
  private replyInOrder(instance: number, waitMs: number, back: () => void): void {
    const nowMs = this.clock.now();
    const aheadAtMs = this.lastReplyAtMs[instance] ?? Number.NEGATIVE_INFINITY;
    const atMs = Math.max(nowMs + waitMs, aheadAtMs);
    this.lastReplyAtMs[instance] = atMs;
    // Nothing still crossing ahead of it, and no wait of its own: it is back now.
    if (atMs === nowMs && aheadAtMs < nowMs) back();
    else this.clock.schedule(atMs, back, EventOrder.completion);
  }

  private instanceThread(index: number): FifoThread {
    let thread = this.instances[index];
    if (thread === undefined) {
      thread = new FifoThread(this.pool, index + 1);
      this.instances[index] = thread;
    }
    return thread;
  }
}

const ignore = (): void => {};
