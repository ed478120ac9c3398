import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { BatchlineError } from '../errors.js';
import type { ItemTensors, TensorSpec } from './tensor-spec.js';
import { transferablesOf, type WorkerReply, type WorkerRequest, type WorkerSetup } from './worker-protocol.js';

interface PendingRun {
  resolve: (outputs: (ItemTensors | Error)[]) => void;
  reject: (error: Error) => void;
  /** The batch's inputs, whose buffers moved to the thread: a failed run gives them back. */
  items: readonly ItemTensors[];
}

/** One model instance: its thread, its runs in flight, and whether it can take work. */
interface Instance {
  worker: Worker;
  pending: Map<number, PendingRun>;
  /** False while a replacement thread loads after a crash. */
  up: boolean;
}

/**
 * The built worker script. Under vitest this module runs from TypeScript source, but a worker
 * thread needs JavaScript, so it uses the copy in dist/ (`npm test` builds first).
 */
function workerScript(): URL {
  const here = fileURLToPath(import.meta.url);
  if (!here.endsWith('.ts')) return new URL('./model-worker.js', import.meta.url);
  return new URL(`file://${here.replace(/\/src\/model\/worker-model\.ts$/, '/dist/src/model/model-worker.js')}`);
}

/**
 * One model instance per worker thread. `run(instance, items)` sends a batch to that
 * instance's thread; instances run truly in parallel, and none blocks the HTTP event loop.
 * A thread that dies fails only its own runs and is replaced; until the replacement has
 * loaded, runs sent to it fail at once rather than wait forever.
 */
export class WorkerModel {
  private readonly instances: Instance[];
  private nextId = 0;
  private closed = false;

  private constructor(
    private readonly setup: WorkerSetup,
    workers: Worker[],
    readonly inputs: TensorSpec[],
    readonly outputs: TensorSpec[],
  ) {
    this.instances = workers.map((worker) => this.watch({ worker, pending: new Map(), up: true }));
  }

  static async start(setup: WorkerSetup, instances: number): Promise<WorkerModel> {
    const workers = Array.from({ length: instances }, () => new Worker(workerScript(), { workerData: setup }));
    try {
      const specs = await Promise.all(workers.map((worker) => loaded(worker)));
      const first = specs[0]!;
      return new WorkerModel(setup, workers, first.inputs, first.outputs);
    } catch (error) {
      await Promise.all(workers.map((worker) => worker.terminate()));
      throw error;
    }
  }

  /** True when every instance can take work. */
  get healthy(): boolean {
    return this.instances.every((instance) => instance.up);
  }

  run(index: number, items: readonly ItemTensors[]): Promise<(ItemTensors | Error)[]> {
    const instance = this.instances[index % this.instances.length]!;
    if (!instance.up) return Promise.reject(new Error(`model instance ${index} is restarting after a crash`));
    // A buffer already moved to a thread that crashed is gone; posting it again would be dropped
    // silently (Node delivers no message), leaving the run unanswered.
    if (items.some(lostInput)) return Promise.reject(new Error('the inputs of this batch were lost with the model thread that crashed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      instance.pending.set(id, { resolve, reject, items });
      const request: WorkerRequest = { kind: 'run', id, items: items as ItemTensors[] };
      instance.worker.postMessage(request, transferablesOf(items));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const instance of this.instances) failPending(instance, new Error('the model was closed'));
    await Promise.all(this.instances.map((instance) => instance.worker.terminate()));
  }

  private watch(instance: Instance): Instance {
    const { worker } = instance;
    worker.on('message', (reply: WorkerReply) => settle(instance, reply));
    worker.on('error', (error) => failPending(instance, error));
    worker.once('exit', (code) => {
      if (instance.worker !== worker) return;
      failPending(instance, new Error(`model instance thread exited (code ${code})`));
      if (!this.closed) this.replace(instance);
    });
    return instance;
  }

  private replace(instance: Instance): void {
    instance.up = false;
    const worker = new Worker(workerScript(), { workerData: this.setup });
    instance.worker = worker;
    loaded(worker).then(
      () => {
        if (instance.worker !== worker) return;
        this.watch(instance);
        instance.up = !this.closed;
      },
      () => void worker.terminate(), // stays down: /readyz reports it
    );
  }
}

function settle(instance: Instance, reply: WorkerReply): void {
  if (reply.kind !== 'result' && reply.kind !== 'failed') return;
  const pending = instance.pending.get(reply.id);
  if (pending === undefined) return;
  instance.pending.delete(reply.id);
  if (reply.kind === 'failed') {
    restoreInputs(pending.items, reply.items);
    pending.reject(new Error(reply.message));
  } else pending.resolve(reply.outputs.map((output) => ('failed' in output && typeof output.failed === 'string' ? new Error(output.failed) : (output as ItemTensors))));
}

/** An input whose buffer was moved away (detached): it reads as empty although its shape is not. */
function lostInput(item: ItemTensors): boolean {
  for (const tensor of Object.values(item)) if (tensor.data.length === 0 && tensor.shape.every((dim) => dim > 0)) return true;
  return false;
}

/** Puts the buffers a failed run gave back into the caller's items, so parts of the batch can run again. */
function restoreInputs(items: readonly ItemTensors[], returned: readonly ItemTensors[] | undefined): void {
  if (returned === undefined) return;
  items.forEach((item, i) => {
    const back = returned[i];
    if (back === undefined) return;
    for (const name of Object.keys(item)) if (back[name] !== undefined) item[name]!.data = back[name]!.data;
  });
}

function failPending(instance: Instance, error: Error): void {
  for (const pending of instance.pending.values()) pending.reject(error);
  instance.pending.clear();
}

function loaded(worker: Worker): Promise<{ inputs: TensorSpec[]; outputs: TensorSpec[] }> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => reject(new BatchlineError('MODEL_LOAD_FAILED', error.message, { cause: error }));
    worker.once('error', onError);
    worker.once('message', (reply: WorkerReply) => {
      worker.off('error', onError);
      if (reply.kind === 'loaded') resolve({ inputs: reply.inputs, outputs: reply.outputs });
      else reject(new BatchlineError('MODEL_LOAD_FAILED', reply.kind === 'load_failed' ? reply.message : 'unexpected reply'));
    });
  });
}
