import { isCodeModelPath } from '../model/code-model.js';
import { basename } from 'node:path';
import { BatcherStats } from '../core/batcher-stats.js';
import type { Clock } from '../core/clock.js';
import { createBatcher } from '../core/create-batcher.js';
import { asError } from '../message-text.js';
import { loadModel, type ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import type { ModelVersionConfig } from '../options/serve.js';
import type { Batcher } from '../core/batcher.js';
import type { ServeMetrics } from './metrics.js';
import type { VersionMetrics } from './version-metrics.js';
import { type AnswerCounters, countInto, noResponses, totalResponses, type Transport } from './answer-counters.js';
import { ModelExecutor } from './model-executor.js';
import { versionMailbox } from './version-mailbox.js';
import { InferenceStatistics } from './inference-statistics.js';
import { readLatencyProfile } from '../profile/latency-profile.js';
import { readModelLatencyProfile } from './model-config.js';
import { warmUp, warmupDimsRefusal, warmupStuckLimit } from './warmup.js';
import { VersionLiveChange } from './version-live-change.js';
import { loadedSettingsRefusal } from './item-batch-size.js';
import { breakerEventLine, instanceEventLine, type OptionSources } from './version-log.js';
import { RequestsInFlight } from './requests-in-flight.js';
import type { ModelVersionState, ModelVersionStats, ServedSnapshot } from '../stats-contract/server-stats.js';
import { servedOutcomes } from '../stats-contract/served-outcomes.js';

export type ModelBatcher = Batcher<ItemTensors, ItemTensors>;

/** What a model version needs from the server it lives in. */
export interface ModelVersionDeps {
  clock: Clock;
  metrics: ServeMetrics;
  /** Told whenever the version's state changes (the registry re-resolves "latest"). */
  onStateChange(version: ModelVersion): void;
  /** A code model's export that runs a batch, when not `execute`. */
  functionName?: string;
  /** The class labels file config.json's `label_filename` names (default: `model.labels.txt` beside the model, if there). */
  labelsPath?: string;
  /** Its config.json's `parameters`, told to a code model's `initialize` as `config.parameters`. */
  parameters?: Record<string, unknown>;
  /** Where its instances' crashes, stalls and restarts are told (the server's log). */
  log?(line: string): void;
}

/**
 * One loaded version of one model, isolated from every other: its own model instances,
 * executor, batcher (built by the core's `createBatcher` from its own options), limits, stats,
 * metrics and response counts. Overload, a stall or a failure of one version never delays or
 * refuses another's requests.
 *
 * Lifecycle: `loading` → `ready` → `draining` → (removed); a load that fails ends in
 * `unavailable` with the reason. A version whose model reports an instance down is shown as
 * `unavailable` while that lasts (its own health, not a copy of it).
 */
export class ModelVersion implements AnswerCounters {
  private stateNow: ModelVersionState = 'loading';
  private failure: string | undefined;
  private endDrain: () => void = () => {};
  private drainStarted!: () => void;
  /** Resolves when the version starts draining (a DELETE, or the server's drain), whatever its state. */
  readonly draining = new Promise<void>((resolve) => (this.drainStarted = resolve));
  model!: ServedModel;
  batcher!: ModelBatcher;
  stats!: BatcherStats<ItemTensors, ItemTensors>;
  metrics: VersionMetrics<ItemTensors, ItemTensors> | undefined;
  /** Triton's statistics of this version (its statistics extension), once it has a batcher. */
  statistics: InferenceStatistics<ItemTensors, ItemTensors> | undefined;
  /** Inference answers for this version by transport and HTTP status, since it was registered. */
  readonly responses = noResponses();
  /** Its admitted requests as requests (the batcher counts their rows): the drain's log lines. */
  readonly requests = new RequestsInFlight();
  readonly requestTimeoutMs: number;
  /** How long the warmup took (ms), once it ran; undefined without one. */
  warmupMs: number | undefined;
  /** What the online latency model starts from: the fit of `--latency-profile`, when given. */
  private latencyPrior: { aMs: number; bMs: number } | undefined;

  constructor(
    readonly name: string,
    readonly version: number,
    /** The ONNX file or code model, or undefined for the embedded toy model. */
    readonly path: string | undefined,
    /** Its options; `reconfigure` replaces the live ones (instances, max_batch_size, batch_window_ms, target_latency_ms). */
    public config: ModelVersionConfig,
    private readonly deps: ModelVersionDeps,
    /** Where its own options were written (a config.json, a registration, a PATCH), for the log's words. */
    public optionSources: OptionSources = {},
  ) {
    this.requestTimeoutMs = config.requestTimeoutMs;
  }

  /** Triton's `label_filename` of its outputs: the labels file config.json names, or undefined. */
  get labelFilename(): string | undefined {
    return this.deps.labelsPath === undefined ? undefined : basename(this.deps.labelsPath);
  }

  /** A code model's export that runs its batches, when not `execute` (config.json's or a registration's `function`). */
  get functionName(): string | undefined {
    // A model's config.json names it for all its versions: an ONNX version has no export to run.
    return isCodeModelPath(this.path) ? this.deps.functionName : undefined;
  }

  /** Its config.json's (or registration's) `parameters`, the model author's own values ({} when none). */
  get parameters(): Readonly<Record<string, unknown>> {
    return this.deps.parameters ?? {};
  }

  /** The served model's own version label (`toy-logistic-v1`, or this version's number). */
  get modelVersionLabel(): string {
    return this.model.version;
  }

  get state(): ModelVersionState {
    return this.stateNow;
  }

  /** The state as shown to clients: a ready version none of whose instances can take a batch is unavailable. */
  get status(): { state: ModelVersionState; reason?: string } {
    if (this.stateNow === 'ready' && !this.model.ready)
      return { state: 'unavailable', reason: this.model.health().reason ?? 'no healthy model instance' };
    return this.failure === undefined ? { state: this.stateNow } : { state: this.stateNow, reason: this.failure };
  }

  /**
   * True when the version takes new requests: it is ready and some model instance can take a
   * batch (with every instance restarting or stuck, requests are refused 503 at once rather
   * than answered 504 at their deadline, and "latest" falls back to another version). What
   * /readyz and `…/ready` report.
   */
  get acceptsWork(): boolean {
    return this.stateNow === 'ready' && this.model.ready;
  }

  /** False when a model instance cannot come back by itself: /healthz answers 503. */
  get live(): boolean {
    return this.stateNow !== 'ready' || this.model.health().live;
  }

  /** The load in progress or done (undefined before `load()`); never rejects. */
  loaded: Promise<void> | undefined;

  /** Aborted by a drain that starts while the version loads: see `drain`. */
  private readonly stopLoading = new AbortController();

  /** A drain (a removal, the server's stop) came while it loaded: a load that ends so did not fail. */
  get loadStopped(): boolean {
    return this.stopLoading.signal.aborted;
  }

  /** Loads the model file (or the embedded model) with this version's options; the version is then ready. */
  load(): Promise<void> {
    const loading = this.loadModel();
    this.loaded = loading.catch(() => {});
    return loading;
  }

  private async loadModel(): Promise<void> {
    const c = this.config;
    try {
      if (c.latencyProfile !== undefined) {
        // Named where it was given: a config.json's field, or the flag.
        const source = this.optionSources.latencyProfile;
        const { fit } =
          source === undefined
            ? await readLatencyProfile(c.latencyProfile)
            : await readModelLatencyProfile(c.latencyProfile, `${source.source}: ${source.name}`);
        this.latencyPrior = { aMs: fit.a_ms, bMs: fit.b_ms };
      }
      const model = await loadModel(this.path, {
        instances: c.instances,
        intraOpThreads: c.intraOpThreads,
        executionProvider: c.executionProvider,
        execution: c.execution,
        ...(this.path === undefined ? {} : { name: this.name, version: String(this.version) }),
        // A code model's initialize is told its version's options and its author's parameters
        // (plain data: it may run in another process).
        config: JSON.parse(JSON.stringify({ ...c, parameters: this.deps.parameters ?? {} })) as Record<string, unknown>,
        ...(this.functionName === undefined ? {} : { functionName: this.functionName }),
        ...(this.deps.labelsPath === undefined ? {} : { labelsPath: this.deps.labelsPath }),
        loadSignal: this.stopLoading.signal,
      });
      // Only the loaded module says whether the version batches by cost, and so which settings it takes.
      const refusal =
        loadedSettingsRefusal(c, this.optionSources, model.itemCost !== undefined) ??
        warmupDimsRefusal(model.inputs, c, this.optionSources);
      if (refusal !== undefined) {
        await model.close();
        throw refusal;
      }
      if (c.warmupBatchSizes !== undefined) {
        // Not ready (nor admitting) until every instance has run its warmup batches.
        try {
          this.warmupMs = await warmUp(
            model,
            {
              batchSizes: c.warmupBatchSizes,
              count: c.warmupCount,
              stuck: warmupStuckLimit(c, this.optionSources),
              data: c.warmupData,
              dims: c.warmupDims,
              instances: c.instances,
              maxBatchSize: c.maxBatchSize,
            },
            () => this.deps.clock.now(),
          );
        } catch (error) {
          await model.close();
          throw error;
        }
      }
      this.attach(model);
      // A restarted instance is warmed as an added one is, with the warmup it would get now.
      model.warmRestarts?.((index, run) => this.liveChange.instanceWarmup()?.(index, run) ?? Promise.resolve());
    } catch (error) {
      this.failure = asError(error).message;
      this.setState('unavailable');
      throw error;
    }
  }

  /** Builds the executor, batcher, stats and metrics over a loaded model and takes work. */
  attach(model: ServedModel): void {
    this.model = model;
    const { mailbox, inlineMailbox } = versionMailbox(model, this.config);
    const executor = new ModelExecutor(model, this.deps.clock, {
      modelLatencyMs: this.config.modelLatencyMs,
      stuckBatchFactor: this.config.stuckBatchFactor,
      answersAfterRuns: inlineMailbox > 0,
    });
    const batcher = createBatcher(
      {
        ...this.config,
        latencyPrior: this.latencyPrior,
        mailbox,
        ...(model.itemCost !== undefined ? { itemCosts: true } : {}),
      },
      this.deps.clock,
      executor,
    );
    this.batcher = batcher;
    // The batcher is the one scheduler of the instances: it runs batches only on those that are up.
    // "Latest" follows too: while none is up, the model's next version that has one answers.
    // The log says what happened, and why.
    const log = this.deps.log;
    model.watchInstances?.((event) => {
      // A finalize's failure comes from a closed instance: a line of the log, no change of state.
      if (event.kind !== 'finalize_failed') {
        batcher.setInstanceUp(event.index, event.kind === 'up');
        if (this.stateNow === 'ready') this.deps.onStateChange(this);
      }
      if (event.kind === 'stuck') this.liveChange.stopWaitingForStuck(event.index);
      log?.(instanceEventLine(this.name, this.version, event));
    });
    // A slot retired by `reconfigure` (fewer instances) has ended its batches: its instance stops.
    batcher.addObserver({
      instanceRetired: (index) => {
        const stopped = model.retireInstance?.(index) ?? Promise.resolve();
        // Closing never rejects (a finalize's failure is a log line); were it to, the PATCH still answers.
        void stopped.then(undefined, () => {}).then(() => this.liveChange.instanceStopped(index));
      },
    });
    if (log !== undefined)
      batcher.addObserver({
        breakerChanged: (state) => log(breakerEventLine(this.name, this.version, state, this.config.breakerOpenMs)),
      });
    this.stats = new BatcherStats(this.batcher, this.deps.clock, this.config.maxBatchSize);
    this.metrics = this.deps.metrics.forVersion(this.batcher, this.config.maxBatchSize, {
      model: this.name,
      version: String(this.version),
    });
    // Triton's view of the answers' times is Prometheus' record of them, not a second sum.
    this.statistics = new InferenceStatistics(this.metrics.histograms.requestDuration);
    batcher.addObserver(this.statistics);
    // Deregistered while it loaded: it stays draining, and its remover closes it.
    if (this.stateNow === 'loading') this.setState('ready');
  }

  /** Its instances and batching settings changed while it runs (the admin API's PATCH). */
  private readonly liveChange = new VersionLiveChange(this);

  /**
   * Changes what a running version can change without a new version (the admin API's PATCH,
   * TorchServe's `PUT /models/{name}?min_worker=N`): see VersionLiveChange.change. Refused (409)
   * unless the version is ready and no other change of its instances is under way.
   */
  reconfigure(
    changes: Partial<Pick<ModelVersionConfig, 'instances' | 'maxBatchSize' | 'batchWindowMs' | 'targetLatencyMs'>>,
  ): Promise<void> {
    return this.liveChange.change(changes);
  }

  countResponse(status: number, transport: Transport): void {
    countInto(this.responses, status, transport);
  }

  /** Inference answers for this version by HTTP status, every transport together. */
  get responsesByStatus(): Record<string, number> {
    return totalResponses(this.responses);
  }

  countOutputTooLarge(): void {
    if (this.metrics !== undefined) this.metrics.outputsTooLarge++;
  }

  countRejection(reason: string): void {
    this.metrics?.reject(reason);
  }

  /**
   * The server's drain in small: stops taking requests, lets queued and running ones finish
   * for up to `timeoutMs` (or until `endDrainNow()`), then answers what is left with
   * `shutdown` (503). Resolves when every request of this version has its answer.
   */
  drain(timeoutMs: number, why: 'removed' | 'stopping' = 'stopping'): Promise<void> {
    if (this.drainDone === undefined) {
      this.drainedBecause = why;
      this.drainDone = this.drainOnce(timeoutMs);
      return this.drainDone;
    }
    // A second drain (a DELETE or an unload during the server's own, or the server's during a
    // DELETE's) waits for the one under way, no longer than its own limit: it returned at once,
    // and its remover closed the model under requests still being answered.
    const timer = setTimeout(() => this.endDrain(), timeoutMs);
    return this.drainDone.finally(() => clearTimeout(timer));
  }

  private drainDone: Promise<void> | undefined;

  /** Why its drain began: a removal (DELETE, Triton's unload) or the server's stop; the answer to what it cut short says which. */
  drainedBecause: 'removed' | 'stopping' | undefined;

  private async drainOnce(timeoutMs: number): Promise<void> {
    this.drainStarted();
    if (this.stateNow !== 'ready') {
      if (this.stateNow === 'loading') {
        this.setState('draining');
        // Instances in processes are killed: a load that may never end (an initialize that never
        // settles) would hold the removal, and the server's stop, for ever. Threads load on.
        this.stopLoading.abort();
      }
      return;
    }
    this.setState('draining');
    const batcher = this.batcher;
    batcher.close();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(finish, timeoutMs);
      function finish(): void {
        clearTimeout(timer);
        resolve();
      }
      this.endDrain = finish;
      if (batcher.idle) return finish();
      batcher.addObserver({
        batchFinished: () => batcher.idle && finish(),
        requestFinished: () => batcher.idle && finish(),
      });
    });
    batcher.abortAll('shutdown');
  }

  /** Stops waiting for the drain: what is still queued or running is answered 503 now. */
  endDrainNow(): void {
    this.endDrain();
  }

  /**
   * Closes the model's sessions and stops exporting this version's metrics; a version still
   * loading closes once its load ends (a thread inside onnxruntime cannot be stopped, and a
   * process that exits under it aborts).
   */
  async close(): Promise<void> {
    await this.loaded;
    this.liveChange.answerWaiting();
    if (this.metrics !== undefined) this.deps.metrics.removeVersion(this.metrics);
    await this.model?.close();
  }

  /** This version in `/v1/stats` (once it has a batcher). */
  statsEntry(): ModelVersionStats | undefined {
    if (this.batcher === undefined) return undefined;
    const c = this.config;
    return {
      name: this.name,
      version: this.version,
      ...this.status,
      model: {
        version: this.model.version,
        inputs: this.model.inputs.map((s) => s.name),
        outputs: this.model.outputs.map((s) => s.name),
      },
      config: {
        maxBatchSize: c.maxBatchSize,
        batchWindowMs: c.batchWindowMs,
        maxQueueSize: c.maxQueueSize,
        requestTimeoutMs: c.requestTimeoutMs,
        instances: c.instances,
        modelLatencyMs: c.modelLatencyMs.aMs,
        modelLatencyPerItemMs: c.modelLatencyMs.bMs,
        batchPolicy: c.batchPolicy,
        targetLatencyMs: c.targetLatencyMs,
        admission: c.admission,
        isolation: c.isolation,
      },
      responsesByStatus: this.responsesByStatus,
      responsesByProtocol: { http: { ...this.responses.http }, grpc: { ...this.responses.grpc } },
      requestsInFlight: this.requests.counts,
      snapshot: this.snapshot(),
    };
  }

  /** Its batcher's snapshot, the outcomes split as `batchline_requests_total` splits them. */
  private snapshot(): ServedSnapshot {
    const snapshot = this.stats.snapshot();
    const outcomes = servedOutcomes(snapshot.counts.outcomes, this.metrics?.clientErrors ?? 0);
    return { ...snapshot, counts: { ...snapshot.counts, outcomes } };
  }

  private setState(state: ModelVersionState): void {
    this.stateNow = state;
    this.deps.onStateChange(this);
  }
}
