import { performance } from 'node:perf_hooks';
import { BatchlineError } from '../errors.js';
import { textOf } from '../message-text.js';
import type {
  InstanceHandle,
  InstanceLauncher,
  InstanceListener,
  LaunchedInstance,
  RunLimits,
} from './instance-handle.js';
import { FAILURES_UNTIL_NOT_LIVE, modelHealth, type InstanceEvent, type ModelHealth } from './instance-health.js';
import { RestartBackoff } from './restart-backoff.js';
import { closeSlotOnce } from './slot-close.js';
import { StuckSweep } from './stuck-sweep.js';
import { loadingSlot, slotHealth, type Busy, type Run, type Slot } from './instance-slot.js';
import type { ItemTensors, TensorSpec } from './tensor-spec.js';

export interface PoolOptions {
  /** First wait before restarting a failed instance (ms); it doubles with each failure in a row. */
  firstBackoffMs?: number;
  maxBackoffMs?: number;
  /** How often busy instances are checked against their batch's limit (ms). */
  sweepMs?: number;
  now?: () => number;
  /** Stops the first loads of the instances that stop at once: InstanceLauncher. */
  loadSignal?: AbortSignal;
}

/**
 * Runs what an instance added while serving must run before it takes batches (a version's
 * warmup batches), through `run` on that instance alone; rejects when the instance cannot serve.
 */
export type InstanceWarmup = (
  index: number,
  run: (items: ItemTensors[]) => Promise<(ItemTensors | Error)[]>,
) => Promise<void>;

/**
 * A model version's instances and the batches they run. It keeps no line of its own: the
 * batcher schedules, and runs a batch on instance i only while the pool says i is up and idle
 * (`watch`). An instance that crashes leaves the rotation and is restarted after a backoff
 * (100 ms, doubling to 10 s); one whose batch runs past its limit is stuck: out of rotation, and
 * stopped and restarted when it stops at once (a process, a code model's thread: instance-handle.ts).
 * A dead instance fails a batch at once, so left in the rotation it would always be the free one
 * and take every batch.
 */
export class InstancePool {
  private readonly slots: Slot[];
  private readonly listeners: InstanceListener[] = [];
  private closed = false;
  /** Aborted by `close`: stops the restarts still loading. */
  private readonly stopLoads = new AbortController();
  /** A code model whose items are JSON values: their schema (from its first instance). */
  inputSchema: object | undefined;
  /** A code model that exports `itemCost` (from its first instance). */
  itemCost = false;
  private readonly now: () => number;
  private readonly backoff: RestartBackoff;
  private readonly stuckSweep: StuckSweep;
  /** What a restarted instance runs before it is up again (`warmRestarts`). */
  private restartWarmup: InstanceWarmup | undefined;

  private constructor(
    private readonly launcher: InstanceLauncher,
    count: number,
    readonly inputs: TensorSpec[],
    readonly outputs: TensorSpec[],
    options: PoolOptions,
  ) {
    this.now = options.now ?? (() => performance.now());
    this.backoff = new RestartBackoff(options.firstBackoffMs, options.maxBackoffMs);
    this.slots = Array.from({ length: count }, (_, index) => loadingSlot(index));
    this.stuckSweep = new StuckSweep(
      this.slots,
      this.now,
      (slot, ranMs, limitMs) => this.stuck(slot, ranMs, limitMs),
      options.sweepMs,
    );
  }

  /** Instances there are: those a batcher is retiring included, until `retire` stops each. */
  get count(): number {
    return this.slots.length;
  }

  /**
   * Starts instances up to `count`, after the ones there are (while serving: an admin PATCH of
   * the version's instances). Each is `loading` until its load ends and `warm` (when given) has
   * run on it, then `up`, told to the watchers (the batcher's slot takes batches from then).
   * Resolves once each is up or failed, with the failures' messages; a failed one stays out of
   * the rotation (`closed`) until the caller retires it.
   */
  async grow(count: number, warm?: InstanceWarmup): Promise<string[]> {
    const added: Slot[] = [];
    for (let index = this.slots.length; index < count; index++) {
      const slot = loadingSlot(index);
      this.slots.push(slot);
      added.push(slot);
    }
    const failures = await Promise.all(added.map((slot) => this.launchAdded(slot, warm)));
    return failures.filter((failure): failure is string => failure !== undefined);
  }

  /** Loads (and warms) an instance added while serving; its failure's message, if it could not start. */
  private launchAdded(slot: Slot, warm: InstanceWarmup | undefined): Promise<string | undefined> {
    return this.loadWarmed(slot, () => warm).then(
      (wentUp) => {
        wentUp('start');
        return undefined;
      },
      (error: unknown) => {
        if (this.closed || slot.state === 'closed') return undefined;
        slot.state = 'closed';
        slot.lastError = `could not start: ${messageOf(error)}`;
        return messageOf(error);
      },
    );
  }

