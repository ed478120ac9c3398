import { BatchlineError } from '../errors.js';
import { textOf } from '../message-text.js';
import type { InstanceEvent, InstanceHealth, InstanceState, ModelHealth } from './instance-health.js';
import type { ItemTensors, TensorSpec } from './tensor-spec.js';

/** One running model instance: a thread or a child process with its own onnxruntime session. */
export interface InstanceHandle {
  /** Runs one batch; rejects when the instance fails or ends during the run. */
  run(items: readonly ItemTensors[]): Promise<(ItemTensors | Error)[]>;
  /** Ends it now. Only called on a thread when it is idle (see `killableWhileRunning`). */
  kill(): void;
  /** Lets it release its session and end; resolves when it has ended. */
  close(): Promise<void>;
  /** A process can be killed in the middle of a run; a thread inside onnxruntime cannot (architecture.md, "Model instances"). */
  readonly killableWhileRunning: boolean;
  /**
   * A thread that runs JavaScript (a code model): `worker.terminate()` interrupts it even in the
   * middle of a batch, so closing it never waits for a batch that does not end.
   */
  readonly interruptible?: boolean;
  /** The instance's process id, when it is a process. */
  readonly pid: number | undefined;
}

export interface LaunchedInstance {
  handle: InstanceHandle;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
  /** A code model whose items are JSON values: their schema. */
  inputSchema?: object;
}

/**
 * Starts instance `index` of a version (again, after a crash); `onExit` is called once if the
 * instance ends without being asked to. `loadSignal` stops its load where the instance can be
 * killed (a process): a version removed, or a server stopped, while its model loads does not
 * wait for a load that may never end (a code model's initialize that never settles).
 */
export type InstanceLauncher = (
  onExit: (reason: string) => void,
  index: number,
  loadSignal?: AbortSignal,
) => Promise<LaunchedInstance>;

/** Limits of one batch, in ms from its start. */
export interface RunLimits {
  /** After this long, the batch's instance is stuck: out of rotation, a process is killed and restarted. */
  stuckAfterMs: number;
}

/**
 * Told what happens to an instance: it goes `down` or is `stuck` (it stops taking batches: the
 * batcher's slot `index` is out), or it is `up` again. The batcher and the log hear the same.
 */
export type InstanceListener = (event: InstanceEvent) => void;

export interface PoolOptions {
  /** First wait before restarting a failed instance (ms); it doubles with each failure in a row. */
  firstBackoffMs?: number;
  maxBackoffMs?: number;
  /** How often busy instances are checked against their batch's limit (ms). */
  sweepMs?: number;
  now?: () => number;
  /** Stops the first loads of the instances that can be killed (processes): InstanceLauncher. */
  loadSignal?: AbortSignal;
}

/** Failures in a row after which an instance counts as unable to recover (liveness fails). */
const FAILURES_UNTIL_NOT_LIVE = 3;
const DEFAULT_FIRST_BACKOFF_MS = 100;
const DEFAULT_MAX_BACKOFF_MS = 10_000;
const DEFAULT_SWEEP_MS = 50;

interface Run {
  items: readonly ItemTensors[];
  limits: RunLimits;
  resolve: (outputs: (ItemTensors | Error)[]) => void;
  reject: (error: Error) => void;
}

interface Busy {
  run: Run;
  /** When it reached the head of its instance's line (a batch posted behind another starts when that ends). */
  startedAtMs: number;
}

interface Slot {
  index: number;
  state: InstanceState;
  handle: InstanceHandle | undefined;
  /** The batches posted to it, in the order it runs them: the first runs, the others wait in its mailbox. */
  busy: Busy[];
  restarts: number;
  consecutiveFailures: number;
  lastError: string | undefined;
  retry: NodeJS.Timeout | undefined;
  /** What was last told of it: a new watcher hears it again while the instance is out. */
  lastEvent: InstanceEvent | undefined;
}

