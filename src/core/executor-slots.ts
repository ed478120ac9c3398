import type { BatchRun } from './batch-run.js';
import { Mailboxes } from './mailboxes.js';
import type { Batch, PendingRequest } from './types.js';

/**
 * The executor slots: slot i is model instance i, with the batch it runs, whether it takes
 * batches at all (a crashed, restarting or stuck instance does not, nor one being retired) and,
 * with `mailbox`, the batch handed to it while it runs one. The batcher places batches here and
 * frees them; the counts the queue bound, the policy and the snapshots read on every arrival are
 * kept running. Their number changes while it runs (`resize`): slots beyond it are retired, each
 * once its batches (running and in its mailbox) have ended, from the highest down.
 */
export class ExecutorSlots<I, O> {
  private readonly runs: (BatchRun<I, O> | undefined)[];
  /** Whether slot i takes batches: its instance is up and the slot is not being retired (what the passes read). */
  private readonly up: boolean[];
  /** Whether instance i is up, retired or not (a retiring slot's failed batch is still isolated on it). */
  private readonly healthy: boolean[];
  /** The slots wanted: those at and above it are retiring (`runs` keeps them until their batches end). */
  private wanted: number;
  /** Told of each slot retired, once its batches have ended (the highest first). */
  onRetired: ((index: number) => void) | undefined;
  /** With `mailbox`: the batch handed to instance i while it runs one (it starts when that ends). */
  readonly mailboxes: Mailboxes<I, O> | undefined;
  /** Slots that are up and idle: what the policy may dispatch to. */
  free: number;
  /** Batches handed out: running, or waiting in a mailbox. */
  busy = 0;
  /** Items in handed-out batches not answered yet. */
  private unanswered = 0;

  /** `mailboxDepth`: batches each instance's mailbox holds (0: no mailboxes). */
  constructor(instances: number, mailboxDepth: number) {
    this.runs = new Array<BatchRun<I, O> | undefined>(instances).fill(undefined);
    this.up = new Array<boolean>(instances).fill(true);
    this.healthy = new Array<boolean>(instances).fill(true);
    this.mailboxes = mailboxDepth > 0 ? new Mailboxes<I, O>(instances, mailboxDepth) : undefined;
    this.free = instances;
    this.wanted = instances;
  }

  /** The instances wanted (slots being retired are not counted). */
  get count(): number {
    return this.wanted;
  }

  /** Slots there are, those being retired included. */
  get present(): number {
    return this.runs.length;
  }

  isUp(index: number): boolean {
    return this.healthy[index] === true;
  }

  /** Marks instance `index` up or down; false when nothing changed (or there is no such instance). */
  setUp(index: number, up: boolean): boolean {
    if (this.healthy[index] === undefined || this.healthy[index] === up) return false;
    this.healthy[index] = up;
    if (index < this.wanted) this.takes(index, up);
    return true;
  }

  /** Slot `index` takes batches (or stops taking them), keeping `free` right. */
  private takes(index: number, takes: boolean): void {
    if (this.up[index] === takes) return;
    this.up[index] = takes;
    if (this.runs[index] === undefined) this.free += takes ? 1 : -1;
  }

  /**
   * `count` slots from now on. Growing adds idle slots (up, or with `newUp` false down until
   * `setUp` says their instance is), or takes back slots still being retired; shrinking retires
   * the highest: they take no new batch, and each is gone (`onRetired`) once the batches it runs
   * and holds have ended, which for an idle one at the top is now.
   */
  resize(count: number, newUp: boolean): void {
    const before = this.wanted;
    this.wanted = count;
    for (let index = count; index < before; index++) this.takes(index, false);
    for (let index = before; index < Math.min(count, this.runs.length); index++)
      this.takes(index, this.healthy[index] === true);
    for (let index = this.runs.length; index < count; index++) {
      this.runs.push(undefined);
      this.up.push(newUp);
      this.healthy.push(newUp);
      this.mailboxes?.add();
      if (newUp) this.free++;
    }
    this.trim();
  }

  /** Drops retired slots from the top while they are idle, telling `onRetired` of each. */
  private trim(): void {
    for (let last = this.runs.length - 1; last >= this.wanted; last--) {
      if (this.runs[last] !== undefined || this.mailboxes?.at(last) !== undefined) return;
      this.runs.pop();
      this.up.pop();
      this.healthy.pop();
      this.mailboxes?.remove();
      this.onRetired?.(last);
    }
  }

  /** Items waiting in mailboxes: until their batch starts they count as queued. */
  get waitingInMailboxes(): number {
    return this.mailboxes?.waiting() ?? 0;
  }

