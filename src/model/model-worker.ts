/** A model instance on a worker thread (instance-main.ts): batches never block the event loop that serves HTTP. */
// First, so that serve hears as early as it can that this thread's heap is configured.
import './heap-configured.js';
import { parentPort, workerData } from 'node:worker_threads';
import { serveModelInstance } from './instance-main.js';
import { transferablesOf, type WorkerReply, type WorkerRequest, type WorkerSetup } from './worker-protocol.js';

const port = parentPort!;
await serveModelInstance(workerData as WorkerSetup, {
  send: (reply: WorkerReply) =>
    port.postMessage(
      reply,
      reply.kind === 'result'
        ? [...transferablesOf(reply.outputs), ...(reply.inputs ?? [])]
        : reply.kind === 'failed'
          ? transferablesOf(reply.items)
          : [],
    ),
  returnsInputs: true,
  onRequest: (listener: (request: WorkerRequest) => void) => port.on('message', listener),
  end: () => port.close(),
});