/**
 * A model version's instances and the batches they run. It keeps no line of its own: the
 * batcher schedules, and runs a batch on instance i only while the pool says i is up and idle
 * (`watch`). An instance that crashes leaves the rotation and is restarted after a backoff
 * (100 ms, doubling to 10 s); one whose batch runs past its limit is stuck: out of rotation, and
 * killed and restarted when it is a process. A dead instance fails a batch at once, so left in
 * the rotation it would always be the free one and take every batch.
 */
export class InstancePool {
  private readonly slots: Slot[];
  private readonly listeners: InstanceListener[] = [];
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;
  /** A code model whose items are JSON values: their schema (from its first instance). */
  inputSchema: object | undefined;
  private readonly now: () => number;
  private readonly firstBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly sweepMs: number;

  private constructor(
    private readonly launcher: InstanceLauncher,
    count: number,
    readonly inputs: TensorSpec[],
    readonly outputs: TensorSpec[],
    options: PoolOptions,
  ) {
    this.now = options.now ?? (() => performance.now());
    this.firstBackoffMs = options.firstBackoffMs ?? DEFAULT_FIRST_BACKOFF_MS;
    this.maxBackoffMs = options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
    this.sweepMs = options.sweepMs ?? DEFAULT_SWEEP_MS;
    this.slots = Array.from({ length: count }, (_, index) => ({
      index,
      state: 'loading',
      handle: undefined,
      busy: [],
      restarts: 0,
      consecutiveFailures: 0,
      lastError: undefined,
      retry: undefined,
      lastEvent: undefined,
    }));
  }

