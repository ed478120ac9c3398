import type { InstanceHandle, RunLimits } from './instance-handle.js';
import type { InstanceEvent, InstanceHealth, InstanceState } from './instance-health.js';
import type { ItemTensors } from './tensor-spec.js';

/** A batch posted to an instance, and how its caller is answered. */
export interface Run {
  items: readonly ItemTensors[];
  limits: RunLimits;
  resolve: (outputs: (ItemTensors | Error)[]) => void;
  reject: (error: Error) => void;
}

export interface Busy {
  run: Run;
  /** When it reached the head of its instance's line (a batch posted behind another starts when that ends). */
  startedAtMs: number;
}

/** What the pool knows of one instance: its state, its line of batches, its failures and its end. */
export interface Slot {
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
  /** An added or restarted instance that has loaded and runs its warmup (still `loading`): a close stops it. */
  warming: InstanceHandle | undefined;
  /** Its close, once begun: a retire that the pool's close set off (its batch failed) awaits the same end. */
  closing: Promise<void> | undefined;
}

/** A slot whose instance has not loaded yet. */
export function loadingSlot(index: number): Slot {
  return {
    index,
    state: 'loading',
    handle: undefined,
    busy: [],
    restarts: 0,
    consecutiveFailures: 0,
    lastError: undefined,
    retry: undefined,
    lastEvent: undefined,
    warming: undefined,
    closing: undefined,
  };
}

/** What the probes read of a slot at `nowMs`. */
export function slotHealth(slot: Slot, nowMs: number): InstanceHealth {
  return {
    index: slot.index,
    state: slot.state,
    restarts: slot.restarts,
    consecutiveFailures: slot.consecutiveFailures,
    lastError: slot.lastError,
    busyForMs: slot.busy[0] === undefined ? undefined : nowMs - slot.busy[0].startedAtMs,
    pid: slot.handle?.pid,
  };
}
