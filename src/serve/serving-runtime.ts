import { SystemSharedMemory } from './system-shared-memory.js';
import type { Clock } from '../core/clock.js';
import { BatchlineError, shuttingDown } from '../errors.js';
import { asError } from '../message-text.js';
import type { ServedModel } from '../model/load-model.js';
import type { ModelVersionConfig, ServeConfig } from '../options/serve.js';
import { ModelVersion } from './model-version.js';
import { Registry } from './registry.js';
import type { StartupVersion } from './startup.js';
import type { ServerState, ServerStats, StatsAnswer } from '../stats-contract/server-stats.js';
import { ServeMetrics, type MeteredVersion } from './metrics.js';
import {
  addResponses,
  type AnswerCounters,
  countInto,
  noResponses,
  type ResponsesByTransport,
  TRANSPORTS,
  totalResponses,
} from './answer-counters.js';
import { HeldRefusals } from './retry-hold.js';
import { ConnectionRefusals, type Listener } from './connection-refusals.js';
import { Targets } from './target.js';
import { uncostableBatchSizeRefusal } from './item-batch-size.js';
import { versionKey, versionLine, versionWarningLines } from './version-log.js';

/**
 * The server's lifecycle (starting → ready → draining → stopped) and what lives with it: the
 * registry of model versions, the metrics, and the counts of answers that belong to no version
 * (a request naming no known model). Routes ask it whether to take work; shutdown asks it to
 * drain every version.
 */
export class ServingRuntime {
  private stateNow: ServerState = 'starting';
  private readinessWithdrawn = false;
  private drained: Promise<void> | undefined;
  private readonly startedAtMs: number;
  readonly registry: Registry;
  readonly metrics: ServeMetrics;
  /** Connections the listeners refused past --max-connections, for /metrics. */
  readonly connectionRefusals: ConnectionRefusals;
  /** 429s held until their Retry-After (retry-hold.ts): answered when the drain starts. */
  readonly heldRefusals = new HeldRefusals();
  /** Answers to inference requests that reached no model version (unknown model), by status. */
  readonly unattributed: AnswerCounters & { readonly responses: ResponsesByTransport };
  /**
   * The answers of the versions that left the registry, by transport and status: the server's
   * totals (/v1/stats, the JSON metrics) keep them, so that a total a client differences over
   * time never goes down, while the version's own entry and series leave.
   */
  private readonly retired = noResponses();
  /**
   * The removal of each version being deregistered: a second deregistration of the same version
   * (a Triton unload racing an admin DELETE, two unloads) waits for the first instead of retiring
   * it again, so its answers are kept once.
   */
  private readonly removals = new WeakMap<ModelVersion, Promise<void>>();
  /** Where a request goes: the one resolution of every route's and transport's target. */
  readonly targets: Targets;
  /** Triton's system shared memory regions, with `--allow-client-shm`. */
  readonly sharedMemory: SystemSharedMemory | undefined;

  constructor(
    readonly config: ServeConfig,
    private readonly clock: Clock,
    /**
     * The server's log of what changes while it serves: versions registered and removed (the
     * admin API, Triton's load and unload), instances that go down and come back.
     */
    readonly log: (line: string) => void = () => {},
  ) {
    this.startedAtMs = clock.now();
    this.registry = new Registry(config.defaultModel);
    const responses = noResponses();
    this.unattributed = {
      responses,
      countResponse: (status, transport) => countInto(responses, status, transport),
      countRejection: () => {},
    };
    this.connectionRefusals = new ConnectionRefusals(listenersOf(config));
    this.metrics = new ServeMetrics(
      () => this.registry.all().filter((v): v is ModelVersion & MeteredVersion => v.metrics !== undefined),
      config.grpcPort === undefined ? ['http'] : TRANSPORTS,
      () => responses,
      this.connectionRefusals.counts,
    );
    this.targets = new Targets(this);
    this.sharedMemory = config.allowClientShm ? new SystemSharedMemory() : undefined;
  }

  /** Seconds since the server started. */
  get uptimeS(): number {
    return (this.clock.now() - this.startedAtMs) / 1000;
  }

