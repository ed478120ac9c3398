/**
 * The body of a model instance, on a worker thread or in a child process: loads one
 * onnxruntime session, or one code model, and runs the batches the server posts.
 */
import { BatchlineError } from '../errors.js';
import { messageOf } from '../message-text.js';
import { CodeModel, isCodeModelPath } from './code-model.js';
import type { OnnxModel } from './onnx-model.js';
import { buildToyModelOnnx } from './toy-model.js';
import { inputBuffers } from './input-buffers.js';
import { returnableInputs, type WorkerReply, type WorkerRequest, type WorkerSetup } from './worker-protocol.js';
import { ItemFailure, type ItemClientCode, NotOnePerItemFailure } from './item-failure.js';

export interface InstanceChannel {
  send(reply: WorkerReply): void;
  /** The batch's input buffers go back with its result (a thread: they were moved to it, and can be moved back). */
  readonly returnsInputs: boolean;
  onRequest(listener: (request: WorkerRequest) => void): void;
  /** Lets the instance end once its session is released. */
  end(): void;
}

export async function serveModelInstance(setup: WorkerSetup, channel: InstanceChannel): Promise<void> {
  let model: OnnxModel | CodeModel | undefined;
  // Listening from the start keeps a thread alive while its model loads: a code model's
  // initialize that awaits what never comes leaves its version loading (a removal ends it), where
  // the thread, with nothing left to run, ended and the load failed as "ended while loading
  // (code 0)". The server posts no batch before it has loaded; a close then is kept for the load's end.
  let closeAsked = false;
  channel.onRequest((request) => {
    if (model !== undefined) serveRequest(model, request, channel);
    else if (request.kind === 'close') closeAsked = true;
  });
  try {
    model = isCodeModelPath(setup.path)
      ? await CodeModel.load(setup.path as string, {
          instance: setup.instance ?? 0,
          version: setup.version,
          ...(setup.functionName === undefined ? {} : { functionName: setup.functionName }),
          ...(setup.config === undefined ? {} : { config: setup.config }),
        })
      : // Imported here, not above: a code model's thread loads no onnxruntime unless the model does
        // (model-worker.ts watches for the native addons it loads).
        await (await import('./onnx-model.js')).OnnxModel.load(setup.path ?? buildToyModelOnnx(), setup.version, {
          intraOpThreads: setup.intraOpThreads,
          executionProvider: setup.executionProvider,
        });
  } catch (error) {
    // The detail only: the server wraps it in its own MODEL_LOAD_FAILED ("could not load model: …").
    const message =
      error instanceof BatchlineError && error.code === 'MODEL_LOAD_FAILED' ? error.detail : messageOf(error);
    channel.send({ kind: 'load_failed', message });
    channel.end();
    return;
  }
  if (closeAsked) return serveRequest(model, { kind: 'close' }, channel);
  const inputSchema = model instanceof CodeModel ? model.inputSchema : undefined;
  channel.send({
    kind: 'loaded',
    inputs: model.inputs,
    outputs: model.outputs,
    ...(inputSchema === undefined ? {} : { inputSchema }),
    ...(model instanceof CodeModel && model.itemCost ? { itemCost: true as const } : {}),
  });
}

/** A loaded instance's request: a batch to run, or its close. */
function serveRequest(model: OnnxModel | CodeModel, request: WorkerRequest, channel: InstanceChannel): void {
  if (request.kind === 'close') {
    // A finalize that throws ends nothing but itself, and is told: it was dropped without a word
    // (and, rejected past `finally`, an unhandled rejection on the thread).
    void model
      .close()
      .then(
        () => undefined,
        (error: unknown) => channel.send({ kind: 'finalize_failed', message: messageOf(error) }),
      )
      .finally(() => channel.end());
    return;
  }
  model.runBatch(request.items).then(
    (outputs) => {
      const results = outputs.map((o) => (o instanceof Error ? failedItem(o) : o));
      // The inputs have been read: their buffers go back to the server's pool (a thread's only).
      const inputs = channel.returnsInputs
        ? returnableInputs(request.items, inputBuffers.minBytes, outputs)
        : undefined;
      channel.send({
        kind: 'result',
        id: request.id,
        outputs: results,
        ...(inputs === undefined || inputs.length === 0 ? {} : { inputs }),
      });
    },
    // The inputs go back with the failure: the batcher may run parts of the batch again (isolation).
    (error: unknown) =>
      channel.send({
        kind: 'failed',
        id: request.id,
        message: messageOf(error),
        items: request.items,
        ...(error instanceof NotOnePerItemFailure ? { notOnePerItem: true as const } : {}),
      }),
  );
}

/** An item's failure as it crosses to the server: its message, and the client-error code it carries. */
function failedItem(error: Error): { failed: string; code?: ItemClientCode } {
  const code = error instanceof ItemFailure ? error.clientCode : undefined;
  return code === undefined ? { failed: messageOf(error) } : { failed: messageOf(error), code };
}