  /** Starts `count` instances; fails (and ends those that started) if any cannot load. */
  static async start(launcher: InstanceLauncher, count: number, options: PoolOptions = {}): Promise<InstancePool> {
    let pool: InstancePool | undefined;
    const exits: (string | undefined)[] = new Array<string | undefined>(count).fill(undefined);
    const handles: (InstanceHandle | undefined)[] = new Array<InstanceHandle | undefined>(count).fill(undefined);
    const settled = await Promise.allSettled(
      Array.from({ length: count }, (_, index) =>
        launcher(
          (reason) => (pool === undefined ? (exits[index] = reason) : pool.exited(index, handles[index], reason)),
          index,
          options.loadSignal,
        ),
      ),
    );
    const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed !== undefined) {
      for (const result of settled) if (result.status === 'fulfilled') result.value.handle.kill();
      throw failed.reason;
    }
    const launched = settled.map((result) => (result as PromiseFulfilledResult<LaunchedInstance>).value);
    pool = new InstancePool(launcher, count, launched[0]!.inputs, launched[0]!.outputs, options);
    pool.inputSchema = launched[0]!.inputSchema;
    launched.forEach((instance, index) => {
      const slot = pool!.slots[index]!;
      slot.handle = handles[index] = instance.handle;
      slot.state = 'up';
      // It died between loading and now: treat it as any crash.
      if (exits[index] !== undefined) pool!.exited(index, instance.handle, exits[index]!);
    });
    return pool;
  }

  /**
   * Runs a batch on instance `index`, which must be up. The batcher's slot `index` is free, or
   * the batch goes to the instance's mailbox: it is posted at once and runs after the one before.
   */
  run(index: number, items: readonly ItemTensors[], limits: RunLimits): Promise<(ItemTensors | Error)[]> {
    if (this.closed) return Promise.reject(new Error('the model was closed'));
    const slot = this.slots[index];
    if (slot === undefined || slot.state !== 'up')
      return Promise.reject(new Error(`model instance ${index} cannot take a batch (${slot?.state})`));
    return new Promise((resolve, reject) => this.start(slot, { items, limits, resolve, reject }));
  }

  /**
   * Tells `listener` why each instance that takes no batches now is out (what it was last told:
   * down or stuck), then every instance that goes down, is stuck or comes back.
   */
  watch(listener: InstanceListener): void {
    this.listeners.push(listener);
    for (const { lastEvent } of this.slots) if (lastEvent !== undefined && lastEvent.kind !== 'up') listener(lastEvent);
  }

  /** Called once a slot's state says what `event` says (an instance takes batches only when `up`). */
  private tell(slot: Slot, event: InstanceEvent): void {
    slot.lastEvent = event;
    for (const listener of this.listeners) listener(event);
  }

  /** At least one instance is up: cheap enough to ask for every request. */
  get ready(): boolean {
    for (const slot of this.slots) if (slot.state === 'up') return true;
    return false;
  }

  health(): ModelHealth {
    const nowMs = this.now();
    const instances = this.slots.map(
      (slot): InstanceHealth => ({
        index: slot.index,
        state: slot.state,
        restarts: slot.restarts,
        consecutiveFailures: slot.consecutiveFailures,
        lastError: slot.lastError,
        busyForMs: slot.busy[0] === undefined ? undefined : nowMs - slot.busy[0].startedAtMs,
        pid: slot.handle?.pid,
      }),
    );
    const healthy = instances.filter((instance) => instance.state === 'up').length;
    const failing = instances.filter((instance) => instance.consecutiveFailures >= FAILURES_UNTIL_NOT_LIVE);
    const stuckForGood = this.slots.filter(
      (slot) => slot.state === 'stuck' && slot.handle?.killableWhileRunning === false,
    );
    const live = failing.length === 0 && stuckForGood.length === 0;
    let reason: string | undefined;
    if (!live) {
      reason =
        failing.length > 0
          ? `model instance ${failing[0]!.index} failed ${failing[0]!.consecutiveFailures} times in a row (${failing[0]!.lastError ?? 'unknown'})`
          : `model instance ${stuckForGood[0]!.index} is a thread stuck inside the model and cannot be stopped`;
    } else if (healthy === 0) {
      reason = `no healthy model instance (${instances.map((instance) => instance.state).join(', ')})`;
    }
    return { instances, healthy, ready: healthy > 0, live, reason };
  }

  /**
   * Ends every instance: idle ones are closed, busy processes killed, busy threads that run
   * JavaScript terminated; batches not done fail. A busy thread inside onnxruntime closes once
   * its run returns.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.stopSweeper();
    const error = new Error('the model was closed');
    await Promise.all(this.slots.map((slot) => this.closeSlot(slot, error)));
  }

  private async closeSlot(slot: Slot, error: Error): Promise<void> {
    if (slot.retry !== undefined) clearTimeout(slot.retry);
    const handle = slot.handle;
    const busy = slot.busy;
    slot.state = 'closed';
    slot.busy = [];
    for (const { run } of busy) run.reject(error);
    if (handle === undefined) return;
    if (busy.length === 0) return handle.close();
    // A process is killed in the middle of its batch; a thread inside onnxruntime cannot be
    // (terminating it there aborts the whole process): it is closed once its batch is done.
    if (handle.killableWhileRunning) return void handle.kill();
    // A thread running JavaScript is interrupted; closing resolves once it has ended.
    if (handle.interruptible === true) {
      const ended = handle.close();
      handle.kill();
      return ended;
    }
    return handle.close();
  }

  private start(slot: Slot, run: Run): void {
    const handle = slot.handle!;
    const busy: Busy = { run, startedAtMs: this.now() };
    slot.busy.push(busy);
    this.startSweeper();
    handle.run(run.items).then(
      (outputs) => {
        if (!this.ended(slot, busy)) return; // answered already: the instance was stuck and killed
        slot.consecutiveFailures = 0;
        this.cameBackFromStuck(slot); // a thread that came back
        run.resolve(outputs);
      },
      (error: Error) => {
        if (!this.ended(slot, busy)) return;
        this.cameBackFromStuck(slot);
        run.reject(error);
      },
    );
  }

  private cameBackFromStuck(slot: Slot): void {
    if (slot.state !== 'stuck') return;
    slot.state = 'up';
    this.tell(slot, { kind: 'up', index: slot.index, restarts: slot.restarts, after: 'stuck' });
  }

  /** Takes a batch that has ended off its instance's line (false if it was not on it); the next one starts now. */
  private ended(slot: Slot, busy: Busy): boolean {
    const at = slot.busy.indexOf(busy);
    if (at < 0) return false;
    slot.busy.splice(at, 1);
    if (at === 0 && slot.busy[0] !== undefined) slot.busy[0].startedAtMs = this.now();
    return true;
  }

  /** The instance ended without being asked to: its batch fails, and it restarts after a backoff. */
  private exited(index: number, handle: InstanceHandle | undefined, reason: string): void {
    const slot = this.slots[index]!;
    // Not the current instance: one that was killed when it was stuck, and already replaced.
    if (this.closed || slot.state === 'closed' || handle === undefined || slot.handle !== handle) return;
    this.fail(
      slot,
      `exited (${reason})`,
      new Error(`model instance ${index} ${reason === 'killed' ? 'was killed' : `exited (${reason})`}`),
    );
  }

  private fail(slot: Slot, why: string, runError: Error): void {
    const busy = slot.busy;
    slot.busy = [];
    slot.handle = undefined;
    slot.consecutiveFailures++;
    slot.lastError = why;
    slot.state = 'restarting';
    for (const { run } of busy) run.reject(runError);
    const backoffMs = Math.min(this.maxBackoffMs, this.firstBackoffMs * 2 ** (slot.consecutiveFailures - 1));
    slot.retry = setTimeout(() => this.relaunch(slot), backoffMs);
    slot.retry.unref();
    this.tell(slot, {
      kind: 'down',
      index: slot.index,
      why,
      failuresInARow: slot.consecutiveFailures,
      restartInMs: backoffMs,
      live: slot.consecutiveFailures < FAILURES_UNTIL_NOT_LIVE,
    });
  }

  private relaunch(slot: Slot): void {
    slot.retry = undefined;
    if (this.closed) return;
    slot.state = 'loading';
    slot.restarts++;
    let launched: InstanceHandle | undefined;
    let exitedEarly: string | undefined;
    this.launcher(
      (reason) => (launched === undefined ? (exitedEarly = reason) : this.exited(slot.index, launched, reason)),
      slot.index,
    ).then(
      (instance) => {
        launched = instance.handle;
        if (this.closed) return void instance.handle.kill();
        slot.handle = instance.handle;
        slot.state = 'up';
        this.tell(slot, { kind: 'up', index: slot.index, restarts: slot.restarts, after: 'restart' });
        if (exitedEarly !== undefined) this.exited(slot.index, instance.handle, exitedEarly);
      },
      (error: unknown) => {
        if (this.closed) return;
        const message =
          error instanceof BatchlineError ? error.detail : error instanceof Error ? error.message : textOf(error);
        this.fail(slot, `could not restart: ${message}`, new Error(message));
      },
    );
  }

  /** Batches past their limit: a busy instance past `stuckAfterMs` is stuck. */
  private readonly sweep = (): void => {
    const nowMs = this.now();
    for (const slot of this.slots) {
      const busy = slot.busy[0];
      if (busy === undefined || slot.state !== 'up' || nowMs - busy.startedAtMs <= busy.run.limits.stuckAfterMs)
        continue;
      const ranMs = Math.round(nowMs - busy.startedAtMs);
      if (slot.handle!.killableWhileRunning) {
        const handle = slot.handle!;
        this.fail(
          slot,
          `stuck: a batch ran ${ranMs} ms (limit ${Math.round(busy.run.limits.stuckAfterMs)} ms)`,
          new Error(`model instance ${slot.index} was stuck for ${ranMs} ms and was restarted`),
        );
        handle.kill();
      } else {
        slot.state = 'stuck';
        slot.consecutiveFailures++;
        slot.lastError = `stuck: a batch has run ${ranMs} ms (limit ${Math.round(busy.run.limits.stuckAfterMs)} ms)`;
        this.tell(slot, { kind: 'stuck', index: slot.index, why: slot.lastError });
      }
    }
    if (!this.slots.some((slot) => slot.busy.length > 0)) this.stopSweeper();
  };

  private startSweeper(): void {
    if (this.sweeper !== undefined || this.closed) return;
    this.sweeper = setInterval(this.sweep, this.sweepMs);
    this.sweeper.unref();
  }

  private stopSweeper(): void {
    if (this.sweeper === undefined) return;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}
