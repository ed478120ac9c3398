/** A model instance on a worker thread (instance-main.ts): batches never block the event loop that serves HTTP. */
// First, so that serve hears as early as it can that this thread's heap is configured.
import './heap-configured.js';
import { parentPort, workerData } from 'node:worker_threads';
import { isCodeModelPath } from './code-model.js';
import { serveModelInstance } from './instance-main.js';
import { watchNativeAddons } from './native-addons.js';
import { transferablesOf, type WorkerReply, type WorkerRequest, type WorkerSetup } from './worker-protocol.js';

const port = parentPort!;
const setup = workerData as WorkerSetup;
// A code model's outputs may be arrays it keeps (a table, a buffer it fills each batch): copied,
// not moved, which detached them (every later batch answered 0 elements). onnxruntime's are its run's own.
const movesOutputs = !isCodeModelPath(setup.path);
// Before the model's module is imported: a code model that loads an addon is no longer terminated mid-run.
if (isCodeModelPath(setup.path))
  watchNativeAddons((addon) => port.postMessage({ kind: 'native', addon } satisfies WorkerReply));
await serveModelInstance(setup, {
  send: (reply: WorkerReply) =>
    port.postMessage(
      reply,
      reply.kind === 'result'
        ? [...(movesOutputs ? transferablesOf(reply.outputs) : []), ...(reply.inputs ?? [])]
        : reply.kind === 'failed'
          ? transferablesOf(reply.items)
          : [],
    ),
  returnsInputs: true,
  onRequest: (listener: (request: WorkerRequest) => void) => port.on('message', listener),
  end: () => port.close(),
});
