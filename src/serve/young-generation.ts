import { subscribe } from 'node:diagnostics_channel';
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { setEnvironmentData, type Worker } from 'node:worker_threads';
import { HEAP_CONFIGURED_KEY } from '../model/heap-configured.js';

/** V8 flags that size the young generation: an operator who passes one keeps the choice. */
const SIZING_FLAGS = ['--max-semi-space-size', '--min-semi-space-size', '--semi-space-growth-factor'];

/** The new space's size (both semispaces) it may grow to: a 4 MB semispace. */
export const NEW_SPACE_CAP_BYTES = 8 * 1024 * 1024;

/**
 * Lets V8's young generation grow to a 4 MB semispace (`NEW_SPACE_CAP_BYTES`) and no further,
 * instead of to 16 MB. `serve` calls it once when its models run off the main thread, before its
 * modules are imported (the young generation is then at about 2 MB); the flag it sets is the
 * process's, so the model threads are held too.
 *
 * Why: with a semispace of 8 or 16 MB, V8 starts a full (mark-compact) collection whenever the
 * old generation's room under its limit is smaller than the young generation (a scavenge could
 * promote all of it), and under load that was all the time: 8.2–9.5 mark-compacts a thousand
 * requests (14.6 at 8 MB) on the classifier's binary path, with a 15 MB heap that did not grow.
 * Their concurrent marking ran on V8's helper threads beside the model thread on a 2-core machine,
 * their pauses on the main thread. At 4 MB, none in those runs (bursts of another cause remained in
 * some runs: the request bodies outside the heap, old-generation-room.ts). Not for inline models: the embedded toy model's
 * small requests at 24k/s scavenge so often that serve kept 5 % less of a bare Fastify route's
 * rate at 4 MB (0.717 against 0.756, 0.662 against 0.694) and a quarter less at 2 MB, while its
 * model runs on the main thread and competes with no model thread for a core.
 *
 * V8 grows the young generation by `--semi-space-growth-factor` (2) when enough survives a
 * scavenge; the factor is read each time, so setting it to 1 at run time holds the size
 * (`--single-threaded-gc`, by contrast, aborts V8 when set after start-up). V8 puts the factor back
 * to its floor of 2 when it configures a new isolate's heap, so it is set again each time a worker
 * thread starts (see `holdThroughWorkerStarts`). Returns whether it acts: not when the operator
 * sized the young generation with a flag of their own (on the command line or in NODE_OPTIONS).
 */
export function keepYoungGenerationSmall(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): boolean {
  if (youngGenerationSizedBy(execArgv, nodeOptions)) return false;
  let held = false;
  const holdAtCap = (): void => {
    if (!held && newSpaceBytes() < NEW_SPACE_CAP_BYTES) return;
    held = true;
    setFlagsFromString('--semi-space-growth-factor=1');
  };
  holdAtCap();
  // The young generation grows only after a scavenge: look after each one until it is held.
  const scavenges = new PerformanceObserver(() => {
    holdAtCap();
    if (held) scavenges.disconnect();
  });
  if (!held) scavenges.observe({ entryTypes: ['gc'] });
  holdThroughWorkerStarts(holdAtCap);
  return true;
}

/** How long this thread waits for a new worker thread's word that its heap is configured (ms). */
const HEAP_CONFIGURED_WAIT_MS = 2000;

/** Whether a worker thread's start blocks this thread until the thread's heap is configured. */
let waitOnWorkerStarts = true;

/**
 * serve has loaded its start-up models and answers traffic: a thread started from now on (a model
 * loaded or swapped through the admin API, an instance restarted) must not stall the requests of
 * the others for its start-up (20–80 ms), so it is held when it comes online, as before. A
 * collection in that window can still grow the young generation past its cap: rarely, and to V8's
 * own default size, where the wait at start-up closed a 1-in-30 race.
 */
export function stopWaitingOnWorkerStarts(): void {
  waitOnWorkerStarts = false;
}

/**
 * Calls `holdAtCap` as each worker thread started from this thread has its heap configured (which
 * puts the growth factor back to 2). The new thread configures its heap at a moment this thread
 * cannot see; setting the factor again when the worker came online, as before, left a window of
 * its start-up (20 ms, 180 ms on a loaded host) in which a collection here grew the young
 * generation to 16 MB, for good: 1 serve start in 30. So this thread blocks, allocating nothing and
 * so collecting nothing, until the thread's first module says its heap is configured
 * (model/heap-configured.ts, through a shared cell handed over as environment data); a thread that
 * never says so (a script that fails to load) is waited for `HEAP_CONFIGURED_WAIT_MS`, then held
 * when it comes online. The worker_threads channel publishes inside `new Worker`, after the thread
 * was started, so the wait covers its start-up. Only until serve answers traffic
 * (`stopWaitingOnWorkerStarts`).
 */
function holdThroughWorkerStarts(holdAtCap: () => void): void {
  let cell = nextHeapConfiguredCell();
  subscribe('worker_threads', (message) => {
    const worker = (message as { worker: Worker }).worker;
    if (!waitOnWorkerStarts) return void worker.once('online', holdAtCap);
    const heard = Atomics.wait(cell, 0, 0, HEAP_CONFIGURED_WAIT_MS) !== 'timed-out';
    holdAtCap();
    cell = nextHeapConfiguredCell();
    if (!heard) worker.once('online', holdAtCap);
  });
}

/** A fresh shared cell for the next worker thread this thread starts (environment data is copied into each). */
function nextHeapConfiguredCell(): Int32Array {
  const cell = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  setEnvironmentData(HEAP_CONFIGURED_KEY, cell.buffer);
  return cell;
}

function newSpaceBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

/** Whether node's own arguments or NODE_OPTIONS size the young generation. */
export function youngGenerationSizedBy(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return givenNodeFlag(execArgv, nodeOptions, SIZING_FLAGS);
}

/** Whether node's own arguments or NODE_OPTIONS hold one of these V8 flags. */
export function givenNodeFlag(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
  flags: readonly string[],
): boolean {
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)];
  return given.some((arg) => flags.some((flag) => sameFlag(arg, flag)));
}

/** `--max-semi-space-size=4`, `--max_semi_space_size 4`: V8 takes `_` and `-` alike. */
function sameFlag(arg: string, flag: string): boolean {
  const name = arg.split('=')[0]!.replaceAll('_', '-');
  return name === flag;
}