  get state(): ServerState {
    return this.stateNow;
  }

  /**
   * True from the moment the server announces it is going away (readiness withdrawn before a
   * drain, or the drain itself): /readyz answers 503 shutting_down.
   */
  get leaving(): boolean {
    return this.readinessWithdrawn || this.stateNow === 'draining' || this.stateNow === 'stopped';
  }

  /** /readyz turns 503 while requests are still served, so a load balancer stops sending first. */
  withdrawReadiness(): void {
    this.readinessWithdrawn = true;
  }

  /** The version /v1/infer serves (the default model's latest), once it has a batcher. */
  get defaultVersion(): ModelVersion | undefined {
    const name = this.registry.defaultModel;
    const version = name === undefined ? undefined : this.registry.resolve(name);
    return version?.batcher === undefined ? undefined : version;
  }

  /** A new version in the registry, loading (VERSION_EXISTS if it is there already). */
  createVersion(spec: StartupVersion): ModelVersion {
    // A registration's (or Triton's load's) ONNX file is refused as at start-up, before it loads.
    const refusal = uncostableBatchSizeRefusal(spec);
    if (refusal !== undefined) throw refusal;
    const version = new ModelVersion(
      spec.name,
      spec.version,
      spec.path,
      spec.config,
      {
        clock: this.clock,
        metrics: this.metrics,
        onStateChange: (changed) => this.registry.refresh(changed.name),
        log: this.log,
        ...(spec.functionName === undefined ? {} : { functionName: spec.functionName }),
        ...(spec.labelsPath === undefined ? {} : { labelsPath: spec.labelsPath }),
        ...(spec.parameters === undefined ? {} : { parameters: spec.parameters }),
      },
      spec.optionSources,
    );
    this.registry.add(version);
    return version;
  }

  /** Loads the start-up versions (all at once); the server is ready when every one is. */
  async loadStartup(specs: readonly StartupVersion[]): Promise<ModelVersion[]> {
    const versions = specs.map((spec) => this.createVersion(spec));
    await Promise.all(versions.map((version) => version.load()));
    if (this.stateNow === 'starting') this.stateNow = 'ready';
    return versions;
  }

  /**
   * Serves an already loaded model as a start-up version (`name` defaults to the model's own
   * version label) and starts taking work: for tests and embedders that load models themselves.
   */
  attach(model: ServedModel, name = model.version, version = 1): ModelVersion {
    const config = { ...this.config } as ModelVersionConfig;
    const created = this.createVersion({ name, version, path: undefined, config });
    this.registry.defaultModel ??= name;
    created.attach(model);
    if (this.stateNow === 'starting') this.stateNow = 'ready';
    return created;
  }

  /** True once the server drains (and after). */
  private get shuttingDown(): boolean {
    return this.stateNow === 'draining' || this.stateNow === 'stopped';
  }

  /**
   * Registers and loads a version at run time (the admin API). With `wait`, resolves once it is
   * ready; a load that fails removes it again and rejects with MODEL_LOAD_FAILED (nothing
   * serving is disturbed). Without, resolves at once; a failed load leaves it `unavailable`
   * with the reason, for the client polling it to read, until it is deregistered. A drain while
   * it loads (the server's: SHUTTING_DOWN; a DELETE's: VERSION_REMOVED) answers at once.
   * `logWarnings: false` leaves its settings' warnings to the caller, which loads several
   * versions and logs them together (`versionsWarningLines`), as start-up does.
   */
  async register(spec: StartupVersion, wait: boolean, { logWarnings = true } = {}): Promise<ModelVersion> {
    if (this.shuttingDown) throw shuttingDown();
    const version = this.createVersion(spec);
    const loading = version.load();
    this.log(
      `batchline serve: ${versionKey(spec.name, spec.version)} registered: loading ${spec.path ?? 'the embedded model'}`,
    );
    loading.then(
      () => {
        this.log(`batchline serve: ${versionLine(version, 'ready')}`);
        // Under the line that shows its max_queue_size and max_batch_size, as at start-up.
        if (logWarnings) for (const warning of versionWarningLines(version)) this.log(warning);
      },
      (error: unknown) =>
        this.log(
          // A removal (or the server's stop) that ends a load is no failure of the model's.
          version.loadStopped
            ? `batchline serve: ${versionKey(spec.name, spec.version)} load stopped: removed (or the server stopped) while it loaded`
            : `batchline serve: ${versionKey(spec.name, spec.version)} failed to load: ${asError(error).message}`,
        ),
    ); // without `wait`: shown as unavailable, with the reason
    if (!wait) return version;
    // A drain (the server's, or a DELETE's) does not wait for a load: the registration is answered
    // at once, and the version closes once loaded.
    const drained = await Promise.race([loading.then(() => false), version.draining.then(() => true)]).catch(
      async (error: unknown) => {
        this.retire(version);
        await version.close();
        throw error;
      },
    );
    if (!drained) return version;
    // Drained while it loaded: the server is shutting down, or a DELETE (which answered 201
    // "draining", for a version about to be removed) or Triton's unload of it came first.
    if (this.shuttingDown) throw shuttingDown();
    throw new BatchlineError(
      'VERSION_REMOVED',
      `${spec.name} version ${spec.version} (a DELETE or an unload of it came first)`,
    );
  }

