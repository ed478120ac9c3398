import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Batcher } from '../../src/core/batcher.js';
import { BatcherStats, type BatchStats } from '../../src/core/batcher-stats.js';
import { EventOrder } from '../../src/core/clock.js';
import { createBatcher, type BatchingConfig } from '../../src/core/create-batcher.js';
import { QueuedRequest } from '../../src/core/queued-request.js';
import type { Batch, Executor, Outcome, OutcomeListener, PendingRequest } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';

/**
 * The claim of a request of several items (architecture.md, "Batching semantics"): offered at one
 * instant, it fares as its N items offered then as requests of one, in order, with no pass between
 * them (`Batcher.offerAll`). Two batchers run one random script, one offering a turn's plain calls
 * as one request the way the library (`batch()`) does, the other as requests of one item, and
 * every item must fare alike: its admission or refusal (the door taking the first items it
 * admits), its batch (`RequestQueue.take` splitting a request that does not fit), its outcome and
 * time, the stats and the state after each turn. Scripts mix the bound (below the batch size
 * too), levels, mailboxes, isolation, the breaker, SLA admission, the three policies, synchronous
 * and failing runs, bad items, a close between or within turns, abortAll and an instance down.
 * Not compared: what observers are told per request (the documented difference). Not made: what
 * the library never does with a request of several items (cancel it, give it a deadline or level
 * of its own: such calls are offered alone).
 */

/** A call of a turn: plain (joinable), or with its own deadline or a cancel (the library offers those alone). */
const callArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.record({ timeoutMs: fc.integer({ min: 1, max: 80 }) }) },
  { weight: 1, arbitrary: fc.record({ cancelAfterMs: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ priority: fc.integer({ min: 1, max: 3 }) }) },
);
type Call = { timeoutMs?: number; cancelAfterMs?: number; priority?: number };

const scriptArb = fc.record({
  maxBatchSize: fc.integer({ min: 1, max: 8 }),
  batchWindowMs: fc.integer({ min: 0, max: 20 }),
  // Below the batch size too: a bound that refuses part of a turn.
  maxQueueSize: fc.integer({ min: 1, max: 14 }),
  instances: fc.integer({ min: 1, max: 3 }),
  requestTimeoutMs: fc.integer({ min: 1, max: 120 }),
  priorityLevels: fc.constantFrom(1, 1, 2, 3),
  defaultPriorityLevel: fc.integer({ min: 0, max: 3 }),
  mailbox: fc.constantFrom<BatchingConfig['mailbox']>(false, true, 2),
  isolation: fc.constantFrom<'off' | 'bisect' | 'items'>('off', 'bisect', 'items'),
  /** Whether the breaker is on (the library's default) and after how many failed batches it opens. */
  breakerFailures: fc.constantFrom(0, 1, 3),
  batchPolicy: fc.constantFrom<'fixed' | 'aimd' | 'adaptive'>('fixed', 'fixed', 'aimd', 'adaptive'),
  admission: fc.constantFrom<'queue' | 'sla'>('queue', 'queue', 'sla'),
  /** The library offers its request once it holds the batch limit; without it, a turn's request outgrows a batch. */
  joinBelowLimit: fc.boolean(),
  turns: fc.array(
    fc.record({ atMs: fc.integer({ min: 0, max: 300 }), calls: fc.array(callArb, { minLength: 1, maxLength: 12 }) }),
    { minLength: 1, maxLength: 40 },
  ),
  /** The executor's runs, in the order it is handed them: each one's virtual time, and whether it fails as a whole. */
  // `sync`: done is called inside start, as the library's synchronous function does (a pass within a pass).
  runs: fc.array(fc.record({ delayMs: fc.integer({ min: 0, max: 30 }), fails: fc.boolean(), sync: fc.boolean() }), {
    minLength: 1,
    maxLength: 16,
  }),
  /** Items whose number is a multiple of this come back as an Error (0: none). */
  badEvery: fc.constantFrom(0, 0, 3, 7),
  closeAtMs: fc.option(fc.integer({ min: 0, max: 350 }), { nil: undefined }),
  /** Or a close between two calls of a turn (the library's `close()` called in the middle of one). */
  closeInTurn: fc.option(fc.record({ turn: fc.nat(39), beforeCall: fc.nat(11) }), { nil: undefined }),
  /** When every queued and running call is ended `shutdown` (the library's drain running out). */
  abortAtMs: fc.option(fc.integer({ min: 0, max: 400 }), { nil: undefined }),
  /** An instance down for a while (crashed, restarting): what waits, waits in the queue. */
  instanceDown: fc.option(
    fc.record({
      instance: fc.nat(2),
      fromMs: fc.integer({ min: 0, max: 300 }),
      forMs: fc.integer({ min: 0, max: 100 }),
    }),
    { nil: undefined },
  ),
});
type Script = typeof scriptArb extends fc.Arbitrary<infer T> ? T : never;

/** How one item fared. */
type Fate = { refused: string; atMs: number } | { kind: string; endedIn: string; output?: number; atMs: number };

