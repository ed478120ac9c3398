import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { shareOf, type BenchPlan, type PlanShare } from './plan.js';
import type { RecorderTick } from './recorder.js';
import type { ThreadOutcome } from './run-thread.js';

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'tick'; tick: RecorderTick }
  | { type: 'done'; outcome: ThreadOutcome }
  | { type: 'failed'; message: string };

export interface WorkerData {
  share: PlanShare;
  ticks: boolean;
}

export type WorkerCommand = { type: 'start'; startEpochMs: number } | { type: 'stop' };

/** Time between "every worker is ready" and the shared start, so all begin together. */
const START_MARGIN_MS = 20;

/**
 * Runs a plan on `plan.workers` worker threads, each with its share of connections and sends,
 * and returns their outcomes for merging. `workerUrl` is the built bench-worker.js.
 */
export async function runOnWorkers(
  plan: BenchPlan,
  workerUrl: URL,
  /** Whether workers should send progress ticks (only when someone shows progress). */
  ticks: boolean,
  onTick: (thread: number, tick: RecorderTick) => void,
  /** Aborted to end every worker's run early (see RunHooks.stop). */
  stop?: AbortSignal,
  /** Told the shared start (see RunHooks.onStart). */
  onStart?: (startEpochMs: number) => void,
): Promise<{ outcomes: ThreadOutcome[]; startEpochMs: number }> {
  const count = plan.workers;
  const workers = Array.from(
    { length: count },
    (_, i) => new Worker(workerUrl, { workerData: { share: shareOf(plan, i, count), ticks } satisfies WorkerData }),
  );
  try {
    await Promise.all(workers.map((w) => nextMessage(w, 'ready')));
    const startEpochMs = performance.timeOrigin + performance.now() + START_MARGIN_MS;
    const done = workers.map(
      (worker, thread) =>
        new Promise<ThreadOutcome>((resolve, reject) => {
          worker.on('message', (message: WorkerMessage) => {
            if (message.type === 'tick') onTick(thread, message.tick);
            else if (message.type === 'done') resolve(message.outcome);
            else if (message.type === 'failed') reject(new Error(`bench worker ${thread} failed: ${message.message}`));
          });
          worker.once('error', reject);
        }),
    );
    for (const worker of workers) worker.postMessage({ type: 'start', startEpochMs } satisfies WorkerCommand);
    onStart?.(startEpochMs);
    const stopAll = (): void => {
      for (const worker of workers) worker.postMessage({ type: 'stop' } satisfies WorkerCommand);
    };
    if (stop?.aborted === true) stopAll();
    stop?.addEventListener('abort', stopAll, { once: true });
    try {
      return { outcomes: await Promise.all(done), startEpochMs };
    } finally {
      stop?.removeEventListener('abort', stopAll);
    }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

function nextMessage(worker: Worker, type: WorkerMessage['type']): Promise<void> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: WorkerMessage): void => {
      if (message.type !== type) return;
      worker.off('message', onMessage);
      resolve();
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`bench worker exited with code ${code} before it was ready`)));
  });
}