  /** Items inside running batches that have not been answered yet. */
  get runningRequests(): number {
    return this.unanswered - this.waitingInMailboxes;
  }

  /** Size of the batch each slot is running (0 when idle). */
  runningBatchSizes(): number[] {
    return this.runs.map((run) => (run === undefined ? 0 : run.inputs.length));
  }

  /** When the oldest running batch started (ms), if every instance runs one; undefined while one is idle. */
  oldestStartWhenAllBusyMs(): number | undefined {
    let oldestMs: number | undefined;
    for (let index = 0; index < this.wanted; index++) {
      const run = this.runs[index];
      if (run === undefined) return undefined;
      if (oldestMs === undefined || run.startedAtMs < oldestMs) oldestMs = run.startedAtMs;
    }
    return oldestMs;
  }

  /** Running batches, and those waiting in a mailbox. */
  *handedOut(): Generator<BatchRun<I, O>> {
    for (const run of this.runs) if (run !== undefined) yield run;
    if (this.mailboxes !== undefined) yield* this.mailboxes.runs();
  }

  /** How many batches may be handed out at once: `handedOutAt` reads indexes below it. */
  get handedOutCapacity(): number {
    return this.runs.length * (1 + (this.mailboxes?.depth ?? 0));
  }

  /** Handed-out batch `index`: instance `index`'s running batch, then (from `count`) the mailboxes' batches. */
  handedOutAt(index: number): BatchRun<I, O> | undefined {
    return index < this.runs.length ? this.runs[index] : this.mailboxes?.heldAt(index - this.runs.length);
  }

  /** The first instance that is up and idle (call only while `free > 0`). */
  idleInstance(): number {
    let instance = 0;
    while (this.runs[instance] !== undefined || !this.up[instance]) instance++;
    return instance;
  }

  /**
   * A busy instance, up, whose mailbox has room (the emptiest); -1 when there is none (or no
   * mailboxes). Not one whose batch has run past the last deadline of its requests (every one
   * answered 504): it may never end (an instance about to be found stuck), and a batch handed
   * behind it would fail with it when the instance is killed, while another instance could run it.
   */
  instanceWithMailboxRoom(nowMs: number): number {
    const mailboxes = this.mailboxes;
    if (mailboxes === undefined) return -1;
    let found = -1;
    for (let instance = 0; instance < this.runs.length; instance++) {
      const run = this.runs[instance];
      if (mailboxes.hasRoom(instance) && run !== undefined && this.up[instance] && run.lastDeadlineAtMs > nowMs) {
        if (mailboxes.at(instance) === undefined) return instance;
        if (found < 0) found = instance;
      }
    }
    return found;
  }

  /** Starts `run` on its (idle) instance, or (`inMailbox`) hands it to that busy instance's mailbox. */
  place(run: BatchRun<I, O>, inMailbox: boolean): void {
    if (inMailbox) (this.mailboxes as Mailboxes<I, O>).put(run.instance, run);
    else {
      this.runs[run.instance] = run;
      this.free--;
    }
    this.busy++;
    this.unanswered += run.inputs.length;
  }

  /**
   * `run` is over: its slot goes to the batch in its instance's mailbox, which is returned (it
   * starts now), or becomes free.
   */
  release(run: BatchRun<I, O>): BatchRun<I, O> | undefined {
    this.busy--;
    const mailboxes = this.mailboxes;
    // Ended before the batch in its instance's slot: it crashed, that batch is re-running parts
    // (isolation), or an inline model failed it before its turn.
    if (this.runs[run.instance] !== run && mailboxes?.take(run.instance, run) === true) return undefined;
    const next = mailboxes?.at(run.instance);
    if (next !== undefined && this.runs[run.instance] === run) {
      mailboxes?.take(run.instance, next);
      this.runs[run.instance] = next;
      return next;
    }
    this.runs[run.instance] = undefined;
    if (this.up[run.instance]) this.free++;
    else if (run.instance >= this.wanted) this.trim(); // a retiring slot whose last batch ended
    return undefined;
  }

  /** A running request is being answered (before its phase changes). */
  answering(request: PendingRequest<I, O>): void {
    this.unanswered -= request.size;
    if (this.mailboxes?.holds(request.batch) === true) this.mailboxes.answering(request.size);
  }

  /** `count` running items of `batch` are being answered at once. */
  answeringAll(batch: Batch<I, O>, count: number): void {
    this.unanswered -= count;
    if (this.mailboxes?.holds(batch) === true) this.mailboxes.answering(count);
  }
}
