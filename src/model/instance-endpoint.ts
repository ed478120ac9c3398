/**
 * One model instance driven through its two ends, whatever it runs in (a thread, a session on a
 * shared thread, a process: instance-launchers.ts): its load, its runs by id, its close and its
 * end, and when it can be stopped (instance-handle.ts).
 */
import { BatchlineError } from '../errors.js';
import type { InstanceHandle, InstanceStops, LaunchedInstance } from './instance-handle.js';
import { inputBuffers } from './input-buffers.js';
import { ItemFailure, itemClientCode, NotOnePerItemFailure } from './item-failure.js';
import type { ItemTensors } from './tensor-spec.js';
import type { WorkerReply, WorkerRequest } from './worker-protocol.js';

/** How long an instance asked to close may take to release its session before it is killed (ms). */
export const CLOSE_GRACE_MS = 1000;

/** The two ends an instance is driven through, whatever it runs in. */
export interface Endpoint {
  /**
   * Sends a request; with a batch's `items`, says the byte lengths of the pool's buffers that
   * moved with it (a thread's: `forThread`), which its reply may give back (none for a process).
   */
  post(request: WorkerRequest, items?: readonly ItemTensors[]): readonly number[] | undefined;
  onReply(listener: (reply: WorkerReply) => void): void;
  /** Called once with a reason when the instance ends. */
  onEnd(listener: (reason: string) => void): void;
  kill(): void;
  /** What it runs allows, before anything it loads says otherwise (a native addon: `native` replies). */
  readonly stops: InstanceStops;
  readonly pid: number | undefined;
}

/** Waits for the instance's model to load, then drives its runs. */
export function launch(
  endpoint: Endpoint,
  onExit: (reason: string) => void,
  loadSignal?: AbortSignal,
): Promise<LaunchedInstance> {
  return new Promise((resolve, reject) => {
    const pending = new Map<
      number,
      {
        resolve: (outputs: (ItemTensors | Error)[]) => void;
        reject: (error: Error) => void;
        items: readonly ItemTensors[];
        /** The byte lengths of the pool's buffers that moved with its batch (Endpoint.post). */
        lentLengths: readonly number[] | undefined;
      }
    >();
    let nextId = 0;
    let loaded = false;
    let closing: (() => void) | undefined;
    /** What the model's finalize threw as it closed, told before its end. */
    let finalizeFailure: string | undefined;
    let stopped = false;
    // A native addon loaded since: it may be in native code, where it cannot be stopped.
    let nativeAddon: string | undefined;
    const stops = (): InstanceStops => (nativeAddon !== undefined ? 'after its run' : endpoint.stops);
    const stopLoad = (): void => {
      if (loaded || stops() !== 'at once') return;
      stopped = true;
      endpoint.kill();
    };
    const watchesLoad = loadSignal !== undefined && endpoint.stops === 'at once';
    if (watchesLoad) loadSignal.addEventListener('abort', stopLoad, { once: true });
    if (watchesLoad && loadSignal.aborted) stopLoad();
    const unwatchLoad = (): void => {
      if (watchesLoad) loadSignal.removeEventListener('abort', stopLoad);
    };
    endpoint.onEnd((reason) => {
      const error = new Error(`model instance ended (${reason})`);
      for (const run of pending.values()) run.reject(error);
      pending.clear();
      unwatchLoad();
      if (!loaded)
        return reject(
          new BatchlineError(
            'MODEL_LOAD_FAILED',
            stopped
              ? `its load was stopped by a drain (a removal, or the server stopping): its instance ${endpoint.pid === undefined ? 'thread was terminated' : 'process was killed'} while it loaded`
              : `the model instance ended while loading (${reason})`,
          ),
        );
      if (closing !== undefined) return closing();
      onExit(reason);
    });
    endpoint.onReply((reply) => {
      if (reply.kind === 'native') {
        nativeAddon = reply.addon;
      } else if (reply.kind === 'finalize_failed') {
        finalizeFailure = reply.message;
      } else if (reply.kind === 'loaded') {
        loaded = true;
        unwatchLoad();
        resolve({
          handle,
          inputs: reply.inputs,
          outputs: reply.outputs,
          ...(reply.inputSchema === undefined ? {} : { inputSchema: reply.inputSchema }),
          ...(reply.itemCost === true ? { itemCost: true as const } : {}),
        });
      } else if (reply.kind === 'load_failed') {
        closing = () => {};
        endpoint.kill();
        reject(new BatchlineError('MODEL_LOAD_FAILED', reply.message));
      } else {
        const run = pending.get(reply.id);
        if (run === undefined) return;
        pending.delete(reply.id);
        if (reply.kind === 'failed') {
          restoreInputs(run.items, reply.items);
          run.reject(reply.notOnePerItem === true ? new NotOnePerItemFailure(reply.message) : new Error(reply.message));
        } else {
          // A thread hands the batch's input buffers back: the next requests' inputs are read into them.
          if (reply.inputs !== undefined) inputBuffers.giveBackMoved(reply.inputs, run.lentLengths ?? []);
          run.resolve(
            reply.outputs.map((output) =>
              'failed' in output && typeof output.failed === 'string'
                ? new ItemFailure(output.failed, { clientCode: itemClientCode(output.code) })
                : (output as ItemTensors),
            ),
          );
        }
      }
    });
    const handle: InstanceHandle = {
      get stops() {
        return stops();
      },
      pid: endpoint.pid,
      get nativeAddon() {
        return nativeAddon;
      },
      run: (items) =>
        new Promise((resolveRun, rejectRun) => {
          // A buffer already moved to a thread that crashed is gone; posting it again would be
          // dropped silently (Node delivers no message), leaving the run unanswered.
          if (items.some(lostInput))
            return rejectRun(new Error('the inputs of this batch were lost with the model thread that crashed'));
          const id = nextId++;
          const run = {
            resolve: resolveRun,
            reject: rejectRun,
            items,
            lentLengths: undefined as readonly number[] | undefined,
          };
          pending.set(id, run);
          run.lentLengths = endpoint.post({ kind: 'run', id, items: items as ItemTensors[] }, items);
        }),
      kill: () => {
        closing ??= () => {};
        endpoint.kill();
      },
      close: () =>
        new Promise<string | undefined>((resolveClose) => {
          // A finalize that never ends does not hold the close: what stops at once is stopped after a
          // grace. A thread in native code is never terminated (that aborts the process).
          const timer = stops() === 'at once' ? setTimeout(() => endpoint.kill(), CLOSE_GRACE_MS) : undefined;
          closing = () => {
            clearTimeout(timer);
            resolveClose(finalizeFailure);
          };
          endpoint.post({ kind: 'close' });
        }),
    };
  });
}

/** An input whose buffer was moved away (detached): it reads as empty although its shape is not. */
function lostInput(item: ItemTensors): boolean {
  for (const tensor of Object.values(item))
    if (tensor.data.length === 0 && tensor.shape.every((dim) => dim > 0)) return true;
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

/** `listener`, called at most once: an end is reported by more than one event (exit, error). */
export function once(listener: (reason: string) => void): (reason: string) => void {
  let called = false;
  return (reason) => {
    if (called) return;
    called = true;
    listener(reason);
  };
}
