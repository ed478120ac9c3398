import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { BatchlineError } from '../errors.js';
import type { ItemTensors, TensorSpec } from './tensor-spec.js';
import { transferablesOf, type WorkerReply, type WorkerRequest, type WorkerSetup } from './worker-protocol.js';

interface PendingRun {
  resolve: (outputs: ItemTensors[]) => void;
  reject: (error: Error) => void;
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
 * One model instance per worker thread. `run(instance, items)` sends a batch to the instance's
 * thread; several instances run truly in parallel, and none blocks the HTTP event loop.
 */
export class WorkerModel {
  private readonly pending = new Map<number, PendingRun>();
  private nextId = 0;

  private constructor(
    private readonly workers: Worker[],
    readonly inputs: TensorSpec[],
    readonly outputs: TensorSpec[],
  ) {
    for (const worker of workers) {
      worker.on('message', (reply: WorkerReply) => this.settle(reply));
      worker.on('error', (error) => this.failAll(error));
    }
  }

  static async start(setup: WorkerSetup, instances: number): Promise<WorkerModel> {
    const workers = Array.from({ length: instances }, () => new Worker(workerScript(), { workerData: setup }));
    try {
      const specs = await Promise.all(workers.map((worker) => firstReply(worker)));
      const first = specs[0]!;
      return new WorkerModel(workers, first.inputs, first.outputs);
    } catch (error) {
      await Promise.all(workers.map((worker) => worker.terminate()));
      throw error;
    }
  }

  run(instance: number, items: readonly ItemTensors[]): Promise<ItemTensors[]> {
    const worker = this.workers[instance % this.workers.length]!;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const request: WorkerRequest = { kind: 'run', id, items: items as ItemTensors[] };
      worker.postMessage(request, transferablesOf(items));
    });
  }

  async close(): Promise<void> {
    this.failAll(new Error('the model was closed'));
    await Promise.all(this.workers.map((worker) => worker.terminate()));
  }

  private settle(reply: WorkerReply): void {
    if (reply.kind !== 'result' && reply.kind !== 'failed') return;
    const pending = this.pending.get(reply.id);
    if (pending === undefined) return;
    this.pending.delete(reply.id);
    if (reply.kind === 'result') pending.resolve(reply.outputs);
    else pending.reject(new Error(reply.message));
  }

  private failAll(error: Error): void {
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
  }
}

function firstReply(worker: Worker): Promise<{ inputs: TensorSpec[]; outputs: TensorSpec[] }> {
  return new Promise((resolve, reject) => {
    worker.once('error', (error) => reject(new BatchlineError('MODEL_LOAD_FAILED', error.message, { cause: error })));
    worker.once('message', (reply: WorkerReply) => {
      if (reply.kind === 'loaded') resolve({ inputs: reply.inputs, outputs: reply.outputs });
      else reject(new BatchlineError('MODEL_LOAD_FAILED', reply.kind === 'load_failed' ? reply.message : 'unexpected reply'));
    });
  });
}
