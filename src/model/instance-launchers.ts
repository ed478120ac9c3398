import { fork, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { BatchlineError } from '../errors.js';
import { stackForThread } from './batch-buffer.js';
import { isCodeModelPath } from './code-model.js';
import { inputBuffers } from './input-buffers.js';
import { ItemFailure } from './item-failure.js';
import { instanceLoads } from './load-gate.js';
import { modelThreads } from './model-threads.js';
import { startThread } from './start-thread.js';
import type { InstanceHandle, InstanceLauncher, LaunchedInstance } from './instance-pool.js';
import { encodeFrame, FrameReader, writeFrame, type FrameHead } from './tensor-frames.js';
import type { ItemTensors } from './tensor-spec.js';
import { transferablesOf, type WorkerReply, type WorkerRequest, type WorkerSetup } from './worker-protocol.js';

/** How long an instance asked to close may take to release its session before it is killed (ms). */
const CLOSE_GRACE_MS = 1000;

/**
 * A built script of src/model. Under vitest this module runs from TypeScript source, but a
 * thread or a process needs JavaScript, so it uses the copy in dist/ (`npm test` builds first).
 */
function builtScript(name: string): URL {
  const here = fileURLToPath(import.meta.url);
  if (!here.endsWith('.ts')) return new URL(`./${name}`, import.meta.url);
  return new URL(`file://${here.replace(/\/src\/model\/instance-launchers\.ts$/, `/dist/src/model/${name}`)}`);
}

/** The two ends an instance is driven through, whatever it runs in. */
interface Endpoint {
  post(request: WorkerRequest, items?: readonly ItemTensors[]): void;
  onReply(listener: (reply: WorkerReply) => void): void;
  /** Called once with a reason when the instance ends. */
  onEnd(listener: (reason: string) => void): void;
  kill(): void;
  readonly killableWhileRunning: boolean;
  readonly interruptible?: boolean;
  readonly pid: number | undefined;
}

/**
 * Model instances on worker threads: a batch's inputs are stacked here (batch-buffer.ts) and
 * their buffer transferred, not copied. A
 * thread inside onnxruntime cannot be stopped: terminating it (or exiting the process) waits
 * for the run to return and then aborts the whole process.
 */
export function threadLauncher(setup: WorkerSetup): InstanceLauncher {
  return inTurn((onExit, index) => {
    const worker = startThread(builtScript('model-worker.js'), { workerData: { ...setup, instance: index } });
    let ended: ((reason: string) => void) | undefined;
    worker.on('error', (error) => ended?.(`error: ${error.message}`));
    worker.once('exit', (code) => ended?.(`code ${code}`));
    return launch(
      {
        post: (request, items) => {
          if (items !== undefined) stackForThread(items);
          worker.postMessage(request, items === undefined ? [] : transferablesOf(items));
        },
        onReply: (listener) => worker.on('message', listener),
        onEnd: (listener) => (ended = once(listener)),
        kill: () => void worker.terminate(),
        killableWhileRunning: false,
        // A code model's batch is JavaScript, which terminate() interrupts at once. Inside native
        // code (onnxruntime's run) it waits for the call to return, and onnxruntime-node then
        // aborts the process: an ONNX model's thread is never terminated while it runs.
        interruptible: isCodeModelPath(setup.path),
        pid: undefined,
      },
      onExit,
    );
  });
}

/**
 * Model instances as sessions on the process's shared model threads (model-threads.ts): a
 * batch's buffers are transferred as to a thread of its own. Ending one instance closes its
 * session; its thread ends with its last session.
 */
export function sharedThreadLauncher(setup: WorkerSetup): InstanceLauncher {
  return inTurn((onExit, index) => {
    const session = modelThreads(builtScript('model-host.js')).open({ ...setup, instance: index });
    let ended: ((reason: string) => void) | undefined;
    session.onEnd = (reason) => ended?.(reason);
    return launch(
      {
        post: (request, items) => {
          if (items !== undefined) stackForThread(items);
          session.post(request, items);
        },
        onReply: (listener) => (session.onReply = listener),
        onEnd: (listener) => (ended = once(listener)),
        // The thread runs other models' sessions: only this one closes (after its batch, if it runs one).
        kill: () => session.post({ kind: 'close' }),
        killableWhileRunning: false,
        pid: undefined,
      },
      onExit,
    );
  });
}

/**
 * Model instances in child processes: a batch is copied through a pipe (about 1 ms for a batch
 * of eight 3x48x192 images), and in exchange an instance can be killed at any moment: a stuck
 * batch, a drain's deadline, a crash inside onnxruntime end one process, never the server.
 */
export function processLauncher(setup: WorkerSetup): InstanceLauncher {
  return inTurn((onExit, index, loadSignal) => {
    const child: ChildProcess = fork(
      fileURLToPath(builtScript('model-process.js')),
      [JSON.stringify({ ...setup, instance: index })],
      {
        // No inspector or loader flags of the server's own (a --inspect port would clash).
        execArgv: [],
        // fd 3: control messages (JSON); fd 4: batches and results as tensor frames (tensor-frames.ts).
        stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe'],
      },
    );
    const data = child.stdio[4] as Socket;
    data.on('error', () => {}); // a dead instance's pipe: its end is reported by 'exit'
    let ended: ((reason: string) => void) | undefined;
    child.on('error', (error) => ended?.(`error: ${error.message}`));
    child.once('exit', (code, signal) => ended?.(signal !== null ? `signal ${signal}` : `code ${code}`));
    return launch(
      {
        post: (request, items) => {
          if (request.kind === 'run')
            return writeFrame(data, encodeFrame({ kind: 'run', id: request.id }, items ?? []));
          // A process that has just died has no channel; its end is reported by 'exit'.
          if (child.connected) child.send(request);
        },
        onReply: (listener) => {
          child.on('message', listener as (message: unknown) => void);
          const reader = new FrameReader((head, items) => listener(replyOf(head, items)));
          data.on('data', (chunk: Buffer) => reader.push(chunk));
        },
        onEnd: (listener) => (ended = once(listener)),
        kill: () => void child.kill('SIGKILL'),
        killableWhileRunning: true,
        pid: child.pid,
      },
      onExit,
      loadSignal,
    );
  });
}

/**
 * Starts an instance when the process's load gate gives it a turn (two a core: load-gate.ts),
 * and gives the turn back once it has loaded, failed or ended.
 */
function inTurn(launcher: InstanceLauncher): InstanceLauncher {
  return async (onExit, index, loadSignal) => {
    const leave = await instanceLoads.enter();
    try {
      return await launcher(onExit, index, loadSignal);
    } finally {
      leave();
    }
  };
}

/** Waits for the instance's model to load, then drives its runs. */
function launch(
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
      }
    >();
    let nextId = 0;
    let loaded = false;
    let closing: (() => void) | undefined;
    let stopped = false;
    // Only an instance that can be killed mid-run (a process): a thread inside onnxruntime cannot be stopped.
    const stopLoad = (): void => {
      if (loaded) return;
      stopped = true;
      endpoint.kill();
    };
    const watchesLoad = loadSignal !== undefined && endpoint.killableWhileRunning;
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
              ? 'its load was stopped by a drain (a removal, or the server stopping): its instance process was killed while it loaded'
              : `the model instance ended while loading (${reason})`,
          ),
        );
      if (closing !== undefined) return closing();
      onExit(reason);
    });
    endpoint.onReply((reply) => {
      if (reply.kind === 'loaded') {
        loaded = true;
        unwatchLoad();
        resolve({
          handle,
          inputs: reply.inputs,
          outputs: reply.outputs,
          ...(reply.inputSchema === undefined ? {} : { inputSchema: reply.inputSchema }),
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
          run.reject(new Error(reply.message));
        } else {
          // A thread hands the batch's input buffers back: the next requests' inputs are read into them.
          if (reply.inputs !== undefined) for (const buffer of reply.inputs) inputBuffers.give(buffer);
          run.resolve(
            reply.outputs.map((output) =>
              'failed' in output && typeof output.failed === 'string'
                ? new ItemFailure(output.failed)
                : (output as ItemTensors),
            ),
          );
        }
      }
    });
    const handle: InstanceHandle = {
      killableWhileRunning: endpoint.killableWhileRunning,
      ...(endpoint.interruptible === true ? { interruptible: true } : {}),
      pid: endpoint.pid,
      run: (items) =>
        new Promise((resolveRun, rejectRun) => {
          // A buffer already moved to a thread that crashed is gone; posting it again would be
          // dropped silently (Node delivers no message), leaving the run unanswered.
          if (items.some(lostInput))
            return rejectRun(new Error('the inputs of this batch were lost with the model thread that crashed'));
          const id = nextId++;
          pending.set(id, { resolve: resolveRun, reject: rejectRun, items });
          endpoint.post({ kind: 'run', id, items: items as ItemTensors[] }, items);
        }),
      kill: () => {
        closing ??= () => {};
        endpoint.kill();
      },
      close: () =>
        new Promise<void>((resolveClose) => {
          // A thread is never terminated in the middle of a run (that aborts the process): it closes after it.
          const timer = endpoint.killableWhileRunning ? setTimeout(() => endpoint.kill(), CLOSE_GRACE_MS) : undefined;
          closing = () => {
            clearTimeout(timer);
            resolveClose();
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

/** The reply a frame from an instance stands for. */
function replyOf(head: FrameHead, items: (ItemTensors | null)[]): WorkerReply {
  if (head.kind === 'failed') return { kind: 'failed', id: head.id, message: head.message, items: [] };
  if (head.kind === 'result')
    return {
      kind: 'result',
      id: head.id,
      outputs: items.map((item, i) =>
        head.failed[i] !== null && head.failed[i] !== undefined ? { failed: head.failed[i]! } : item!,
      ),
    };
  throw new Error(`an instance sent a '${head.kind}' frame`);
}

function once(listener: (reason: string) => void): (reason: string) => void {
  let called = false;
  return (reason) => {
    if (called) return;
    called = true;
    listener(reason);
  };
}