/** A request of several items the way the library's pending call is one: its items in order, split on demand. */
class ItemsRequest extends QueuedRequest<number, number> {
  constructor(
    public items: number[],
    listener: OutcomeListener<number, number>,
  ) {
    super(`item${items[0]}`, items[0], listener);
    this.size = items.length;
  }

  copyItems(into: number[], at: number): void {
    for (let k = 0; k < this.size; k++) into[at + k] = this.items[k] as number;
  }

  splitOff(count: number): ItemsRequest {
    const rest = new ItemsRequest(this.items.slice(count), this.onOutcome as OutcomeListener<number, number>);
    rest.sequence = this.sequence;
    rest.arrivalAtMs = this.arrivalAtMs;
    rest.deadlineAtMs = this.deadlineAtMs;
    rest.priority = this.priority;
    this.items = this.items.slice(0, count);
    this.size = count;
    return rest;
  }
}

/** What one run of the script shows, item by item and batch by batch. */
interface Run {
  fates: Map<number, Fate>;
  batches: { id: number; instance: number; trigger: string; startedAtMs: number; inputs: number[] }[];
  finished: { id: number; atMs: number; startedAtMs: number; failed: boolean }[];
  runs: { id: number; inputs: number[]; atMs: number }[];
  /** After each turn: the queue's depth, what runs, the counts. */
  afterTurns: unknown[];
  /** The stats snapshot at the end (counts, batch sizes, latency and queue-wait percentiles). */
  stats: BatchStats;
}

function config(s: Script): BatchingConfig {
  return {
    maxBatchSize: s.maxBatchSize,
    batchWindowMs: s.batchWindowMs,
    maxQueueSize: s.maxQueueSize,
    requestTimeoutMs: s.requestTimeoutMs,
    instances: s.instances,
    mailbox: s.mailbox,
    isolation: s.isolation,
    breakerFailures: s.breakerFailures,
    breakerRatio: 0,
    breakerOpenMs: 25,
    batchPolicy: s.batchPolicy,
    targetLatencyMs: 40,
    admission: s.admission,
    priorityLevels: s.priorityLevels,
    defaultPriorityLevel: s.defaultPriorityLevel,
  };
}

