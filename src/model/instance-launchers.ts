import { fork, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { forThread } from './batch-buffer.js';
import { BatchlineError } from '../errors.js';
import { messageOf } from '../message-text.js';
import { CodeModel, isCodeModelPath } from './code-model.js';
import { instanceLoads } from './load-gate.js';
import { modelThreads } from './model-threads.js';
import { startThread } from './start-thread.js';
import type { InstanceLauncher } from './instance-handle.js';
import { CLOSE_GRACE_MS, launch, once } from './instance-endpoint.js';
import { encodeFrame, FrameReader, writeFrame, type FrameHead } from './tensor-frames.js';
import type { ItemTensors } from './tensor-spec.js';
import type { WorkerReply, WorkerSetup } from './worker-protocol.js';

/**
 * A built script of src/model. Under vitest this module runs from TypeScript source, but a
 * thread or a process needs JavaScript, so it uses the copy in dist/ (`npm test` builds first).
 */
function builtScript(name: string): URL {
  const here = fileURLToPath(import.meta.url);
  if (!here.endsWith('.ts')) return new URL(`./${name}`, import.meta.url);
  return new URL(`file://${here.replace(/\/src\/model\/instance-launchers\.ts$/, `/dist/src/model/${name}`)}`);
}

/**
 * Model instances on worker threads: a batch's inputs are stacked here (batch-buffer.ts) and
 * their buffer transferred, not copied. A thread inside onnxruntime cannot be stopped:
 * terminating it (or exiting the process) waits for the run to return and then aborts the whole
 * process. A code model's thread runs JavaScript, which `worker.terminate()` interrupts at once,
 * until it loads a native addon.
 */
export function threadLauncher(setup: WorkerSetup): InstanceLauncher {
  return inTurn((onExit, index, loadSignal) => {
    const worker = startThread(builtScript('model-worker.js'), { workerData: { ...setup, instance: index } });
    let ended: ((reason: string) => void) | undefined;
    worker.on('error', (error) => ended?.(`error: ${error.message}`));
    worker.once('exit', (code) => ended?.(`code ${code}`));
    return launch(
      {
        post: (request, items) => {
          if (items === undefined) return void worker.postMessage(request, []);
          const { transfer, lentLengths } = forThread(items);
          worker.postMessage(request, transfer);
          return lentLengths;
        },
        onReply: (listener) => worker.on('message', listener),
        onEnd: (listener) => (ended = once(listener)),
        kill: () => void worker.terminate(),
        stops: isCodeModelPath(setup.path) ? 'at once' : 'after its run',
        pid: undefined,
      },
      onExit,
      loadSignal,
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
          if (items === undefined) return void session.post(request);
          const { transfer, lentLengths } = forThread(items);
          session.post(request, transfer);
          return lentLengths;
        },
        onReply: (listener) => (session.onReply = listener),
        onEnd: (listener) => (ended = once(listener)),
        // The thread runs other models' sessions: only this one closes (after its batch, if it runs one).
        kill: () => session.post({ kind: 'close' }),
        stops: 'after its run',
        pid: undefined,
      },
      onExit,
    );
  });
}

/** Inline code instances started in this process: each imports its module under a key of its own. */
let inlineLaunches = 0;

/**
 * A code model's instances on the server's own thread (`execution: inline`), each launch a copy
 * of the module of its own (`moduleKey`): module-level state set by `initialize` is the
 * instance's, as in a thread, not shared with the version's other instances, another version of
 * the same file, or the instance it replaces. It stops `at once`: a stuck batch (a promise that
 * never settles) is abandoned, its copy told to `finalize`, and a fresh copy initialized. A batch
 * that never yields (a busy loop) cannot be stopped here: it holds the server's thread, which is
 * why a file's default is a thread of its own. Node keeps every copy it imported (ES modules are
 * never unloaded), as a thread's ends with it.
 */
