/**
 * Time, injected. The core reads time only through a Clock (architecture.md rule 1), so the same
 * batcher runs on real time in `serve` and on a virtual clock in `simulate` and in tests.
 */

/**
 * Order of events that fall on the same instant (architecture.md, "Batching semantics"): batch
 * completions, then deadline expiries, then window closings, then arrivals. A virtual clock
 * honours it; a real clock, where two timers rarely share an instant, may ignore it.
 */
export const EventOrder = {
  completion: 0,
  expiry: 1,
  window: 2,
  arrival: 3,
} as const;
export type EventOrder = (typeof EventOrder)[keyof typeof EventOrder];

/** Opaque handle of a scheduled callback. */
export type TimerHandle = { readonly __timer: unique symbol } | object;

export interface Clock {
  /** Current time in milliseconds (a float, from an arbitrary origin). */
  now(): number;
  /** Calls `fn` once at `atMs` (or as soon as possible after it). */
  schedule(atMs: number, fn: () => void, order?: EventOrder): TimerHandle;
  /** Cancels a scheduled callback; cancelling one that already ran is a no-op. */
  cancel(handle: TimerHandle): void;
}
