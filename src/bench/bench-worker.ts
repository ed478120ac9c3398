import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import type { RecorderTick } from './recorder.js';
import { runThread } from './run-thread.js';
import type { WorkerData, WorkerMessage, WorkerStart } from './worker-pool.js';

/** Entry of one --workers thread: announce readiness, run its share at the shared start, report. */
const port = parentPort;
if (port === null) throw new Error('bench-worker must run in a worker thread');
const { share, ticks } = workerData as WorkerData;
const post = (message: WorkerMessage): void => port.postMessage(message);

port.once('message', (start: WorkerStart) => {
  // Each thread has its own performance.timeOrigin; the shared start travels as epoch ms.
  const startAtMs = start.startEpochMs - performance.timeOrigin;
  const hooks = ticks ? { startAtMs, onTick: (tick: RecorderTick) => post({ type: 'tick', tick }) } : { startAtMs };
  runThread(share, hooks).then(
    (outcome) => post({ type: 'done', outcome }),
    (error: unknown) => post({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
post({ type: 'ready' });