/** Runs the script; `together`: a turn's plain calls offered as one request (`offer`), else as requests of one item (`offerAll`). */
function play(s: Script, together: boolean): Run {
  const clock = new VirtualClock();
  const fates = new Map<number, Fate>();
  const runs: Run['runs'] = [];
  let handed = 0;
  const executor: Executor<number, number> = {
    start(batch: Batch<number, number>, done) {
      const run = s.runs[handed++ % s.runs.length] as Script['runs'][number];
      const inputs = [...batch.inputs];
      runs.push({ id: batch.id, inputs, atMs: clock.now() });
      const finish = (): void =>
        done(
          run.fails
            ? new Error('the run failed')
            : inputs.map((x) => (s.badEvery > 0 && x % s.badEvery === 0 ? new Error(`bad ${x}`) : 2 * x)),
        );
      if (run.sync) finish();
      else clock.schedule(clock.now() + run.delayMs, finish, EventOrder.completion);
    },
  };
  const batcher: Batcher<number, number> = createBatcher(config(s), clock, executor);
  const settle = (item: number, outcome: Outcome<number>): void => {
    expect(fates.has(item), `item ${item} answered twice`).toBe(false);
    fates.set(item, {
      kind: outcome.kind,
      endedIn: outcome.endedIn,
      ...(outcome.kind === 'ok' ? { output: outcome.output as number } : {}),
      atMs: clock.now(),
    });
  };
  const ok = (output: number | Error, item: number): void =>
    settle(item, { kind: 'ok', output: output as number, endedIn: 'running' });
  const listener: OutcomeListener<number, number> = {
    outcome: (outcome, request) => {
      for (const item of itemsOf(request)) settle(item, outcome);
    },
    answered: (output, request) => ok(output, itemsOf(request)[0] as number),
    answeredItems: (results, from, request) =>
      itemsOf(request).forEach((item, k) => ok(results[from + k] as number, item)),
    itemOutcome: (index, outcome, request) => settle(itemsOf(request)[index] as number, outcome),
  };
  const stats = new BatcherStats(batcher, clock, s.maxBatchSize);
  const batches: Run['batches'] = [];
  const finished: Run['finished'] = [];
  batcher.addObserver({
    batchStarted: (batch) =>
      batches.push({
        id: batch.id,
        instance: batch.instance,
        trigger: batch.trigger,
        startedAtMs: batch.startedAtMs,
        inputs: [...batch.inputs],
      }),
    batchFinished: (batch, nowMs, error) =>
      finished.push({ id: batch.id, atMs: nowMs, startedAtMs: batch.startedAtMs, failed: error !== undefined }),
  });
  const afterTurns: unknown[] = [];
  let next = 0;
  s.turns.forEach((turn, t) => {
    const first = next;
    next += turn.calls.length;
    clock.schedule(
      turn.atMs,
      () => {
        // The turn's plain calls not offered yet, as the library holds them; offered when they
        // reach the limit read at the first (joinBelowLimit), before a call with options or a
        // close, and at the turn's end.
        let held: number[] = [];
        let room = Number.POSITIVE_INFINITY;
        const offerHeld = (): void => {
          if (held.length === 0) return;
          const items = held;
          held = [];
          if (together) {
            const refused = batcher.offer(new ItemsRequest(items, listener));
            if (refused === undefined) return;
            const turnedAway = refused.rest === undefined ? items : itemsOf(refused.rest);
            for (const item of turnedAway) fates.set(item, { refused: refused.reason, atMs: clock.now() });
            return;
          }
          const results = batcher.offerAll(items.map((item) => new ItemsRequest([item], listener)));
          results.forEach((refused, k) => {
            if (refused !== undefined) fates.set(items[k] as number, { refused: refused.reason, atMs: clock.now() });
          });
        };
        turn.calls.forEach((call: Call, k) => {
          const item = first + k;
          if (s.closeInTurn?.turn === t && s.closeInTurn.beforeCall === k) {
            offerHeld();
            batcher.close();
          }
          if (call.timeoutMs === undefined && call.cancelAfterMs === undefined && call.priority === undefined) {
            if (held.length === 0) room = s.joinBelowLimit ? batcher.policySettings.limit : Number.POSITIVE_INFINITY;
            held.push(item);
            if (held.length >= room) offerHeld();
            return;
          }
          // A call with options is a request of its own, after the plain calls before it.
          offerHeld();
          const request = new ItemsRequest([item], listener);
          const refused = batcher.offer(request, call.timeoutMs, call.priority);
          if (refused !== undefined) {
            fates.set(item, { refused: refused.reason, atMs: clock.now() });
            return;
          }
          if (call.cancelAfterMs !== undefined)
            clock.schedule(clock.now() + call.cancelAfterMs, () => batcher.cancel(request));
        });
        offerHeld();
        afterTurns.push({
          atMs: clock.now(),
          queueDepth: batcher.queueDepth,
          running: batcher.runningCount,
          counts: structuredClone(batcher.counts),
        });
      },
      EventOrder.arrival,
    );
  });
  if (s.closeAtMs !== undefined) clock.schedule(s.closeAtMs, () => batcher.close());
  if (s.abortAtMs !== undefined) clock.schedule(s.abortAtMs, () => batcher.abortAll());
  const down = s.instanceDown;
  if (down !== undefined) {
    clock.schedule(down.fromMs, () => batcher.setInstanceUp(down.instance, false));
    clock.schedule(down.fromMs + down.forMs, () => batcher.setInstanceUp(down.instance, true));
  }
  clock.run(1_000_000);
  expect(batcher.idle).toBe(true);
  expect(fates.size, 'every call refused or answered').toBe(next);
  return { fates, batches, finished, runs, afterTurns, stats: stats.snapshot() };
}

function itemsOf(request: PendingRequest<number, number>): number[] {
  return (request as ItemsRequest).items;
}

describe('a request of N items offered at one instant', () => {
  it('fares as N requests of one item offered together then, in order: batches, refusals, outcomes, times, counts', () => {
    fc.assert(
      fc.property(scriptArb, (s) => {
        const alone = play(s, false);
        const together = play(s, true);
        expect(together.batches).toEqual(alone.batches);
        expect(together.runs).toEqual(alone.runs);
        expect(together.finished).toEqual(alone.finished);
        expect(new Map([...together.fates].sort(([a], [b]) => a - b))).toEqual(
          new Map([...alone.fates].sort(([a], [b]) => a - b)),
        );
        expect(together.afterTurns).toEqual(alone.afterTurns);
        expect(together.stats).toEqual(alone.stats);
      }),
      { numRuns: 150 },
    );
  });

  it('counts each item of a request that times out in the queue (timeoutsWhileQueued), as it counts its timeouts', () => {
    // What the property found: a request of two items expired while queued counted 1, two calls 2.
    const script: Script = {
      maxBatchSize: 1,
      batchWindowMs: 0,
      maxQueueSize: 3,
      instances: 1,
      requestTimeoutMs: 1,
      priorityLevels: 1,
      defaultPriorityLevel: 0,
      mailbox: false,
      isolation: 'off',
      breakerFailures: 0,
      batchPolicy: 'fixed',
      admission: 'queue',
      joinBelowLimit: false,
      // The three are offered together; the first runs at once, alone; the next two (one request) wait for its end at 1 ms, their deadline.
      turns: [{ atMs: 0, calls: [{}, {}, {}] }],
      runs: [{ delayMs: 1, fails: false, sync: false }],
      badEvery: 0,
      closeAtMs: undefined,
      closeInTurn: undefined,
      abortAtMs: undefined,
      instanceDown: undefined,
    };
    for (const together of [false, true]) {
      const counts = play(script, together).stats.counts;
      expect(counts.outcomes).toMatchObject({ ok: 1, timeout: 2 });
      expect(counts.timeoutsWhileQueued).toBe(2);
    }
  });
});