  /**
   * Deregisters a version: it takes no new requests (the latest is re-resolved at once), its
   * queued and running ones are answered as in a graceful drain (up to --drain-timeout-ms),
   * then it leaves the registry and its sessions close. A version already being deregistered is
   * not removed again: the call resolves with that removal.
   */
  deregister(version: ModelVersion): Promise<void> {
    let removal = this.removals.get(version);
    if (removal === undefined) this.removals.set(version, (removal = this.remove(version)));
    return removal;
  }

  private async remove(version: ModelVersion): Promise<void> {
    const key = versionKey(version.name, version.version);
    // Requests, not the batcher's rows: a V1 request of 40 instances is one.
    const { queued, running } = version.requests.counts;
    this.log(
      `batchline serve: ${key} deregistered: draining ${queued} queued and ${running} running requests (up to ${this.config.drainTimeoutMs} ms)`,
    );
    await version.drain(this.config.drainTimeoutMs, 'removed');
    await version.loaded; // a version deregistered while it loads closes once loaded
    this.retire(version);
    await version.close();
    this.log(`batchline serve: ${key} removed`);
  }

  /**
   * Takes a version out of the registry; its answers stay in the server's totals. Only the call
   * that removes it keeps them: a version is retired once, whichever path gets there first.
   */
  private retire(version: ModelVersion): void {
    if (this.registry.remove(version)) addResponses(this.retired, version.responses);
  }

  /** True when /readyz answers 200: see `notReady`. */
  get ready(): boolean {
    return this.notReady() === undefined;
  }

  /**
   * Why the server is not ready (what /readyz, /v2/health/ready and gRPC's ServerReady and health
   * answer), or undefined when it is. Ready means: it takes work, its start-up versions have
   * loaded, and every version that has come up and is not being removed can take a batch now,
   * however it came (start-up, the admin API, Triton's load). A version counts from its first
   * `ready` until its removal starts (a DELETE, an unload): while it has no instance up it holds
   * readiness back, as a start-up one does. A version still loading after start-up, or whose load
   * failed (`"wait": false`), does not: its own `…/ready` answers 503, and taking the server out
   * of a load balancer would refuse every other model's requests without helping its own (a swap
   * of version 1 for 2 would take every replica out at once). Triton's strict readiness counts
   * those too, and its users met that (server#7014).
   */
  notReady(): BatchlineError | undefined {
    // Withdrawn before the drain (--drain-delay-ms): requests are still taken, and it says so.
    if (this.readinessWithdrawn && this.stateNow !== 'draining' && this.stateNow !== 'stopped')
      return shuttingDown(
        'requests are still served until the drain starts (--drain-delay-ms); send new ones elsewhere',
      );
    if (this.leaving) return shuttingDown();
    if (this.stateNow === 'starting') return new BatchlineError('NOT_READY', 'the model is loading');
    const down = this.registry.all().filter((version) => version.state === 'ready' && !version.acceptsWork);
    if (down.length === 0) return undefined;
    return new BatchlineError(
      'NOT_READY',
      // "m version 2 is unavailable: no healthy model instance (restarting)": the reason is a phrase of its own.
      down
        .map((version) => {
          const { state, reason } = version.status;
          return `${versionName(version)} is ${state}${reason === undefined ? '' : `: ${reason}`}`;
        })
        .join('; '),
    );
  }

