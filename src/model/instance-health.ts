/** What an instance pool says of its instances: to the probes (health) and to the log (events). */

/** Failures in a row after which an instance counts as unable to recover (liveness fails). */
export const FAILURES_UNTIL_NOT_LIVE = 3;

/** Where an instance stands: only `up` instances take batches. */
export type InstanceState = 'loading' | 'up' | 'stuck' | 'restarting' | 'closed';

export interface InstanceHealth {
  index: number;
  state: InstanceState;
  /** Times it was replaced after a crash, a failed start or being stuck. */
  restarts: number;
  /** Crashes, failed starts and stuck batches since its last good batch. */
  consecutiveFailures: number;
  /** Why it last failed. */
  lastError: string | undefined;
  /** How long its current batch has run (ms), when it runs one. */
  busyForMs: number | undefined;
  pid: number | undefined;
}

/** What readiness and liveness say about one model version's instances. */
export interface ModelHealth {
  instances: InstanceHealth[];
  /** Instances that can take a batch now: up (idle or busy within the limit). */
  healthy: number;
  /** At least one instance is healthy: /readyz answers 200. */
  ready: boolean;
  /**
   * False when an instance cannot come back by itself: it failed FAILURES_UNTIL_NOT_LIVE times in
   * a row (a model file that is gone, a model that crashes on every batch), or it is a thread
   * stuck inside native code (onnxruntime). /healthz then answers 503 so that the process is restarted.
   */
  live: boolean;
  /** Why not ready, or not live. */
  reason: string | undefined;
}

/**
 * What happened to an instance, for the server's log: an operator whose probe failed, or whose
 * requests were answered 500 or 503, reads there which instance went down, why, and whether it came back.
 */
export type InstanceEvent =
  /** It crashed, could not start, or was stuck and killed; it is restarted after `restartInMs`. */
  | { kind: 'down'; index: number; why: string; failuresInARow: number; restartInMs: number; live: boolean }
  /** A thread stuck inside native code: out of the rotation until its run returns (it cannot be stopped). */
  | { kind: 'stuck'; index: number; why: string }
  /** In the rotation: restarted (`restarts` so far), a stuck thread whose run returned, or an instance added while serving. */
  | { kind: 'up'; index: number; restarts: number; after: 'restart' | 'stuck' | 'start' }
  /** A code model's `finalize` threw as the instance closed (it is closed all the same). */
  | { kind: 'finalize_failed'; index: number; why: string };

/**
 * Readiness and liveness from the instances' states. Only an instance that cannot be stopped in
 * the middle of its batch is ever `stuck` (one that can is replaced), so a stuck one is stuck for
 * good as far as the server can tell.
 */
export function modelHealth(instances: InstanceHealth[]): ModelHealth {
  const healthy = instances.filter((instance) => instance.state === 'up').length;
  const failing = instances.find((instance) => instance.consecutiveFailures >= FAILURES_UNTIL_NOT_LIVE);
  const stuck = instances.find((instance) => instance.state === 'stuck');
  const live = failing === undefined && stuck === undefined;
  let reason: string | undefined;
  if (failing !== undefined)
    reason = `model instance ${failing.index} failed ${failing.consecutiveFailures} times in a row (${failing.lastError ?? 'unknown'})`;
  else if (stuck !== undefined)
    reason = `model instance ${stuck.index} is a thread stuck inside the model (native code) and cannot be stopped`;
  else if (healthy === 0)
    reason = `no healthy model instance (${instances.map((instance) => instance.state).join(', ')})`;
  return { instances, healthy, ready: healthy > 0, live, reason };
}
