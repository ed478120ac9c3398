import { Worker } from 'node:worker_threads';

/**
 * Wakes the open loop at its next send time without spinning. Node's timers have millisecond
 * granularity (a send ~0.5 ms late on average), and polling with setImmediate costs a core: on
 * a host shared with the server under test, that core is the server's (0.5–1 ms of CPU a
 * request, see docs/bench.md). So a helper thread sleeps in `Atomics.wait`, whose timeout is a
 * futex's (sub-millisecond), and posts a message when the time comes: the message wakes the
 * event loop at once. One wake costs a few µs on each thread.
 *
 * The two threads share two slots: the target time (ms of the monotonic clock both read with
 * process.hrtime) and a generation counter the main thread bumps and notifies at every change,
 * so a new target or the stop interrupts the helper's sleep and no wake is lost.
 */
export class Pacer {
  private readonly worker: Worker;
  private readonly targetMs: Float64Array;
  private readonly generation: Int32Array;
  private online = false;
  private closed = false;

  /** `onWake` runs on this thread's event loop when a target set by `wakeIn` is reached. */
  private constructor(onWake: () => void) {
    const shared = new SharedArrayBuffer(16);
    this.targetMs = new Float64Array(shared, 0, 1);
    this.generation = new Int32Array(shared, 8, 1);
    this.targetMs[0] = Number.NaN;
    this.worker = new Worker(`(${pacerThread.toString()})(require('node:worker_threads'))`, {
      eval: true,
      workerData: shared,
    });
    this.worker.on('online', () => void (this.online = !this.closed));
    this.worker.on('message', onWake);
    // A pacer that fails leaves the loop on its fallback (setImmediate); nothing is lost.
    this.worker.on('error', () => void (this.online = false));
  }

  /** A pacer, or undefined when no helper thread can be made here: the caller polls on its own. */
  static start(onWake: () => void): Pacer | undefined {
    try {
      return new Pacer(onWake);
    } catch {
      return undefined;
    }
  }

  /** True once the helper runs: until then (and if it failed) the caller polls on its own. */
  get ready(): boolean {
    return this.online;
  }

  /** Wakes the loop `delayMs` from now (at once when ≤ 0); replaces any earlier target. */
  wakeIn(delayMs: number): void {
    this.targetMs[0] = monotonicMs() + delayMs;
    this.bump();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.online = false;
    this.targetMs[0] = Number.NEGATIVE_INFINITY;
    this.bump();
    this.worker.removeAllListeners('message');
    void this.worker.terminate();
  }

  private bump(): void {
    Atomics.add(this.generation, 0, 1);
    Atomics.notify(this.generation, 0);
  }
}

/** Monotonic time in ms, the clock the helper thread reads too (uv_hrtime, process-wide). */
function monotonicMs(): number {
  const [s, ns] = process.hrtime();
  return s * 1e3 + ns / 1e6;
}

/**
 * The helper thread's whole program. It runs from its source text (an eval'd worker), so it
 * imports nothing and works alike from the TypeScript sources (tests) and from dist.
 * -Infinity in the target slot stops it; NaN means no target.
 */
function pacerThread(threads: typeof import('node:worker_threads')): void {
  const shared = threads.workerData as SharedArrayBuffer;
  const target = new Float64Array(shared, 0, 1);
  const generation = new Int32Array(shared, 8, 1);
  const port = threads.parentPort;
  const now = (): number => {
    const [s, ns] = process.hrtime();
    return s * 1e3 + ns / 1e6;
  };
  for (;;) {
    const seen = Atomics.load(generation, 0);
    const atMs = target[0] as number;
    if (atMs === Number.NEGATIVE_INFINITY || port === null) return;
    if (Number.isNaN(atMs)) {
      Atomics.wait(generation, 0, seen);
      continue;
    }
    const leftMs = atMs - now();
    // A futex sleep; a change of target (or the stop) bumps the generation and ends it early.
    if (leftMs > 0) {
      Atomics.wait(generation, 0, seen, leftMs);
      continue;
    }
    port.postMessage(0);
    // Fired: wait for the next target, which the woken loop sets.
    Atomics.wait(generation, 0, seen);
  }
}
