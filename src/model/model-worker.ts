/**
 * A model instance on its own thread: loads one onnxruntime session and runs the batches the
 * main thread posts, so model execution never blocks the event loop that serves HTTP.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BatchlineError } from '../errors.js';
import { OnnxModel } from './onnx-model.js';
import type { WorkerReply, WorkerRequest, WorkerSetup } from './worker-protocol.js';
import { transferablesOf } from './worker-protocol.js';
import { buildToyModelOnnx } from './toy-model.js';

const port = parentPort!;
const setup = workerData as WorkerSetup;

function send(reply: WorkerReply): void {
  port.postMessage(reply, reply.kind === 'result' ? transferablesOf(reply.outputs) : reply.kind === 'failed' ? transferablesOf(reply.items) : []);
}

try {
  const model = await OnnxModel.load(setup.path ?? buildToyModelOnnx(), setup.version, { intraOpThreads: setup.intraOpThreads });
  send({ kind: 'loaded', inputs: model.inputs, outputs: model.outputs });
  port.on('message', (request: WorkerRequest) => {
    if (request.kind === 'close') {
      void model.close().finally(() => port.close());
      return;
    }
    model.runBatch(request.items).then(
      (outputs) => send({ kind: 'result', id: request.id, outputs: outputs.map((o) => (o instanceof Error ? { failed: o.message } : o)) }),
      (error: unknown) => send({ kind: 'failed', id: request.id, message: error instanceof Error ? error.message : String(error), items: request.items }),
    );
  });
} catch (error) {
  // The detail only: the main thread wraps it in its own MODEL_LOAD_FAILED ("could not load model: …").
  const message = error instanceof BatchlineError && error.code === 'MODEL_LOAD_FAILED' ? error.detail : error instanceof Error ? error.message : String(error);
  send({ kind: 'load_failed', message });
}
