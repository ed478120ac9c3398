import type { Worker } from 'node:worker_threads';
import { availableCores } from './cpu-cores.js';
import { startThread } from './start-thread.js';
import type { HostReply, HostRequest, WorkerReply, WorkerRequest, WorkerSetup } from './worker-protocol.js';

/** One model instance's session on a shared thread, as its launcher drives it. */
export interface SharedSession {
  /** `transfer`: the buffers that move with it (a batch's, `forThread`). */
  post(request: WorkerRequest, transfer?: readonly ArrayBuffer[]): void;
  /** Set by the launcher: the session's replies. */
  onReply: (reply: WorkerReply) => void;
  /** Set by the launcher: called once when the session has ended, or its thread has. */
  onEnd: (reason: string) => void;
}

interface Thread {
  worker: Worker;
  sessions: Map<number, SharedSession>;
  /** Why it failed, for its sessions' end. */
  error: string | undefined;
}

/**
 * The model threads of `--execution shared`: at most `limit` threads (one a core), each holding
 * the sessions of several models' instances (model-host.ts). An idle thread costs about 9 MB
 * (its V8 isolate and Node's environment) before any model, so a repository of many models
 * that each take a small share of the traffic saves that much a model. What is shared is the
 * thread: the batches of its models run one after the other, a batch stuck in onnxruntime
 * holds its neighbours' back, and a thread that dies ends every instance on it (each is
 * restarted by its own model's pool, as after any crash).
 */
export class ModelThreads {
  private readonly threads: Thread[] = [];
  private nextSession = 0;

  constructor(
    private readonly script: URL,
    readonly limit: number,
  ) {}

  /** Opens a session on the thread with the fewest, starting a new thread while there are fewer than `limit`. */
  open(setup: WorkerSetup): SharedSession {
    const thread = this.pick();
    const id = this.nextSession++;
    const session: SharedSession = {
      post: (request, transfer = []) =>
        thread.worker.postMessage({ kind: 'request', session: id, request } satisfies HostRequest, transfer),
      onReply: () => {},
      onEnd: () => {},
    };
    thread.sessions.set(id, session);
    thread.worker.postMessage({ kind: 'open', session: id, setup } satisfies HostRequest);
    return session;
  }

  /** Threads running, and the sessions on each (for tests and diagnostics). */
  get sessionsByThread(): number[] {
    return this.threads.map((thread) => thread.sessions.size);
  }

  private pick(): Thread {
    let least: Thread | undefined;
    for (const thread of this.threads)
      if (least === undefined || thread.sessions.size < least.sessions.size) least = thread;
    if (least !== undefined && (least.sessions.size === 0 || this.threads.length >= this.limit)) return least;
    return this.start();
  }

  private start(): Thread {
    const thread: Thread = { worker: startThread(this.script), sessions: new Map(), error: undefined };
    this.threads.push(thread);
    thread.worker.on('message', ({ session, reply }: HostReply) => {
      const listener = thread.sessions.get(session);
      if (listener === undefined) return;
      if (reply.kind !== 'ended') return listener.onReply(reply);
      thread.sessions.delete(session);
      listener.onEnd('code 0');
      // The last session gone: the thread ends (a new one starts with the next session).
      if (thread.sessions.size === 0) {
        this.forget(thread);
        void thread.worker.terminate();
      }
    });
    thread.worker.on('error', (error) => (thread.error = `error: ${error.message}`));
    thread.worker.once('exit', (code) => {
      this.forget(thread);
      const reason = thread.error ?? `code ${code}`;
      const sessions = [...thread.sessions.values()];
      thread.sessions.clear();
      for (const session of sessions) session.onEnd(`its shared model thread ended (${reason})`);
    });
    return thread;
  }

  private forget(thread: Thread): void {
    const at = this.threads.indexOf(thread);
    if (at >= 0) this.threads.splice(at, 1);
  }
}

let shared: ModelThreads | undefined;

/** Sessions on each of the process's shared model threads now (none before the first). */
export function sharedThreadSessions(): number[] {
  return shared?.sessionsByThread ?? [];
}

/** The process's shared model threads, one a core it may use (started with the first session). */
export function modelThreads(script: URL): ModelThreads {
  shared ??= new ModelThreads(script, availableCores());
  return shared;
}