export function inlineCodeLauncher(setup: WorkerSetup): InstanceLauncher {
  return async (_onExit, index, loadSignal) => {
    if (loadSignal?.aborted === true) throw loadStopped();
    const loading = CodeModel.load(setup.path as string, {
      instance: index,
      version: setup.version,
      moduleKey: `launch=${++inlineLaunches}`,
      ...(setup.functionName === undefined ? {} : { functionName: setup.functionName }),
      ...(setup.config === undefined ? {} : { config: setup.config }),
    });
    const model = await untilAborted(loading, loadSignal);
    let ended = false;
    return {
      handle: {
        run: (items) =>
          ended ? Promise.reject(new Error('model instance ended (it was stopped)')) : model.runBatch(items),
        // A stuck batch's promise is left to itself (its result, should it come, is not read), and
        // its copy finalized as a thread is ended: not waited for, its throw ending nothing.
        kill: () => {
          ended = true;
          void settledWithin(model.close(), CLOSE_GRACE_MS);
        },
        // As a thread's: its finalize gets CLOSE_GRACE_MS, and a throw of it ends nothing but itself
        // (on the server's thread, an unhandled rejection would end the server).
        close: () => {
          ended = true;
          // Held: at shutdown nothing else may keep the loop alive, and a finalize that never settled
          // let the process exit at once, status 0, before its 'stopped' line.
          return settledWithin(model.close(), CLOSE_GRACE_MS, true);
        },
        stops: 'at once',
        pid: undefined,
      },
      inputs: model.inputs,
      outputs: model.outputs,
      ...(model.inputSchema === undefined ? {} : { inputSchema: model.inputSchema }),
      ...(model.itemCost ? { itemCost: true as const } : {}),
    };
  };
}

/**
 * `loading`, or a MODEL_LOAD_FAILED once `signal` aborts first (a removal or a stop while an
 * inline `initialize` never settles): the load itself runs on, its model never used.
 */
function untilAborted(loading: Promise<CodeModel>, signal: AbortSignal | undefined): Promise<CodeModel> {
  if (signal === undefined) return loading;
  return new Promise((resolve, reject) => {
    const abort = (): void => reject(loadStopped());
    signal.addEventListener('abort', abort, { once: true });
    loading.then(
      (model) => {
        signal.removeEventListener('abort', abort);
        if (!signal.aborted) return resolve(model);
        void model.close().catch(() => {});
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}

/** Resolves once `work` settles, however (with the message of its rejection), or after `ms`, whichever comes first; `holdProcess`: the wait keeps Node alive. */
function settledWithin(work: Promise<unknown>, ms: number, holdProcess = false): Promise<string | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    if (!holdProcess) timer.unref();
    const settle = (failure: string | undefined): void => {
      clearTimeout(timer);
      resolve(failure);
    };
    work.then(
      () => settle(undefined),
      (error: unknown) => settle(messageOf(error)),
    );
  });
}

function loadStopped(): BatchlineError {
  return new BatchlineError('MODEL_LOAD_FAILED', 'its load was stopped by a drain (a removal, or the server stopping)');
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
        // fd 3: control messages (JSON); fd 4: batches and results as tensor frames (tensor-frames.ts);
        // fd 5: the lifeline, never written: it closes when this process ends, and so does the
        // instance, even in a batch that blocks its event loop (instance-lifeline.ts).
        stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe', 'pipe'],
      },
    );
    const data = child.stdio[4] as Socket;
    data.on('error', () => {}); // a dead instance's pipe: its end is reported by 'exit'
    ((child.stdio as readonly unknown[])[5] as Socket).on('error', () => {});
    let ended: ((reason: string) => void) | undefined;
    child.on('error', (error) => ended?.(`error: ${error.message}`));
    child.once('exit', (code, signal) => ended?.(signal !== null ? `signal ${signal}` : `code ${code}`));
    return launch(
      {
        // A process gets a copy of a batch and gives no buffer back: nothing of the pool's moves.
        post: (request, items) => {
          if (request.kind === 'run') writeFrame(data, encodeFrame({ kind: 'run', id: request.id }, items ?? []));
          // A process that has just died has no channel; its end is reported by 'exit'.
          else if (child.connected) child.send(request);
          return undefined;
        },
        onReply: (listener) => {
          child.on('message', listener as (message: unknown) => void);
          const reader = new FrameReader((head, items) => listener(replyOf(head, items)));
          data.on('data', (chunk: Buffer) => reader.push(chunk));
        },
        onEnd: (listener) => (ended = once(listener)),
        kill: () => void child.kill('SIGKILL'),
        stops: 'at once',
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

/** The reply a frame from an instance stands for. */
function replyOf(head: FrameHead, items: (ItemTensors | null)[]): WorkerReply {
  if (head.kind === 'failed')
    return {
      kind: 'failed',
      id: head.id,
      message: head.message,
      items: [],
      ...(head.notOnePerItem === true ? { notOnePerItem: true as const } : {}),
    };
  if (head.kind === 'result')
    return {
      kind: 'result',
      id: head.id,
      outputs: items.map((item, i) =>
        head.failed[i] !== null && head.failed[i] !== undefined
          ? { failed: head.failed[i]!, ...(head.codes?.[i] ? { code: head.codes[i] } : {}) }
          : item!,
      ),
    };
  throw new Error(`an instance sent a '${head.kind}' frame`);
}