  /**
   * Loads instance `slot.index` and runs the warmup `warmNow()` gives (read once it has loaded) on
   * it, killing it if that fails; resolves with what puts it in the rotation, told `up` after a
   * start or a restart (or killed, the pool closed or the slot retired meanwhile). Until then an
   * exit is held, and told once it is up. An added instance and a restarted one come up so.
   */
  private async loadWarmed(
    slot: Slot,
    warmNow: () => InstanceWarmup | undefined,
  ): Promise<(after: 'start' | 'restart') => void> {
    let launched: InstanceHandle | undefined;
    let exitedEarly: string | undefined;
    const { handle } = await this.launcher(
      (reason) => (launched === undefined ? (exitedEarly = reason) : this.exited(slot.index, launched, reason)),
      slot.index,
      // A load that never ends (an initialize that never settles) does not outlive the pool.
      this.stopLoads.signal,
    );
    const warm = warmNow();
    if (warm !== undefined && !this.closed && slot.state !== 'closed') {
      slot.warming = handle;
      try {
        await warm(slot.index, (items) => handle.run(items));
      } catch (error) {
        // A warmup batch past its stuck limit may still run: a thread in native code is closed once it returns.
        if (handle.stops === 'at once') handle.kill();
        else void handle.close();
        throw error;
      } finally {
        slot.warming = undefined;
      }
    }
    return (after) => {
      launched = handle;
      if (this.closed || slot.state === 'closed') return void handle.kill(); // closed, or retired meanwhile
      slot.handle = handle;
      slot.state = 'up';
      this.tell(slot, { kind: 'up', index: slot.index, restarts: slot.restarts, after });
      if (exitedEarly !== undefined) this.exited(slot.index, handle, exitedEarly);
    };
  }

  /**
   * Stops instance `index`, the last there is, whose batcher slot was retired (it runs nothing
   * now): closed as at the pool's close, a restart or a load in progress stopped with it.
   */
  async retire(index: number): Promise<void> {
    const slot = this.slots[index];
    if (slot === undefined || index !== this.slots.length - 1) return;
    this.slots.pop();
    await this.closeSlot(slot, new Error(`model instance ${index} was retired`));
  }

  /**
   * Has each instance restarted from now on (after a crash, a failed restart or being killed
   * stuck) run `warm` before it is up again: `loading` meanwhile, taking no batch, so its first
   * batches are not the cold ones a warmed version's start-up spared. A failed warmup is a failed
   * restart (backed off and tried again).
   */
  warmRestarts(warm: InstanceWarmup): void {
    this.restartWarmup = warm;
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
    pool.itemCost = launched[0]!.itemCost === true;
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
    return modelHealth(this.slots.map((slot) => slotHealth(slot, nowMs)));
  }

  /**
   * Ends every instance: idle ones are closed, busy ones that stop at once (processes, code models'
   * threads) killed; batches not done fail, and loads in progress are stopped where they can be.
   * A busy thread inside native code closes once its run returns.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.stuckSweep.stop();
    this.stopLoads.abort();
    const error = new Error('the model was closed');
    await Promise.all(this.slots.map((slot) => this.closeSlot(slot, error)));
  }

  private closeSlot(slot: Slot, error: Error): Promise<void> {
    return closeSlotOnce(slot, error, (why) => {
      // Told, not kept as the slot's last event: it changes nothing a later listener must learn.
      for (const listener of this.listeners) listener({ kind: 'finalize_failed', index: slot.index, why });
    });
  }

  private start(slot: Slot, run: Run): void {
    const handle = slot.handle!;
    const busy: Busy = { run, startedAtMs: this.now() };
    slot.busy.push(busy);
    this.stuckSweep.start(); // only `run` starts a batch, and it refuses once the pool is closed
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
    const slot = this.slots[index];
    // Not the current instance: one that was killed when it was stuck, and already replaced (or retired).
    if (this.closed || slot === undefined || slot.state === 'closed' || handle === undefined || slot.handle !== handle)
      return;
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
    const backoffMs = this.backoff.waitMs(slot.consecutiveFailures);
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

  /** Loads a slot's instance again, after its backoff (a crash, a failed restart, a stuck kill). */
  private relaunch(slot: Slot): void {
    slot.retry = undefined;
    if (this.closed) return;
    slot.state = 'loading';
    slot.restarts++;
    this.loadWarmed(slot, () => this.restartWarmup).then(
      (wentUp) => wentUp('restart'),
      (error: unknown) => {
        if (this.closed || slot.state === 'closed') return;
        const message = messageOf(error);
        this.fail(slot, `could not restart: ${message}`, new Error(message));
      },
    );
  }

  /**
   * A busy instance past its batch's stuck limit: one that stops at once is restarted as after a
   * crash; another is out of the rotation until its run returns.
   */
  private stuck(slot: Slot, ranMs: number, limitMs: number): void {
    const handle = slot.handle!;
    if (handle.stops === 'at once') {
      this.fail(
        slot,
        `stuck: a batch ran ${ranMs} ms (limit ${limitMs} ms)`,
        new Error(`model instance ${slot.index} was stuck for ${ranMs} ms and was restarted`),
      );
      handle.kill();
    } else {
      slot.state = 'stuck';
      slot.consecutiveFailures++;
      // A code model's thread is stopped at once, unless it loaded an addon: say which, or the line reads as a bug.
      const addon = handle.nativeAddon === undefined ? '' : `; its code loaded the native addon ${handle.nativeAddon}`;
      slot.lastError = `stuck: a batch has run ${ranMs} ms (limit ${limitMs} ms)${addon}`;
      this.tell(slot, { kind: 'stuck', index: slot.index, why: slot.lastError });
    }
  }
}

/** What a failed load says: a BatchlineError's detail, an Error's message, anything else as text. */
function messageOf(error: unknown): string {
  return error instanceof BatchlineError ? error.detail : error instanceof Error ? error.message : textOf(error);
}
