import { EventOrder } from '../../src/core/clock.js';
import { createBatcher, type BatchingConfig } from '../../src/core/create-batcher.js';
import { EventLog } from '../../src/core/event-log.js';
import type { Batch, Executor, Outcome, RejectReason, SubmitResult } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';

/** A run the executor saw: when it started, what it held, whether it failed. */
export interface RunRecord {
  startMs: number;
  inputs: number[];
  failed: boolean;
}

/**
 * A model on the virtual clock: a run of n items takes `latencyMs(n)`; it fails when it holds a
 * poisoned input (`poisoned(input)`) or when `down(startMs)`. Inputs come back doubled.
 */
export class FaultyExecutor implements Executor<number, number> {
  readonly runs: RunRecord[] = [];

  constructor(
    private readonly clock: VirtualClock,
    private readonly latencyMs: (size: number) => number,
    public poisoned: (input: number) => boolean = () => false,
    public down: (startMs: number) => boolean = () => false,
  ) {}

  start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
    const startMs = this.clock.now();
    const inputs = [...batch.inputs];
    const failed = this.down(startMs) || inputs.some(this.poisoned);
    this.runs.push({ startMs, inputs, failed });
    this.clock.schedule(
      startMs + this.latencyMs(inputs.length),
      () => done(failed ? new Error(`bad run of [${inputs.join(' ')}]`) : inputs.map((x) => x * 2)),
      EventOrder.completion,
    );
  }
}

export interface Answer {
  id: string;
  kind: Outcome<number>['kind'] | `rejected:${RejectReason}`;
  atMs: number;
  outcome?: Outcome<number>;
  refusal?: SubmitResult<number, number>;
}

/** The batcher exactly as serve and simulate build it, on a virtual clock with a scriptable model. */
export function makePolicyBatcher(
  config: Partial<BatchingConfig>,
  latencyMs: (size: number) => number = (n) => 5 + 2 * n,
) {
  const clock = new VirtualClock();
  const executor = new FaultyExecutor(clock, latencyMs);
  const batcher = createBatcher<number, number>(
    { maxBatchSize: 8, batchWindowMs: 0, maxQueueSize: 128, requestTimeoutMs: 1000, instances: 1, ...config },
    clock,
    executor,
  );
  const log = new EventLog<number, number>(batcher);
  batcher.addObserver(log);
  const answers: Answer[] = [];
  /** Submits request `id` (input `input`) at `atMs`. */
  const submitAt = (atMs: number, id: string, input = Number(id.replace(/\D/g, '')) || 0, timeoutMs?: number) =>
    clock.schedule(
      atMs,
      () => {
        const result = batcher.submit(
          id,
          input,
          (outcome) => answers.push({ id, kind: outcome.kind, atMs: clock.now(), outcome }),
          timeoutMs,
        );
        if (!result.admitted)
          answers.push({ id, kind: `rejected:${result.reason}`, atMs: clock.now(), refusal: result });
      },
      EventOrder.arrival,
    );
  return { clock, executor, batcher, answers, submitAt, events: log.events };
}
