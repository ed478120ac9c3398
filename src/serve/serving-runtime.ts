import { BatcherStats } from '../core/batcher-stats.js';
import type { Clock } from '../core/clock.js';
import { createBatcher } from '../core/create-batcher.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import type { ServeConfig } from '../options/serve.js';
import type { AdmissionTarget, ModelBatcher } from './admit.js';
import type { AnswerCounters } from './answer.js';
import { ServeMetrics } from './metrics.js';
import { ModelExecutor } from './model-executor.js';
import type { ServerState, ServerStats } from '../stats-contract/server-stats.js';

export type { ModelBatcher };

/** What exists once the model is loaded: the batcher over it, its stats and metrics. */
export interface LoadedRuntime extends AdmissionTarget {
  stats: BatcherStats<ItemTensors, ItemTensors>;
  metrics: ServeMetrics<ItemTensors, ItemTensors>;
}

/**
 * The server's lifecycle (starting → ready → draining → stopped) and the parts that live with
 * the model. Routes ask it whether to take work; shutdown asks it to drain.
 */
export class ServingRuntime implements AnswerCounters {
  private stateNow: ServerState = 'starting';
  private loaded: LoadedRuntime | undefined;
  private readonly startedAtMs: number;
  /** Responses of POST /v1/infer by status code. */
  readonly responsesByStatus: Record<string, number> = {};

  constructor(
    readonly config: ServeConfig,
    private readonly clock: Clock,
  ) {
    this.startedAtMs = clock.now();
  }

  get state(): ServerState {
    return this.stateNow;
  }

  get runtime(): LoadedRuntime | undefined {
    return this.loaded;
  }

  /** Builds the batcher over a loaded model and starts taking work. */
  attach(model: ServedModel): LoadedRuntime {
    const executor = new ModelExecutor(model, this.clock, this.config.modelLatencyMs);
    const batcher = createBatcher(this.config, this.clock, executor);
    const stats = new BatcherStats(batcher, this.clock, this.config.maxBatchSize);
    const metrics = new ServeMetrics(batcher, this.config.maxBatchSize, model.version);
    this.loaded = {
      model, batcher, stats, metrics,
      requestTimeoutMs: this.config.requestTimeoutMs,
      countResponse: (status) => {
        this.countResponse(status);
        metrics.respond(status);
      },
      countRejection: (reason) => metrics.reject(reason),
    };
    if (this.stateNow === 'starting') this.stateNow = 'ready';
    return this.loaded;
  }

  countResponse(statusCode: number): void {
    this.responsesByStatus[statusCode] = (this.responsesByStatus[statusCode] ?? 0) + 1;
  }

  /** A refusal before the model is attached is not exported: there are no metrics yet. */
  countRejection(reason: string): void {
    this.loaded?.metrics.reject(reason);
  }

  /**
   * Stops admitting, lets queued and running requests finish for up to `timeoutMs` (or until
   * `endDrainNow()`), then answers whatever is left with `shutdown` (HTTP 503). Resolves when
   * every request has its answer.
   */
  async drain(timeoutMs: number): Promise<void> {
    if (this.stateNow === 'draining' || this.stateNow === 'stopped') return;
    this.stateNow = 'draining';
    const batcher = this.loaded?.batcher;
    if (batcher !== undefined) {
      batcher.close();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, timeoutMs);
        function finish(): void {
          clearTimeout(timer);
          resolve();
        }
        this.endDrain = finish;
        if (batcher.idle) return finish();
        batcher.addObserver({ batchFinished: () => batcher.idle && finish(), requestFinished: () => batcher.idle && finish() });
      });
      batcher.abortAll('shutdown');
    }
    this.stateNow = 'stopped';
  }

  /** Stops waiting for the drain: what is still queued or running is answered 503 now. */
  endDrainNow(): void {
    this.endDrain();
  }

  private endDrain: () => void = () => {};

  stats(): ServerStats | undefined {
    const loaded = this.loaded;
    if (loaded === undefined) return undefined;
    const c = this.config;
    return {
      uptimeS: (this.clock.now() - this.startedAtMs) / 1000,
      state: this.stateNow,
      model: { version: loaded.model.version, inputs: loaded.model.inputs.map((s) => s.name), outputs: loaded.model.outputs.map((s) => s.name) },
      config: {
        maxBatchSize: c.maxBatchSize, batchWindowMs: c.batchWindowMs, maxQueueSize: c.maxQueueSize,
        requestTimeoutMs: c.requestTimeoutMs, instances: c.instances, modelLatencyMs: c.modelLatencyMs,
      },
      responsesByStatus: { ...this.responsesByStatus },
      snapshot: loaded.stats.snapshot(),
    };
  }
}