  /**
   * Stops admitting, lets every version's queued and running requests finish for up to
   * `timeoutMs` (or until `endDrainNow()`), then answers whatever is left with `shutdown`
   * (HTTP 503). Resolves when every request has its answer; a second call waits for the same drain.
   */
  drain(timeoutMs: number): Promise<void> {
    // Every listener (HTTP, gRPC) waits for the one drain.
    this.drained ??= this.drainVersions(timeoutMs);
    return this.drained;
  }

  private async drainVersions(timeoutMs: number): Promise<void> {
    this.stateNow = 'draining';
    this.heldRefusals.releaseAll();
    await Promise.all(this.registry.all().map((version) => version.drain(timeoutMs)));
    this.stateNow = 'stopped';
  }

  /** Stops waiting for the drain: what is still queued or running is answered 503 now. */
  endDrainNow(): void {
    for (const version of this.registry.all()) version.endDrainNow();
  }

  /** Closes every version's model (after the drain). */
  async closeModels(): Promise<void> {
    await Promise.all(this.registry.all().map((version) => version.close()));
  }

  /** The default model's stats and every version's; undefined while no version has a batcher. */
  stats(): ServerStats | undefined {
    const models = this.registry.all().flatMap((version) => version.statsEntry() ?? []);
    const main = this.defaultVersion?.statsEntry() ?? models[0];
    if (main === undefined) return undefined;
    const { uptimeS, state, responsesByStatus, responsesByProtocol, ...named } = this.serverFigures();
    return {
      uptimeS,
      state,
      model: main.model,
      config: main.config,
      responsesByStatus,
      responsesByProtocol,
      snapshot: main.snapshot,
      ...named,
      models,
    };
  }

  /**
   * What GET /v1/stats answers: `stats()`, or the server's own figures and totals with no
   * models while it serves none after its start (every version removed, or the one registered
   * still loading); undefined while its start-up models load.
   */
  statsAnswer(): StatsAnswer | undefined {
    return this.stats() ?? (this.stateNow === 'starting' ? undefined : { ...this.serverFigures(), models: [] });
  }

  /**
   * The server's inference answers since it started, by status: those of every version (loading
   * ones' and removed ones' too) and those that reached none. Unlike `statsAnswer()`, also while
   * the start-up models load.
   */
  answersByStatus(): Record<string, number> {
    return this.serverFigures().responsesByStatus;
  }

  /** The server's state and its answers since it started, whatever it serves. */
  private serverFigures(): Pick<
    ServerStats,
    'uptimeS' | 'state' | 'responsesByStatus' | 'responsesByProtocol' | 'defaultModel'
  > {
    // Every version's answers (loading ones' too, and those of versions gone) and those that reached none.
    const byProtocol = noResponses();
    for (const source of [this.unattributed.responses, this.retired, ...this.registry.all().map((v) => v.responses)])
      addResponses(byProtocol, source);
    return {
      uptimeS: this.uptimeS,
      state: this.stateNow,
      responsesByStatus: totalResponses(byProtocol),
      responsesByProtocol: byProtocol,
      ...(this.registry.defaultModel === undefined ? {} : { defaultModel: this.registry.defaultModel }),
    };
  }
}

/** `cls version 2`, as readiness's reasons name a version. */
function versionName(version: ModelVersion): string {
  return `${version.name} version ${version.version}`;
}

/** The listeners a server with `config` opens: HTTP, the admin API's own (--admin-port), gRPC (--grpc-port). */
function listenersOf(config: ServeConfig): Listener[] {
  const listeners: Listener[] = ['http'];
  if (config.adminToken !== undefined && config.adminPort !== 0) listeners.push('admin');
  if (config.grpcPort !== undefined) listeners.push('grpc');
  return listeners;
}
