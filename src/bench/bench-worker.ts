import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import type { RecorderTick } from './recorder.js';
import { runThread } from './run-thread.js';
import type { WorkerCommand, WorkerData, WorkerMessage } from './worker-pool.js';

/** Entry of one --workers thread: announce readiness, run its share at the shared start, report. */
const port = parentPort;
if (port === null) throw new Error('bench-worker must run in a worker thread');
const { share, ticks } = workerData as WorkerData;
const post = (message: WorkerMessage): void => port.postMessage(message);

const stop = new AbortController();
port.on('message', (command: WorkerCommand) => {
  if (command.type === 'stop') return void stop.abort();
  // Each thread has its own performance.timeOrigin; the shared start travels as epoch ms.
  const startAtMs = command.startEpochMs - performance.timeOrigin;
  const onTick = ticks ? (tick: RecorderTick): void => post({ type: 'tick', tick }) : undefined;
  runThread(share, { startAtMs, onTick, stop: stop.signal }).then(
    (outcome) => post({ type: 'done', outcome }),
    (error: unknown) =>
      post({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
post({ type: 'ready' });
